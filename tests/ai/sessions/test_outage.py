"""Session stores when the state's PostgreSQL database is not there: a store recovers once it is back, and the
daemon's shutdown closes everything else when a store cannot write what waits."""

from __future__ import annotations

import secrets
from pathlib import Path

import psycopg
import pytest
from structlog.testing import capture_logs

from tests.ai.sessions.test_store import _run, _session
from tests.state.postgres_server import TestPostgres, postgres_server, postgres_url

__all__ = ["postgres_server", "postgres_url"]

pytestmark = [pytest.mark.postgres, pytest.mark.asyncio]


def _create(server: TestPostgres, name: str) -> None:
    with psycopg.connect(server.admin_url, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]


async def test_a_store_that_first_wrote_while_the_database_was_missing_writes_once_it_is_there(
    postgres_server: TestPostgres,
) -> None:
    from agno.db.postgres import create_async_postgres_engine

    from mindroom.ai.sessions.history import _postgres_store

    name = f"test_{secrets.token_hex(6)}"
    url = postgres_server.url(name)
    engine = create_async_postgres_engine(url)
    db = _postgres_store(engine, "scribe")
    try:
        with pytest.raises(Exception, match=name):  # the database does not exist yet
            await db.upsert_run(_run("r0", "s0", "lost"), session_id="s0", run_index=0)
        _create(postgres_server, name)
        await db.upsert_session(_session("s1"))
        await db.upsert_run(_run("r1", "s1", "kept"), session_id="s1", run_index=0)
        stored = await db.get_session("s1")
        assert stored is not None and [run.content for run in stored.runs] == ["kept"]
    finally:
        await db.close()
        await engine.dispose()
        postgres_server.drop_database(url)


async def test_shutdown_goes_on_when_a_session_store_cannot_write_what_waits(
    postgres_server: TestPostgres, postgres_url: str, tmp_path: Path
) -> None:
    from mindroom.ai.agents import close_caches
    from mindroom.ai.sessions.history import session_db

    scribe = session_db(tmp_path, "scribe", postgres_url)
    session_db(tmp_path, "other", postgres_url)
    postgres_server.drop_database(postgres_url)
    await scribe.upsert_session(_session("s1"))  # waits for its run row, and cannot be written now
    with capture_logs() as logs:
        await close_caches()  # does not raise
    failed = [entry for entry in logs if entry["event"] == "session store not closed cleanly"]
    assert [entry["agent"] for entry in failed] == ["scribe"]
    assert any(entry["event"] == "closing failed on shutdown" for entry in logs)
    assert all(postgres_url not in str(entry) for entry in logs)
    assert session_db(tmp_path, "scribe", postgres_url) is not scribe  # the closed stores were forgotten
