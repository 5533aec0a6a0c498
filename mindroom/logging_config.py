"""structlog setup: human-readable on a terminal, JSON lines otherwise, secrets redacted everywhere."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

__all__ = ["configure_logging", "get_logger", "redact_secrets"]

_SECRET_KEYS = re.compile(r"(token|secret|password|api_key|apikey|authorization)", re.IGNORECASE)
_SECRET_VALUES = re.compile(
    r"(syt_[A-Za-z0-9_=-]{8,}|sk-[A-Za-z0-9_-]{12,}|sk-ant-[A-Za-z0-9_-]{12,}|(?i:bearer)\s+[A-Za-z0-9._~+/=-]{12,}"
    r"|access_token=[^&\s\"']+)"
)
_REDACTED = "[redacted]"


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return _SECRET_VALUES.sub(_REDACTED, value)
    return value


def redact_secrets(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """structlog processor: blank fields named like secrets and scrub token-shaped strings from the rest."""
    for key, value in list(event_dict.items()):
        if _SECRET_KEYS.search(key) and key not in {"event"} and value not in (None, "", False):
            event_dict[key] = _REDACTED
        else:
            event_dict[key] = _redact_value(value)
    return event_dict


def configure_logging(level: str = "INFO", *, json: bool | None = None) -> None:
    """Configure structlog (and stdlib logging, which libraries use) for the whole process."""
    use_json = (not sys.stderr.isatty()) if json is None else json
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.INFO
    renderer: Any = structlog.processors.JSONRenderer() if use_json else structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            redact_secrets,
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(
        level=max(numeric, logging.WARNING), stream=sys.stderr, format="%(name)s %(levelname)s %(message)s"
    )


def get_logger(name: str | None = None, **bindings: Any) -> Any:
    """A structlog logger bound with the module name (`logger = get_logger(__name__)`)."""
    logger = structlog.get_logger(name)
    return logger.bind(**bindings) if bindings else logger
