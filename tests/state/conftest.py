"""The PostgreSQL server fixtures for the state tests; the server starts once collection is done."""

import pytest

from tests.state.postgres_server import postgres_server, postgres_url, start_if_collected

__all__ = ["postgres_server", "postgres_url"]


def pytest_collection_finish(session: pytest.Session) -> None:
    start_if_collected(session.items)
