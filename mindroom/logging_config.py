"""structlog setup: human-readable on a terminal, JSON lines otherwise, secrets redacted everywhere.

Library logs (stdlib `logging`: nio, aiohttp, agno, ...) go through the same processors and renderer,
so every line of the process has one format and passes the redaction. Lines logged inside a turn
carry the `agent`, `room_id` and `correlation_id` the pipeline binds with structlog's contextvars.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import sys
import threading
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any, TextIO

from mindroom.hidden_imports import hidden_while_importing

# structlog would load Twisted's logging (installed with the embedded homeserver) and rich's traceback printer
# with pygments; tracebacks here are plain text, formatted before redaction (`format_exc_info`), so neither runs.
with hidden_while_importing("twisted", "rich"):
    import structlog

__all__ = [
    "configure_logging",
    "debug_enabled",
    "get_logger",
    "redact_message",
    "redact_secrets",
    "redact_text",
    "redact_value",
    "register_secret_env",
    "register_secret_values",
    "secrets_generation",
    "wants_json",
]

# A field named `key`, or with a name ending in `_key`/`-key`/`.key`, holds a secret; `monkey` does not.
_SECRET_KEYS = re.compile(
    r"(token|secret|password|passwd|api_?key|authorization|cookie|credential|private_key)|(?:^|[_.-])key$",
    re.IGNORECASE,
)
# Environment names whose values are secrets wherever they show up later (`*_KEY`, `*_PASS`, `*TOKEN*`, ...).
_SECRET_ENV = re.compile(
    r"(_KEY|_PASS)$|PASSWORD|PASSWD|CREDENTIAL|TOKEN|SECRET|API_?KEY|AUTHORIZATION|COOKIE", re.IGNORECASE
)
_NOT_SECRET_KEYS = frozenset({"event", "logger", "level", "timestamp", "log_level"})
_REDACTED = "[redacted]"
_NOT_ALREADY = r"(?!\[redacted\])"
_BASE58 = "[1-9A-HJ-NP-Za-km-z]"
_TOKEN = r"[A-Za-z0-9._~+/=-]{12,}"
# Secrets known by their shape, in one pattern: Matrix access tokens, provider keys (`sk-`), GitHub tokens,
# JWTs, bearer credentials, AWS access key ids, recovery keys (`EsT… ` + 11 groups of 4 base58 characters,
# see `mindroom.matrix.crypto.recovery_key`) and the credentials in `scheme://user:password@host`. Every branch
# starts with a literal that is rare in prose (what comes before it is checked behind), so the scan hops
# from one such character to the next instead of trying each branch at every position; the empty group
# names the branch, and `_SHAPE_START` how far before the match its secret starts.
_SHAPES = re.compile(
    r"_(?<=syt_)(?P<syt>)[A-Za-z0-9_=-]{8,}"
    r"|_(?<=\bgh[pousr]_)(?P<gh>)[A-Za-z0-9]{20,}"
    r"|_(?<=\bgithub_)(?P<github>)pat_[A-Za-z0-9_]{20,}"
    r"|-(?<=sk-)(?<![A-Za-z0-9]sk-)(?P<sk>)[A-Za-z0-9_-]{12,}"
    r"|J(?<=\beyJ)(?P<jwt>)[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    rf"|bearer\s+{_TOKEN}|Bearer\s+{_TOKEN}|BEARER\s+{_TOKEN}"
    r"|A(?<![A-Za-z0-9_]A)(?:KIA|SIA)[A-Z0-9]{16}\b"
    rf"|E(?<![A-Za-z0-9]E)s[STU]{_BASE58}(?:\s?{_BASE58}{{4}}){{11}}(?![A-Za-z0-9])"
    r"|:(?<=[A-Za-z0-9+.-]:)(?P<url>)//[^\s/?#@\"'<>]{1,512}@"
)
_SHAPE_START = {"syt": 3, "gh": 3, "github": 6, "sk": 2, "jwt": 2}
# Applied after the shapes, in order; each keeps what names the secret (header or key) and blanks the secret.
# Quantifiers are bounded and keys start after a separator, so a long line costs linear time.
_TEXT_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    # Authorization headers, any scheme: `Authorization: Basic dXNlcjpwYXNz`.
    (
        re.compile(
            r"(?i)\b((?:proxy-)?authorization|x-api-key|x-auth-token)([\"']?\s*[:=]\s*[\"']?)"
            + _NOT_ALREADY
            + r"(?:(?:bearer|basic|digest|token|negotiate)\s+)?[^\s\"',;&]+"
        ),
        rf"\1\2{_REDACTED}",
    ),
    (re.compile(r"(?i)\b((?:set-)?cookie)(\s*:\s*)" + _NOT_ALREADY + r"[^\r\n\"']+"), rf"\1\2{_REDACTED}"),
    # `password=...`, `"api_key": "..."`, `?access_token=...`, `DB_PASS=...`: key-value pairs named like secrets.
    (
        re.compile(
            r"(?i)(?<![\w.-])([\w.-]{0,48}(?:token(?!s)|secret|password|passwd|api_?key|credential|private_key|_pass)[\w.-]{0,48})"
            r"([\"']?\s*[=:]\s*[\"']?)" + _NOT_ALREADY + r"[^\s\"'&,;})\]]+"
        ),
        rf"\1\2{_REDACTED}",
    ),
    # `key=...`, `"key": "..."`, `signing_key=...`: `key` as the whole name or its last part; `monkey=` is kept.
    (
        re.compile(
            r"(?i)(?<![\w.-])((?:[\w.-]{0,48}[_.-])?key)([\"']?\s*[=:]\s*[\"']?)" + _NOT_ALREADY + r"[^\s\"'&,;})\]]+"
        ),
        rf"\1\2{_REDACTED}",
    ),
    (re.compile(r"(?i)([?&;](?:key|sig|signature|auth)=)" + _NOT_ALREADY + r"[^&\s\"'#]+"), rf"\1{_REDACTED}"),
)
_MIN_REGISTERED_LENGTH = 6
# Deeper than this, a value is replaced whole: walking further costs time, and passing it unread could leak.
_MAX_DEPTH = 8
_PLAIN_TYPES = (bool, int, float, type(None))
_OWN_HANDLER_LOGGERS = ("agno", "agno-team", "agno-workflow")
_QUIET_LIBRARY_LOGGERS = {"nio.responses": logging.ERROR, "nio.rooms": logging.WARNING, "peewee": logging.WARNING}

_registered_lock = threading.Lock()
_write_lock = threading.Lock()
_registered: tuple[str, ...] = ()
"""Longest first: a registered value inside a longer one must not cut the longer one in two."""
_generation = 0


def register_secret_values(values: Iterable[str | None]) -> None:
    """Scrub these exact strings (API keys, passwords, shared secrets) from every log line, and from what people
    write before it is kept or sent to a model, from now on."""
    global _registered, _generation
    fresh = {value for value in values if value and len(value) >= _MIN_REGISTERED_LENGTH}
    with _registered_lock:
        if not fresh <= set(_registered):
            _registered = tuple(sorted(fresh.union(_registered), key=len, reverse=True))
            _generation += 1


def secrets_generation() -> int:
    """A number that changes whenever a new secret is registered: a cache of redacted texts is stale then."""
    return _generation


def register_secret_env(env: Mapping[str, str]) -> None:
    """Register the values of environment variables named like secrets (`*_KEY`, `*_PASS`, `*TOKEN*`, ...)."""
    register_secret_values(value for key, value in env.items() if _SECRET_ENV.search(key))


def redact_message(text: str) -> str:
    """`text` a person wrote, as it may be kept or sent to a model: registered secrets and credential shapes
    (tokens, provider and AWS keys, recovery keys, URL credentials) replaced; words after `password=` stay."""
    # Registered values first: a shape could otherwise cut one in two and leave a half behind.
    for value in _registered:
        if value in text:
            text = text.replace(value, _REDACTED)
    pieces: list[str] = []
    last = 0
    for match in _SHAPES.finditer(text):
        branch = match.lastgroup
        if branch == "url":  # the scheme and the host stay
            pieces += (text[last : match.start()], f"://{_REDACTED}@")
        else:
            pieces += (text[last : max(last, match.start() - _SHAPE_START.get(branch or "", 0))], _REDACTED)
        last = match.end()
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


def redact_text(text: str) -> str:
    """`text` with registered secrets, token shapes, URL credentials and secret-named values replaced."""
    text = redact_message(text)
    for pattern, replacement in _TEXT_RULES:
        text = pattern.sub(replacement, text)
    return text


def redact_value(value: Any) -> Any:
    """A copy of `value` safe to write out: strings redacted, containers and dataclasses walked, exceptions as text.

    Fields named like secrets are blanked whatever they hold; anything nested deeper than the cap is
    replaced whole; other objects keep their type unless their text holds a secret.
    """
    return _redact_value(value, 0)


def _redact_value(value: Any, depth: int) -> Any:
    if isinstance(value, _PLAIN_TYPES):
        return value
    if isinstance(value, str):
        return redact_text(value)
    if depth >= _MAX_DEPTH:
        return _REDACTED
    if isinstance(value, BaseException):
        return _redact_exception(value, depth)
    if isinstance(value, bytes | bytearray):
        return redact_text(bytes(value).decode("utf-8", errors="replace"))
    if isinstance(value, Mapping):
        return {_redact_key(key): _redact_field(str(key), item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        items = [_redact_value(item, depth + 1) for item in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, set | frozenset):
        return {_redact_value(item, depth + 1) for item in value}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            field.name: _redact_field(field.name, getattr(value, field.name, None), depth + 1)
            for field in dataclasses.fields(value)
        }
    text = _text_of(value)
    cleaned = redact_text(text)
    return value if cleaned == text else cleaned


def _redact_exception(exc: BaseException, depth: int) -> str:
    """`Type: message`, redacted; with the default message, built from the redacted arguments."""
    if type(exc).__str__ is BaseException.__str__:
        args = [_redact_value(arg, depth + 1) for arg in exc.args]
        text = str(args[0]) if len(args) == 1 else repr(tuple(args)) if args else ""
    else:
        text = redact_text(_text_of(exc))
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _text_of(value: object) -> str:
    try:
        return str(value)
    except Exception:  # an object whose __str__ fails still gets a line, not a crash in the logger
        return f"<unprintable {type(value).__name__}>"


def _redact_key(key: Any) -> Any:
    return redact_text(key) if isinstance(key, str) else key


def _redact_field(key: str, value: Any, depth: int) -> Any:
    if key not in _NOT_SECRET_KEYS and _SECRET_KEYS.search(key) and not _is_blank(value):
        return _REDACTED
    return _redact_value(value, depth)


def _is_blank(value: Any) -> bool:
    return value is None or value is False or (isinstance(value, str) and not value)


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


_ABOVE_DEBUG = frozenset(
    structlog.make_filtering_bound_logger(level)
    for level in (logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL)
)


def debug_enabled() -> bool:
    """True unless logging is configured above debug: a hot path asks before building a debug line (a line
    structlog drops still costs a logger bound for it)."""
    return structlog.get_config()["wrapper_class"] not in _ABOVE_DEBUG


def get_logger(name: str | None = None, **bindings: Any) -> Any:
    """A structlog logger bound with the module name (`logger = get_logger(__name__)`)."""
    logger = structlog.get_logger(name)
    return logger.bind(**bindings) if bindings else logger
