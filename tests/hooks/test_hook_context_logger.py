"""A hook context's logger: bound to its event, and it follows a new logging configuration."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from mindroom.hooks.hook_context import HookContextBase


@pytest.fixture
def restore_logging() -> Iterator[None]:
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


def _collecting(into: list[dict[str, Any]]) -> Any:
    def processor(_logger: Any, _method: str, event: dict[str, Any]) -> Any:
        into.append(dict(event))
        raise structlog.DropEvent

    return processor


@pytest.mark.usefixtures("restore_logging")
def test_hook_context_logger_is_bound_to_the_event_and_follows_a_new_configuration() -> None:
    first: list[dict[str, Any]] = []
    second: list[dict[str, Any]] = []
    structlog.configure(processors=[_collecting(first)])
    HookContextBase(event_name="message:received").logger.info("seen", n=1)
    structlog.configure(processors=[_collecting(second)])
    HookContextBase(event_name="message:enrich").logger.info("seen", n=2)
    HookContextBase(event_name="message:received").logger.info("seen", n=3)
    assert [(e["event_name"], e["n"]) for e in first] == [("message:received", 1)]
    assert [(e["event_name"], e["n"]) for e in second] == [("message:enrich", 2), ("message:received", 3)]
