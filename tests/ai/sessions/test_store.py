"""The session stores' batched turn writes: the rows agno would write, read-your-writes, new threads."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from agno.db.sqlite import AsyncSqliteDb
from agno.run.agent import RunOutput
from agno.run.base import RunStatus
from agno.session.agent import AgentSession

from mindroom.ai import generate, load_history
from mindroom.ai.sessions.history import session_db, session_db_path, sqlite_store_class
from mindroom.ai.sessions.sqlite_store import SqliteSessionStore
from mindroom.ai.sessions.store import NewSessionsUnread, PostgresTurnWrites, expecting_new_session
from mindroom.config.main import ModelConfig
from mindroom.testing.model_server import ScriptedModelServer, Text
from tests.ai.test_generation import make_request
from tests.state.postgres_server import postgres_server, postgres_url

__all__ = ["postgres_server", "postgres_url"]


def _session(session_id: str, *, user_id: str | None = "@ann:example.org", note: str = "one") -> AgentSession:
    return AgentSession(
        session_id=session_id,
        agent_id="scribe",
        user_id=user_id,
        agent_data={"name": "Scribe", "model": {"id": "m"}},
        session_data={"session_state": {"note": note}},
        metadata={"room": "!r:example.org"},
        created_at=1_700_000_000,
    )


def _run(run_id: str, session_id: str, text: str, status: RunStatus = RunStatus.completed) -> RunOutput:
    return RunOutput(
        run_id=run_id, session_id=session_id, agent_id="scribe", content=text, status=status, created_at=1_700_000_001
    )


def _rows(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Every stored row but its `updated_at` (the clock at the write)."""
    connection = sqlite3.connect(path)
    try:
        tables = {}
        for table, key in (("agno_sessions", "session_id"), ("agno_runs", "run_id")):
            cursor = connection.execute(f"SELECT * FROM {table} ORDER BY {key}")
            names = [column[0] for column in cursor.description]
            tables[table] = [
                {name: value for name, value in zip(names, row, strict=True) if name != "updated_at"} for row in cursor
            ]
        return tables
    finally:
        connection.close()


async def _write_turns(db: Any) -> None:
    await db.upsert_session(_session("s1"))
    await db.upsert_run(_run("r1", "s1", "first"), session_id="s1", user_id="@ann:example.org", run_index=0)
    await db.upsert_session(_session("s1", note="two"))
    await db.upsert_run(_run("r2", "s1", "second"), session_id="s1", user_id="@ann:example.org")  # index computed
    await db.upsert_session(_session("s2", user_id=None))
    await db.upsert_run(_run("r3", "s2", "other"), session_id="s2")
    # A run written again (a status change): its index stays, its data and status change.
    await db.upsert_run(_run("r1", "s1", "first, edited", RunStatus.error), session_id="s1", user_id="@ann:example.org")
    # Another user's write to s1 does not take the session over (agno's conflict rule).
    await db.upsert_session(_session("s1", user_id="@bob:example.org", note="bob"))
    await db.upsert_run(_run("r4", "s1", "bob's"), session_id="s1", user_id="@bob:example.org", run_index=2)


@pytest.mark.asyncio
async def test_turn_writes_store_the_rows_agnos_own_store_stores(tmp_path: Path) -> None:
    theirs = AsyncSqliteDb(db_file=str(tmp_path / "agno.db"))
    ours = sqlite_store_class()(db_file=str(tmp_path / "ours.db"))
    assert isinstance(ours, SqliteSessionStore)
    try:
        await _write_turns(theirs)
        await _write_turns(ours)
    finally:
        await theirs.close()
        await ours.close()

    expected = _rows(tmp_path / "agno.db")
    assert [row["run_index"] for row in expected["agno_runs"]] == [0, 1, 0, 2]  # the sequence says something
    assert expected["agno_sessions"][0]["session_data"] == '{"session_state": {"note": "two"}}'
    assert _rows(tmp_path / "ours.db") == expected


@pytest.mark.asyncio
async def test_a_session_written_without_a_run_is_read_back_and_stored(tmp_path: Path) -> None:
    db = sqlite_store_class()(db_file=str(tmp_path / "s.db"))
    try:
        await db.upsert_session(_session("lonely"))
        read = await db.get_session("lonely")  # before its flush task had a chance to run
        assert read is not None and read.session_data == {"session_state": {"note": "one"}}

        await db.upsert_session(_session("later", note="flushed"))
        for _ in range(20):  # the flush task runs once this task yields; the row lands within a few loop turns
            await asyncio.sleep(0.01)
            if _rows(tmp_path / "s.db")["agno_sessions"][-1]["session_id"] == "later":
                break
        ids = [row["session_id"] for row in _rows(tmp_path / "s.db")["agno_sessions"]]
        assert ids == ["later", "lonely"]
    finally:
        await db.close()


@pytest.mark.asyncio
async def test_close_writes_what_still_waits(tmp_path: Path) -> None:
    db = sqlite_store_class()(db_file=str(tmp_path / "s.db"))
    await db.upsert_session(_session("s1"))
    await db.close()

    assert [row["session_id"] for row in _rows(tmp_path / "s.db")["agno_sessions"]] == ["s1"]


@pytest.mark.asyncio
async def test_a_failed_turn_write_rolls_back_and_raises(tmp_path: Path) -> None:
    db = sqlite_store_class()(db_file=str(tmp_path / "s.db"))
    try:
        await db.upsert_session(_session("s1"))
        await db.upsert_run(_run("r1", "s1", "ok"), session_id="s1", run_index=0)
        with pytest.raises(sqlite3.IntegrityError):  # a run of a session that was never stored
            await db.upsert_run(_run("r2", "nowhere", "orphan"), session_id="nowhere", run_index=0)
        await db.upsert_session(_session("s1", note="after"))
        await db.upsert_run(_run("r3", "s1", "still works"), session_id="s1")
    finally:
        await db.close()

    rows = _rows(tmp_path / "s.db")
    assert [row["run_id"] for row in rows["agno_runs"]] == ["r1", "r3"]
    assert rows["agno_sessions"][0]["session_data"] == '{"session_state": {"note": "after"}}'


@pytest.mark.asyncio
async def test_a_new_threads_session_is_not_read_but_every_other_one_is(tmp_path: Path) -> None:
    db = sqlite_store_class()(db_file=str(tmp_path / "s.db"))
    try:
        await db.upsert_session(_session("s1"))
        await db.upsert_run(_run("r1", "s1", "stored"), session_id="s1", run_index=0)
        with expecting_new_session(db, "s1", True):
            assert await db.get_session("s1") is None  # what the turn was told: nothing stored yet
            assert await db.get_session("s2") is None
        with expecting_new_session(db, "s1", False):
            assert await db.get_session("s1") is not None
        stored = await db.get_session("s1")
        assert stored is not None and [run.content for run in stored.runs] == ["stored"]
    finally:
        await db.close()


@pytest.mark.asyncio
async def test_a_thread_opened_without_a_read_has_its_history_for_the_next_turn(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(Text("first answer"), Text("second answer"))
    first = make_request(scripted_model, "first question", session_id="$root", opens_session=True)
    second = make_request(scripted_model, "second question", session_id="$root")
    for request in (first, second):
        await generate(request, storage_root=storage_root, env={})

    assert await load_history("helper", "$root", storage_root=storage_root) == [
        ("user", "first question"),
        ("assistant", "first answer"),
        ("user", "second question"),
        ("assistant", "second answer"),
    ]
    sent = model_server.requests[-1]["messages"]
    assert [m["content"] for m in sent if m["role"] in {"user", "assistant"}][:3] == [
        "first question",
        "first answer",
        "second question",
    ]
    assert isinstance(session_db(storage_root, "helper"), SqliteSessionStore)
    assert session_db_path(storage_root, "helper").is_file()


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_the_postgresql_store_skips_the_read_of_a_new_threads_session_too(postgres_url: str) -> None:
    from agno.db.postgres import create_async_postgres_engine

    from mindroom.ai.sessions.history import _postgres_store

    engine = create_async_postgres_engine(postgres_url)
    db = _postgres_store(engine, "scribe")
    try:
        assert isinstance(db, NewSessionsUnread)
        await db.upsert_session(_session("s1"))
        await db.upsert_run(_run("r1", "s1", "stored"), session_id="s1", run_index=0)
        with expecting_new_session(db, "s1", True):
            assert await db.get_session("s1") is None
            await db.upsert_session(_session("s1", note="written in the turn"))
            written = await db.get_session("s1")  # once the turn wrote it, it is read again
            assert written is not None and written.session_data == {"session_state": {"note": "written in the turn"}}
        stored = await db.get_session("s1")
        assert stored is not None and [run.content for run in stored.runs] == ["stored"]
    finally:
        await engine.dispose()


@pytest.mark.asyncio
async def test_the_session_store_connection_keeps_a_small_page_cache(tmp_path: Path) -> None:
    from mindroom.ai.sessions.history import _sqlite_store

    db: Any = _sqlite_store(tmp_path / "s.db")
    try:
        await db.upsert_session(_session("s1"))
        await db.upsert_run(_run("r1", "s1", "x"), session_id="s1", run_index=0)
        pages = await asyncio.to_thread(db._connection.run, lambda c: c.execute("PRAGMA cache_size").fetchone()[0])
    finally:
        await db.close()
    assert pages == -512  # KiB; SQLite's default would be -2000


def _pg_rows(url: str, table: str, key: str) -> list[dict[str, Any]]:
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(url, row_factory=dict_row) as connection:
        rows = connection.execute(f"SELECT * FROM mindroom.{table} ORDER BY {key}").fetchall()
    return [{name: value for name, value in row.items() if name != "updated_at"} for row in rows]


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_turn_writes_on_postgresql_store_the_rows_agnos_own_store_stores(postgres_url: str) -> None:
    from agno.db.postgres import AsyncPostgresDb, create_async_postgres_engine

    from mindroom.ai.sessions.history import SESSION_SCHEMA, _postgres_store

    engine = create_async_postgres_engine(postgres_url)
    theirs = AsyncPostgresDb(db_engine=engine, db_schema=SESSION_SCHEMA, session_table="sessions_theirs")
    ours = _postgres_store(engine, "ours")
    assert isinstance(ours, PostgresTurnWrites)
    try:
        await _write_turns(theirs)
        await _write_turns(ours)
        nul = _run("r5", "s2", "a NUL \\x00 character")  # PostgreSQL text cannot hold one: agno drops it
        nul.content = "a NUL \x00 character"
        await theirs.upsert_run(nul, session_id="s2", run_index=None)
        await ours.upsert_run(nul, session_id="s2", run_index=None)  # index computed under agno's lock
    finally:
        await ours.close()
        await engine.dispose()

    for table, key in (("sessions_{}", "session_id"), ("sessions_{}_runs", "run_id")):
        expected = _pg_rows(postgres_url, table.format("theirs"), key)
        assert expected, table
        assert _pg_rows(postgres_url, table.format("ours"), key) == expected
    runs = _pg_rows(postgres_url, "sessions_ours_runs", "run_id")
    indexes = [(row["run_id"], row["run_index"]) for row in runs]
    assert indexes == [("r1", 0), ("r2", 1), ("r3", 0), ("r4", 2), ("r5", 1)]
    assert runs[-1]["run_data"]["content"] == "a NUL  character"


def _with_column(definition: Any) -> Any:
    def changed(table_type: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        found = dict(definition(table_type, *args, **kwargs))
        if table_type == "sessions":
            found["session_name"] = {"type": str, "nullable": True}
        return found

    return changed


@pytest.mark.parametrize(
    ("where", "name", "change", "difference"),
    [
        (
            "agno.db.postgres.schemas",
            "get_table_schema_definition",
            _with_column,
            "agno's sessions table has the column session_name, not written here",
        ),
        (
            "mindroom.ai.sessions.rows",
            "build_single_run_row",
            lambda build: lambda **kwargs: {**build(**kwargs), "attempt": 1},
            "agno builds a run row of agent_id, attempt, created_at",
        ),
    ],
)
@pytest.mark.postgres
@pytest.mark.asyncio
async def test_a_store_whose_tables_differ_from_the_batched_writes_is_agnos_own(
    monkeypatch: pytest.MonkeyPatch, postgres_url: str, where: str, name: str, change: Any, difference: str
) -> None:
    import importlib

    from agno.db.postgres import AsyncPostgresDb, create_async_postgres_engine
    from structlog.testing import capture_logs

    from mindroom.ai.sessions.history import SESSION_SCHEMA
    from mindroom.ai.sessions.store import session_store_class

    module = importlib.import_module(where)
    with monkeypatch.context() as patch, capture_logs() as logs:
        patch.setattr(module, name, change(getattr(module, name)))
        store_class = session_store_class(AsyncPostgresDb, PostgresTurnWrites, "Fallback", {})

    assert not issubclass(store_class, PostgresTurnWrites) and issubclass(store_class, NewSessionsUnread)
    [warning] = [log for log in logs if log["log_level"] == "warning"]
    assert warning["store"] == "AsyncPostgresDb"
    assert any(found.startswith(difference) for found in warning["differences"]), warning["differences"]
    db = store_class(
        db_engine=create_async_postgres_engine(postgres_url), db_schema=SESSION_SCHEMA, session_table="sessions_fb"
    )
    try:
        await _write_turns(db)
    finally:
        await db.close()
    [row] = [row for row in _pg_rows(postgres_url, "sessions_fb", "session_id") if row["session_id"] == "s1"]
    assert row["session_data"] == {"session_state": {"note": "two"}}


@pytest.mark.asyncio
async def test_a_read_waits_for_the_session_row_a_flush_is_writing(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    db = sqlite_store_class()(db_file=str(path))
    blocker = sqlite3.connect(path, isolation_level=None)
    try:
        await db.upsert_session(_session("s0"))
        await db.upsert_run(_run("r0", "s0", "tables made"), session_id="s0", run_index=0)
        blocker.execute("BEGIN IMMEDIATE")  # the flush below starts its write and waits for this lock
        await db.upsert_session(_session("s1"))
        await asyncio.sleep(0.05)
        asyncio.get_running_loop().call_later(0.3, blocker.execute, "COMMIT")

        found = await db.get_sessions(deserialize=False)
        one = await db.get_session("s1")
    finally:
        blocker.close()
        await db.close()

    assert isinstance(found, tuple) and sorted(row["session_id"] for row in found[0]) == ["s0", "s1"]
    assert one is not None
