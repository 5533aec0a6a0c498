"""structlog setup: human-readable on a terminal, JSON lines otherwise, secrets redacted everywhere.

Library logs (stdlib `logging`: nio, aiohttp, agno, ...) go through the same processors and renderer,
so every line of the process has one format and passes the redaction. Lines logged inside a turn
carry the `agent`, `room_id` and `correlation_id` the pipeline binds with structlog's contextvars.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any, TextIO

import structlog

__all__ = [
    "configure_logging",
    "get_logger",
    "redact_secrets",
    "redact_text",
    "register_secret_env",
    "register_secret_values",
    "wants_json",
]

_SECRET_KEYS = re.compile(r"(token|secret|password|passwd|api_key|apikey|authorization|cookie)", re.IGNORECASE)
_NOT_SECRET_KEYS = frozenset({"event", "logger", "level", "timestamp", "log_level"})
_SECRET_VALUES = re.compile(
    r"(syt_[A-Za-z0-9_=-]{8,}|sk-ant-[A-Za-z0-9_-]{12,}|sk-[A-Za-z0-9_-]{12,}|(?i:bearer)\s+[A-Za-z0-9._~+/=-]{12,}"
    r"|(?i:access_token)=[^&\s\"']+)"
)
_REDACTED = "[redacted]"
_MIN_REGISTERED_LENGTH = 6
_OWN_HANDLER_LOGGERS = ("agno", "agno-team", "agno-workflow")
_QUIET_LIBRARY_LOGGERS = {"nio.responses": logging.ERROR, "nio.rooms": logging.WARNING, "peewee": logging.WARNING}

_registered_lock = threading.Lock()
_write_lock = threading.Lock()
_registered: frozenset[str] = frozenset()


def register_secret_values(values: Iterable[str | None]) -> None:
    """Scrub these exact strings (API keys, passwords, shared secrets) from every log line from now on."""
    global _registered
    fresh = {value for value in values if value and len(value) >= _MIN_REGISTERED_LENGTH}
    with _registered_lock:
        _registered = _registered | fresh


def register_secret_env(env: Mapping[str, str]) -> None:
    """Register the values of environment variables named like secrets (`*_API_KEY`, `*_SECRET`, ...)."""
    register_secret_values(value for key, value in env.items() if _SECRET_KEYS.search(key))


def redact_text(text: str) -> str:
    """`text` with token-shaped and registered secret strings replaced by `[redacted]`."""
    text = _SECRET_VALUES.sub(_REDACTED, text)
    for value in _registered:
        if value in text:
            text = text.replace(value, _REDACTED)
    return text


def _redact_value(value: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if depth >= 4:
        return value
    if isinstance(value, dict):
        return {key: _redact_field(str(key), item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_redact_value(item, depth + 1) for item in value)
    return value


def _redact_field(key: str, value: Any, depth: int) -> Any:
    if key not in _NOT_SECRET_KEYS and _SECRET_KEYS.search(key) and value not in (None, "", False):
        return _REDACTED
    return _redact_value(value, depth)


def redact_secrets(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """structlog processor: blank fields named like secrets and scrub token-shaped or registered strings."""
    for key, value in list(event_dict.items()):
        event_dict[key] = _redact_field(key, value, 0)
    return event_dict


def _add_logger_name(logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    name = getattr(logger, "name", None)
    if name and "logger" not in event_dict:
        event_dict["logger"] = name
    return event_dict


class _StderrLogger:
    """A print logger that knows its module name and writes to the current `sys.stderr`.

    Resolving `sys.stderr` at each write lets a rich progress display redirect it.
    """

    def __init__(self, name: str | None = None) -> None:
        self.name = name

    def msg(self, message: str) -> None:
        """Write one rendered line."""
        with _write_lock:
            stream: TextIO = sys.stderr
            stream.write(message + "\n")
            stream.flush()

    log = debug = info = warn = warning = msg
    fatal = failure = err = error = critical = exception = msg


def _logger_factory(*args: Any) -> _StderrLogger:
    return _StderrLogger(str(args[0]) if args and args[0] else None)


def wants_json(json: bool | None = None) -> bool:
    """JSON lines unless told otherwise or stderr is a terminal."""
    return (not sys.stderr.isatty()) if json is None else json


def configure_logging(level: str = "INFO", *, json: bool | None = None) -> None:
    """Configure structlog and stdlib logging (which libraries use) for the whole process."""
    use_json = wants_json(json)
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.INFO
    renderer: Any = (
        structlog.processors.JSONRenderer(default=str)
        if use_json
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        # Tracebacks are rendered before redaction so secrets inside exception texts are scrubbed too.
        structlog.processors.format_exc_info,
        redact_secrets,
    ]
    structlog.configure(
        processors=[*shared[:2], _add_logger_name, *shared[2:], renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=_logger_factory,
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(_CurrentStderr())
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    library_level = max(numeric, logging.WARNING)
    handler.setLevel(library_level)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(library_level)
    for name, quiet in _QUIET_LIBRARY_LOGGERS.items():
        logging.getLogger(name).setLevel(max(quiet, numeric))
    _adopt_own_handler_loggers()


def _adopt_own_handler_loggers() -> None:
    """Libraries that print through their own handlers (agno's rich console) log through ours instead.

    Only loggers that exist already are touched, so call `configure_logging` after importing them.
    """
    existing = logging.Logger.manager.loggerDict
    for name in _OWN_HANDLER_LOGGERS:
        library_logger = existing.get(name)
        if isinstance(library_logger, logging.Logger):
            library_logger.handlers.clear()
            library_logger.propagate = True


class _CurrentStderr:
    """A stream that forwards to whatever `sys.stderr` is at the time of writing."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def get_logger(name: str | None = None, **bindings: Any) -> Any:
    """A structlog logger bound with the module name (`logger = get_logger(__name__)`)."""
    logger = structlog.get_logger(name)
    return logger.bind(**bindings) if bindings else logger
