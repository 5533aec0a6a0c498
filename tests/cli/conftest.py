"""CLI tests change process-wide logging (`configure_logging`); put it back after each test. The PostgreSQL
server starts once collection finds a test that needs it."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import structlog


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.configure(**saved)
    root.handlers[:] = handlers
    root.setLevel(level)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the test PostgreSQL server in the background when a collected test needs it."""
    from tests.state.postgres_server import start_if_collected

    start_if_collected(session.items)
