"""agno's session store interface, driven through agno's own store and ours, on SQLite and on PostgreSQL.

Every session or run method the installed agno's store defines has a scenario here (a test fails when
agno adds one without it). A scenario runs on both stores after the same turns were stored, the last
session row still waiting in ours (no run behind it); its results and the tables afterwards must be
the same. The clock is fixed, so the stored times compare too. Our SQLite store is not agno's class: it
implements the methods agno's agents and teams and the daemon call, with agno's tables, and refuses the
others by name. `.ci/run` also runs this file against the newest agno 3.x, so an agno upgrade that
breaks the batched writes or changes the SQLite tables is seen before the pin moves.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import inspect
import json
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from agno.db.base import SessionType
from agno.db.sqlite import AsyncSqliteDb
from agno.run.agent import RunOutput
from agno.run.base import RunStatus
from agno.session.agent import AgentSession
from agno.session.summary import SessionSummary

from mindroom.ai.sessions.history import sqlite_store_class
from tests.state.postgres_server import postgres_server, postgres_url

__all__ = ["postgres_server", "postgres_url"]

ANN, BOB = "@ann:example.org", "@bob:example.org"
START = 1_700_000_100
AGENT = SessionType.AGENT
_SESSION_WORDS = {"session", "sessions", "run", "runs"}
_OWN_TABLE_WORDS = {"eval", "schedule", "task"}  # agno's eval, schedule and task tables have runs of their own
NOT_SESSION_ROWS = {
    "get_tool_results_for_session": "reads agno's tool results table",
    "list_transcript_sessions": "reads agno's transcripts table",
    "session_blocker": "reads agno's job queue table",
    "update_approval_run_status": "ours skips it on purpose: runs never pause for approval here (sessions/history.py)",
}
RESULT_NOT_COMPARED = {
    "upsert_session": "ours returns the session given, agno's the row read back (agno's turn does not use it)",
}
JSON_COLUMNS = {"agent_data", "team_data", "workflow_data", "session_data", "summary", "metadata", "run_data"}


def session_methods(store: type[Any]) -> set[str]:
    """The methods of agno's store `store` that read or write session or run rows, by their names."""
    return {
        name
        for name in dir(store)
        if not name.startswith("_")
        and callable(getattr(store, name))
        and set(name.split("_")) & _SESSION_WORDS
        and not set(name.split("_")) & _OWN_TABLE_WORDS
        and name not in NOT_SESSION_ROWS
    }


def _session(session_id: str, user_id: str | None, note: str = "one") -> AgentSession:
    return AgentSession(
        session_id=session_id,
        agent_id="scribe",
        user_id=user_id,
        agent_data={"name": "Scribe", "note": note},
        session_data={"session_state": {"note": note}},
        metadata={"room": "!r:example.org", "note": note},
        summary=SessionSummary(summary=f"about {note}"),
        created_at=1_700_000_000,
    )


def _run(run_id: str, session_id: str, text: str, status: RunStatus = RunStatus.completed) -> RunOutput:
    return RunOutput(
        run_id=run_id, session_id=session_id, agent_id="scribe", content=text, status=status, created_at=1_700_000_001
    )


async def _seed(db: Any, clock: list[int]) -> None:
    await db.upsert_session(_session("s1", ANN))
    await db.upsert_run(_run("r1", "s1", "first"), session_id="s1", user_id=ANN, run_index=0)
    await db.upsert_session(_session("s1", ANN, note="two"))
    await db.upsert_run(_run("r2", "s1", "second", RunStatus.pending), session_id="s1", user_id=ANN)
    await db.upsert_session(_session("s2", None))
    await db.upsert_run(_run("r3", "s2", "other"), session_id="s2")
    clock[0] += 7
    await db.upsert_session(_session("s3", BOB, note="waiting"))  # ours keeps this row until something reads


Scenario = Callable[[Any], Awaitable[list[Any]]]


async def _get_session(db: Any) -> list[Any]:
    return [
        await db.get_session("s3"),
        await db.get_session("s1", AGENT, user_id=ANN, deserialize=False),
        await db.get_session("s1", user_id=BOB),
        await db.get_session("s1", runs_limit=1),
        await db.get_session("missing"),
    ]


async def _get_sessions(db: Any) -> list[Any]:
    return [
        await db.get_sessions(),
        await db.get_sessions(session_type=AGENT, user_id=BOB),
        await db.get_sessions(deserialize=False, sort_by="created_at", sort_order="asc"),
        await db.get_sessions(include_runs=False, limit=1, page=2),
    ]


async def _upsert_session(db: Any) -> list[Any]:
    await db.upsert_session(_session("s4", ANN))
    await db.upsert_session(_session("s1", BOB, note="bob's"))  # another user's write does not take s1 over
    await db.upsert_session(_session("s3", BOB, note="again"), deserialize=False)
    return [await db.get_sessions(deserialize=False)]


async def _upsert_sessions(db: Any) -> list[Any]:
    both = [_session("s4", ANN), _session("s1", ANN, note="bulk"), _session("s3", BOB, note="bulk")]
    return [await db.upsert_sessions(both), await db.upsert_sessions(both[1:], deserialize=False)]


async def _delete_session(db: Any) -> list[Any]:
    return [
        await db.delete_session("s3"),  # the row still waiting in ours: it must not come back afterwards
        await db.delete_session("s1", user_id=BOB),
        await db.delete_session("missing"),
    ]


async def _delete_sessions(db: Any) -> list[Any]:
    return [await db.delete_sessions(["s1", "s3"]), await db.get_sessions(deserialize=False)]


async def _rename_session(db: Any) -> list[Any]:
    return [
        await db.rename_session("s3", AGENT, "renamed"),
        await db.rename_session("s1", AGENT, "not bob's", user_id=BOB),
    ]


async def _reassign_session_owner(db: Any) -> list[Any]:
    return [
        await db.reassign_session_owner("s3", previous_user_id=BOB, user_id=ANN),
        await db.reassign_session_owner("s1", previous_user_id=BOB, user_id=ANN),
    ]


async def _get_run(db: Any) -> list[Any]:
    return [await db.get_run("r1"), await db.get_run("r2", deserialize=False), await db.get_run("missing")]


async def _get_runs(db: Any) -> list[Any]:
    return [
        await db.get_runs(session_id="s1"),
        await db.get_runs(deserialize=False, sort_by="created_at", sort_order="asc"),
        await db.get_runs(status=RunStatus.pending, user_id=ANN),
    ]


async def _upsert_run(db: Any) -> list[Any]:
    await db.upsert_run(_run("r4", "s3", "bob's first"), session_id="s3", user_id=BOB)  # with the waiting row
    await db.upsert_run(_run("r1", "s1", "first, edited", RunStatus.error), session_id="s1", user_id=ANN)
    await db.upsert_session(_session("s2", None, note="two"))
    await db.upsert_run(_run("r5", "s2", "other's second"), session_id="s2", run_index=None)
    return [await db.get_runs(deserialize=False)]


async def _delete_run(db: Any) -> list[Any]:
    return [await db.delete_run("r1"), await db.delete_run("missing"), await db.get_session("s3")]


async def _delete_runs(db: Any) -> list[Any]:
    return [await db.delete_runs(["r1", "r3"]), await db.get_runs(deserialize=False)]


async def _cancel_pending_run(db: Any) -> list[Any]:
    return [
        await db.cancel_pending_run("r2", session_id="s1", reason="stopped"),
        await db.cancel_pending_run("r1", session_id="s1", reason="stopped"),
    ]


async def _cleanup_legacy_runs_column(db: Any) -> list[Any]:
    return [await db.cleanup_legacy_runs_column()]


async def _insert_session_if_absent(db: Any) -> list[Any]:
    return [
        await db.insert_session_if_absent(_session("s3", BOB)),
        await db.insert_session_if_absent(_session("s5", ANN)),
    ]


async def _append_run_to_session_if_absent(db: Any) -> list[Any]:
    run = _run("r6", "s3", "appended").to_dict()
    return [
        await db.append_run_to_session_if_absent("s3", run, user_id=BOB),  # needs the waiting row stored
        await db.append_run_to_session_if_absent("s3", run, user_id=BOB),
        await db.append_run_to_session_if_absent("missing", {**run, "run_id": "r7"}),
    ]


async def _update_run_in_session(db: Any) -> list[Any]:
    return [
        await db.update_run_in_session("s1", "r2", {"status": "RUNNING", "content": "going"}),
        await db.update_run_in_session("s1", "r1", {"status": "PENDING"}),  # a completed run stays completed
        await db.update_run_in_session("s3", "missing", {"status": "RUNNING"}),
    ]


SCENARIOS: dict[str, Scenario] = {
    "get_session": _get_session,
    "get_sessions": _get_sessions,
    "upsert_session": _upsert_session,
    "upsert_sessions": _upsert_sessions,
    "delete_session": _delete_session,
    "delete_sessions": _delete_sessions,
    "rename_session": _rename_session,
    "reassign_session_owner": _reassign_session_owner,
    "get_run": _get_run,
    "get_runs": _get_runs,
    "upsert_run": _upsert_run,
    "delete_run": _delete_run,
    "delete_runs": _delete_runs,
    "cancel_pending_run": _cancel_pending_run,
    "cleanup_legacy_runs_column": _cleanup_legacy_runs_column,
    "insert_session_if_absent": _insert_session_if_absent,
    "append_run_to_session_if_absent": _append_run_to_session_if_absent,
    "update_run_in_session": _update_run_in_session,
}
"""What each session method of agno's stores is driven with (the PostgreSQL store has the last three)."""


def _plain(value: Any) -> Any:
    """`value` as plain data (agno's sessions and runs as their dicts), for comparing."""
    if hasattr(value, "to_dict"):
        return _plain(value.to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain(dataclasses.asdict(value))
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        name: json.loads(value) if name in JSON_COLUMNS and isinstance(value, str) else value
        for name, value in row.items()
    }


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """`time.time()` fixed at `clock[0]` (agno's stores and ours stamp rows with it)."""
    now = [START]
    monkeypatch.setattr(time, "time", lambda: float(now[0]))
    return now


async def _observe(db: Any, scenario: Scenario, clock: list[int]) -> list[Any]:
    clock[0] = START
    try:
        await _seed(db, clock)
        clock[0] += 5
        return _plain(await scenario(db))
    finally:
        await db.close()


def _sqlite_tables(path: Path) -> dict[str, list[dict[str, Any]]]:
    connection = sqlite3.connect(path)
    connection.row_factory = sqlite3.Row
    try:
        return {
            table: [_row(dict(row)) for row in connection.execute(f"SELECT * FROM {table} ORDER BY {key}")]
            for table, key in (("agno_sessions", "session_id"), ("agno_runs", "run_id"))
        }
    finally:
        connection.close()


def _session_ids(tables: dict[str, list[dict[str, Any]]]) -> set[str]:
    return {row["session_id"] for row in tables["agno_sessions"]}


def test_contract_the_installed_agno_is_what_the_batched_writes_write() -> None:
    """Else the stores are agno's own (a warning at start), and every comparison below would hold trivially."""
    from agno.db.postgres import AsyncPostgresDb

    from mindroom.ai.sessions.history import _postgres_store_class
    from mindroom.ai.sessions.rows import POSTGRES, SQLITE, agno_differences
    from mindroom.ai.sessions.sqlite_store import SqliteSessionStore
    from mindroom.ai.sessions.store import PostgresTurnWrites

    assert agno_differences(AsyncSqliteDb, SQLITE) == []
    assert agno_differences(AsyncPostgresDb, POSTGRES) == []
    assert issubclass(sqlite_store_class(), SqliteSessionStore)
    assert issubclass(_postgres_store_class(), PostgresTurnWrites)


def test_contract_has_a_scenario_for_every_session_method_of_agnos_sqlite_store() -> None:
    methods = session_methods(AsyncSqliteDb)

    assert {"get_session", "upsert_session", "upsert_run", "delete_sessions"} <= methods  # the rule finds them
    assert sorted(methods - set(SCENARIOS)) == []


SQLITE_IMPLEMENTED = {
    "delete_run",
    "delete_runs",
    "delete_session",
    "get_run",
    "get_runs",
    "get_session",
    "get_sessions",
    "rename_session",
    "upsert_run",
    "upsert_session",
}
"""The session methods our SQLite store implements: what agno's agents and teams and the daemon call."""


@pytest.mark.asyncio
@pytest.mark.parametrize("method", sorted(session_methods(AsyncSqliteDb) & SQLITE_IMPLEMENTED))
async def test_contract_sqlite_store_answers_and_stores_as_agnos_own(
    method: str, tmp_path: Path, clock: list[int]
) -> None:
    scenario = SCENARIOS[method]
    theirs = await _observe(AsyncSqliteDb(db_file=str(tmp_path / "theirs.db")), scenario, clock)
    ours = await _observe(sqlite_store_class()(db_file=str(tmp_path / "ours.db")), scenario, clock)

    expected_tables = _sqlite_tables(tmp_path / "theirs.db")
    assert expected_tables["agno_sessions"] and expected_tables["agno_runs"]
    assert _sqlite_tables(tmp_path / "ours.db") == expected_tables
    if method not in RESULT_NOT_COMPARED:
        assert ours == theirs


@pytest.mark.asyncio
@pytest.mark.parametrize("method", sorted(session_methods(AsyncSqliteDb) - SQLITE_IMPLEMENTED))
async def test_the_sqlite_store_refuses_the_other_session_methods_by_name(method: str, tmp_path: Path) -> None:
    store = sqlite_store_class()(db_file=str(tmp_path / "s.db"))
    try:
        with pytest.raises((NotImplementedError, AttributeError), match=method):
            await getattr(store, method)("s1")
    finally:
        await store.close()


def _sqlite_schema(path: Path) -> tuple[set[tuple[str, ...]], list[tuple[str, ...]]]:
    connection = sqlite3.connect(path)
    try:
        found = set(connection.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))
        versions = list(connection.execute("SELECT table_name, version FROM agno_schema_versions ORDER BY 1"))
        return found, versions
    finally:
        connection.close()


@pytest.mark.asyncio
async def test_contract_the_sqlite_store_makes_agnos_tables_indexes_and_schema_versions(
    tmp_path: Path, clock: list[int]
) -> None:
    for store in (
        AsyncSqliteDb(db_file=str(tmp_path / "theirs.db")),
        sqlite_store_class()(db_file=str(tmp_path / "ours.db")),
    ):
        await _observe(store, _get_session, clock)

    theirs, ours = _sqlite_schema(tmp_path / "theirs.db"), _sqlite_schema(tmp_path / "ours.db")
    assert {row[1] for row in theirs[0]} >= {"agno_sessions", "agno_runs", "idx_agno_runs_session_id_run_index"}
    assert ours == theirs


async def _answers(db: Any) -> list[Any]:
    try:
        return _plain(
            [
                await db.get_session("s1"),
                await db.get_session("s3", deserialize=False),
                await db.get_sessions(sort_by="created_at", sort_order="asc"),
                await db.get_runs(deserialize=False),
                await db.get_run("r2"),
            ]
        )
    finally:
        await db.close()


@pytest.mark.asyncio
async def test_agnos_store_and_ours_read_each_others_files_alike(tmp_path: Path, clock: list[int]) -> None:
    """agno's store reads what ours wrote as ours reads it, and ours reads a file agno's wrote (existing data)."""
    for writer, name in ((sqlite_store_class(), "ours.db"), (AsyncSqliteDb, "theirs.db")):
        db = writer(db_file=str(tmp_path / name))
        try:
            await _seed(db, clock)
        finally:
            await db.close()

    for name in ("ours.db", "theirs.db"):
        by_agno = await _answers(AsyncSqliteDb(db_file=str(tmp_path / name)))
        by_ours = await _answers(sqlite_store_class()(db_file=str(tmp_path / name)))
        assert by_agno[0]["runs"] and by_agno[1]["session_id"] == "s3"
        assert by_ours == by_agno


@pytest.mark.asyncio
async def test_a_session_table_without_agnos_columns_is_refused_as_agno_refuses_it(tmp_path: Path) -> None:
    from agno.db.utils import table_schema_mismatch_error

    path = tmp_path / "old.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE agno_sessions (session_id VARCHAR PRIMARY KEY, session_type VARCHAR)")
    connection.close()
    kind = type(table_schema_mismatch_error("agno_sessions", table_type="sessions"))
    store = sqlite_store_class()(db_file=str(path))
    try:
        with pytest.raises(kind, match="agno_sessions"):
            await store.get_session("s1")
    finally:
        await store.close()


OWN_WRITES = {
    "upsert_session": "keeps an agent session's row for the run row after it",
    "upsert_run": "writes the run row with the session row kept for it",
    "close": "writes what waits, then closes (test_store.py)",
    "update_approval_run_status": "ours skips it on purpose: runs never pause for approval here (sessions/history.py)",
    "table_exists": "agno's table bookkeeping, run while the waiting row is written",
    "get_latest_schema_version": "agno's table bookkeeping, run while the waiting row is written",
    "upsert_schema_version": "agno's table bookkeeping, run while the waiting row is written",
}
"""Coroutine methods of agno's stores that do not write the waiting rows first, and why."""
COMPONENT_STUBS = {
    "create_component_with_config",
    "delete_component",
    "delete_config",
    "get_component",
    "get_config",
    "get_current_config",
    "get_dependents",
    "get_latest_config",
    "get_latest_configs",
    "get_links",
    "list_components",
    "list_configs",
    "load_component_graph",
    "restore_component",
    "set_current_version",
    "upsert_component",
    "upsert_config",
}
"""The plain (not async) methods of agno's async stores: components, which they refuse, and no session rows."""


def _methods_to_probe(store: type[Any]) -> list[str]:
    public = [name for name in dir(store) if not name.startswith("_") and inspect.isfunction(getattr(store, name))]
    plain = {name for name in public if not inspect.iscoroutinefunction(getattr(store, name))} - {"to_dict"}
    assert sorted(plain - COMPONENT_STUBS) == [], "plain methods that may read session rows without waiting"
    return sorted(name for name in public if name not in plain and name not in OWN_WRITES and name != "to_dict")


async def _probe_every_method(store: Any, agnos: type[Any], stored: Callable[[], set[str]]) -> dict[str, bool]:
    """For each method: keep a session row waiting, call the method with agno's own replaced by a probe, and
    say whether the row was stored when agno's method began."""
    seen: dict[str, bool] = {}
    methods = _methods_to_probe(agnos)
    await store.upsert_session(_session("first", ANN))  # agno's tables exist before the probes begin
    await store.get_session("first")
    with pytest.MonkeyPatch.context() as patch:
        for name in methods:

            async def probe(self: Any, *args: Any, _name: str = name, **kwargs: Any) -> None:
                seen[_name] = f"waiting-{_name}" in stored()

            patch.setattr(agnos, name, probe)
            await store.upsert_session(_session(f"waiting-{name}", ANN))
            await getattr(store, name)(f"waiting-{name}")
            patch.undo()
    return seen


@pytest.mark.asyncio
async def test_every_method_of_the_sqlite_store_finds_the_waiting_rows_written(tmp_path: Path) -> None:
    from mindroom.ai.sessions.sqlite_store import SqliteSessions

    path = tmp_path / "s.db"
    store = sqlite_store_class()(db_file=str(path))
    seen: dict[str, bool] = {}
    delegating = {"delete_run", "delete_runs"}  # to `_delete_runs`
    methods = sorted(
        name
        for name, method in vars(SqliteSessions).items()
        if inspect.iscoroutinefunction(method)
        and (not name.startswith("_") or name == "_delete_runs")
        and name not in OWN_WRITES.keys() | delegating
        and not (method.__doc__ or "").startswith("Not implemented")
    )
    try:
        await store.upsert_session(_session("first", ANN))  # the tables exist before the probes begin
        await store.get_session("first")
        for name in methods:

            async def probe(self: Any, *args: Any, _name: str = name, **kwargs: Any) -> None:
                seen[_name] = f"waiting-{_name}" in _session_ids(_sqlite_tables(path))

            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(SqliteSessions, name, probe)
                await store.upsert_session(_session(f"waiting-{name}", ANN))
                await getattr(store, name.lstrip("_"))(f"waiting-{name}")
    finally:
        await store.close()

    assert {"get_session", "get_sessions", "get_runs", "_delete_runs", "rename_session"} <= set(seen)
    assert sorted(name for name, written in seen.items() if not written) == []


def _postgres_tables(url: str, schema: str, connection: Any = None) -> dict[str, list[dict[str, Any]]]:
    import psycopg
    from psycopg.rows import dict_row

    with contextlib.nullcontext(connection) if connection else psycopg.connect(url, row_factory=dict_row) as open_:
        return {
            table: [_row(row) for row in open_.execute(f"SELECT * FROM {schema}.{table} ORDER BY {key}")]
            for table, key in (("agno_sessions", "session_id"), ("agno_runs", "run_id"))
        }


def _postgres_store(store_class: type[Any], url: str, schema: str) -> Any:
    from agno.db.postgres import create_async_postgres_engine

    return store_class(db_engine=create_async_postgres_engine(url), db_schema=schema)  # its close disposes it


def test_contract_has_a_scenario_for_every_session_method_of_agnos_postgresql_store() -> None:
    from agno.db.postgres import AsyncPostgresDb

    assert sorted(session_methods(AsyncPostgresDb) - set(SCENARIOS)) == []


def _postgres_session_methods() -> list[str]:
    from agno.db.postgres import AsyncPostgresDb

    return sorted(session_methods(AsyncPostgresDb))


@pytest.mark.postgres
@pytest.mark.asyncio
@pytest.mark.parametrize("method", _postgres_session_methods())
async def test_contract_postgresql_store_answers_and_stores_as_agnos_own(
    method: str, postgres_url: str, clock: list[int]
) -> None:
    from agno.db.postgres import AsyncPostgresDb

    from mindroom.ai.sessions.history import _postgres_store_class

    scenario = SCENARIOS[method]
    theirs = await _observe(_postgres_store(AsyncPostgresDb, postgres_url, "theirs"), scenario, clock)
    ours = await _observe(_postgres_store(_postgres_store_class(), postgres_url, "ours"), scenario, clock)

    expected_tables = _postgres_tables(postgres_url, "theirs")
    assert expected_tables["agno_sessions"] and expected_tables["agno_runs"]
    assert _postgres_tables(postgres_url, "ours") == expected_tables
    if method not in RESULT_NOT_COMPARED:
        assert ours == theirs


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_every_method_of_agnos_postgresql_store_finds_the_waiting_rows_written(postgres_url: str) -> None:
    import psycopg
    from agno.db.postgres import AsyncPostgresDb
    from psycopg.rows import dict_row

    from mindroom.ai.sessions.history import _postgres_store_class

    store = _postgres_store(_postgres_store_class(), postgres_url, "ours")
    with psycopg.connect(postgres_url, row_factory=dict_row, autocommit=True) as connection:
        try:
            seen = await _probe_every_method(
                store, AsyncPostgresDb, lambda: _session_ids(_postgres_tables(postgres_url, "ours", connection))
            )
        finally:
            await store.close()

    assert len(seen) > 100 and {"get_sessions", "update_run_in_session", "insert_session_if_absent"} <= set(seen)
    assert sorted(name for name, written in seen.items() if not written) == []
