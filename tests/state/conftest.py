"""Fixtures of the state tests: the PostgreSQL server (started once collection is done) and backends on both kinds.

`opener` makes a backend on a fresh data directory, once on SQLite and once on PostgreSQL (marked `postgres`);
`opened` collects the backends a test opens and closes them after it.
"""

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import pytest_asyncio

from mindroom.state.backend import StateBackend
from mindroom.state.location import open_state_backend
from tests.state.postgres_server import postgres_server, postgres_url, start_if_collected

__all__ = ["opened", "opener", "postgres_server", "postgres_url"]


def pytest_collection_finish(session: pytest.Session) -> None:
    start_if_collected(session.items)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], StateBackend]:
    url = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    return lambda: open_state_backend(tmp_path / "data", url)


@pytest_asyncio.fixture
async def opened() -> AsyncIterator[list[StateBackend]]:
    backends: list[StateBackend] = []
    yield backends
    for backend in backends:
        await backend.close()
