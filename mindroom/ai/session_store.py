"""agno's session stores with two savings: a new thread's session is not read, and a turn's two writes go
to the database in one transaction.

agno stores a finished turn as two upserts, the session row and then the run row, after reading the
session (with its runs) before the run. Through SQLAlchemy's async layer each is its own statement
build and transaction, and on SQLite every step hops to aiosqlite's thread and back. Profiled, those
two writes and the read were about half of the CPU of a turn. The stores keep agno's classes, schema
and every other method, and change this:

- `NewSessionsUnread`: while a turn runs that opens a new thread (`expecting_new_session`), reading
  that session answers "none" without a query. Its id is the thread's first message, so nothing can
  be stored under it yet.
- `TurnWrites` (SQLite) and `PostgresTurnWrites`: an agent session's row waits in memory for the run
  row agno writes right after it, and both go to the database in one transaction, with the statements
  agno itself would run (the same columns, JSON encoding, conflict rules and run index). On SQLite
  that is one trip to a worker thread and the `sqlite3` module; on PostgreSQL one connection of agno's
  engine, as driver SQL. A session row with no run row behind it is written by a task of its own as
  soon as the turn's task yields, and every read or change of session rows writes what waits first,
  so readers see their writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from agno.db.base import AsyncBaseDb
from agno.db.utils import build_single_run_row, json_serializer
from agno.session.agent import AgentSession
from agno.utils.string import sanitize_postgres_strings

from mindroom.private_files import SQLITE_CACHE_PRAGMA

__all__ = ["NewSessionsUnread", "PostgresTurnWrites", "TurnWrites", "expecting_new_session"]

_BUSY_TIMEOUT_MS = 5000
_Statement = tuple[str, tuple[Any, ...]]
_SESSION_COLUMNS = (
    "session_id",
    "session_type",
    "agent_id",
    "user_id",
    "agent_data",
    "session_data",
    "summary",
    "metadata",
    "created_at",
    "updated_at",
)
_SESSION_UPDATED = ("agent_id", "user_id", "agent_data", "session_data", "summary", "metadata")
_RUN_COLUMNS = (
    "run_id",
    "session_id",
    "run_type",
    "agent_id",
    "team_id",
    "workflow_id",
    "user_id",
    "parent_run_id",
    "status",
    "run_index",
    "run_data",
    "created_at",
    "updated_at",
)


@dataclass(frozen=True, slots=True)
class _Dialect:
    """How agno's two turn statements are spelled for one database, and how it prepares their values."""

    mark: str  # parameter placeholder
    json: str  # cast of a JSON text parameter
    integer: str  # cast of a nullable integer parameter
    created_or_now: bool  # SQLite's store stamps a session without `created_at`; PostgreSQL's passes it on
    strip_nul: bool  # PostgreSQL text cannot hold NUL characters: agno removes them first


_SQLITE = _Dialect(mark="?", json="", integer="", created_or_now=True, strip_nul=False)
_POSTGRES = _Dialect(mark="%s", json="::jsonb", integer="::bigint", created_or_now=False, strip_nul=True)
_JSON_SESSION_COLUMNS = frozenset({"agent_data", "session_data", "summary", "metadata"})


def _session_sql(target: str, qualifier: str, d: _Dialect) -> str:
    names = ", ".join(_SESSION_COLUMNS)
    marks = ", ".join(d.mark + (d.json if name in _JSON_SESSION_COLUMNS else "") for name in _SESSION_COLUMNS)
    updates = ", ".join(f"{name} = excluded.{name}" for name in _SESSION_UPDATED)
    return (
        f"INSERT INTO {target} ({names}) VALUES ({marks}) "  # noqa: S608 - agno's table name, fixed columns
        f"ON CONFLICT (session_id) DO UPDATE SET updated_at = {d.mark}, {updates} "
        f"WHERE {qualifier}.user_id = {d.mark} OR {qualifier}.user_id IS NULL"
    )


def _run_sql(target: str, qualifier: str, table: str, d: _Dialect) -> str:
    names = ", ".join(_RUN_COLUMNS)
    next_index = f"(SELECT COALESCE(MAX(run_index) + 1, 0) FROM {table} WHERE session_id = {d.mark})"  # noqa: S608
    marks = ", ".join(
        f"COALESCE({d.mark}{d.integer}, {next_index})"
        if name == "run_index"
        else d.mark + (d.json if name == "run_data" else "")
        for name in _RUN_COLUMNS
    )
    return (
        f"INSERT INTO {target} ({names}) VALUES ({marks}) "  # noqa: S608 - agno's table name, fixed columns
        "ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, run_data = excluded.run_data, "
        "user_id = excluded.user_id, parent_run_id = excluded.parent_run_id, updated_at = excluded.updated_at, "
        f"run_index = COALESCE({qualifier}.run_index, excluded.run_index)"
    )


def _session_params(session: AgentSession, d: _Dialect) -> tuple[Any, ...]:
    """The row agno's `upsert_session` writes for an agent session, as statement parameters."""
    data = session.to_dict(include_runs=False)
    if d.strip_nul:
        data.update({key: sanitize_postgres_strings(data[key]) for key in _JSON_SESSION_COLUMNS if data.get(key)})
    now = int(time.time())
    created = data.get("created_at") or now if d.created_or_now else data.get("created_at")
    return (
        data.get("session_id"),
        "agent",
        data.get("agent_id"),
        data.get("user_id"),
        json_serializer(data.get("agent_data")),
        json_serializer(data.get("session_data")),
        json_serializer(data.get("summary")),
        json_serializer(data.get("metadata")),
        created,
        created,
        now,
        data.get("user_id"),
    )


def _run_params(row: dict[str, Any], d: _Dialect) -> tuple[Any, ...]:
    values: list[Any] = []
    for name in _RUN_COLUMNS:
        if name == "run_index":
            values += [row["run_index"], row["session_id"]]
        elif name == "run_data":
            data = sanitize_postgres_strings(row["run_data"]) if d.strip_nul else row["run_data"]
            values.append(json_serializer(data))
        else:
            values.append(row[name])
    return tuple(values)


class _Writer:
    """One `sqlite3` connection for a store's turn writes, used by one worker thread at a time."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def write(self, statements: list[_Statement]) -> None:
        with self._lock:
            connection = self._connection
            if connection is None:
                connection = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
                connection.execute("PRAGMA foreign_keys = ON")
                connection.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
                connection.execute(SQLITE_CACHE_PRAGMA)
                self._connection = connection
            connection.execute("BEGIN IMMEDIATE")
            try:
                for sql, params in statements:
                    connection.execute(sql, params)
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


class NewSessionsUnread:
    """Mixed in before an agno store (SQLite or PostgreSQL): a new thread's session is not read (see the module
    docstring)."""

    def _fresh_sessions(self) -> set[str]:
        fresh: set[str] | None = self.__dict__.get("_mindroom_fresh_sessions")
        if fresh is None:
            fresh = self.__dict__["_mindroom_fresh_sessions"] = set()
        return fresh

    @contextlib.contextmanager
    def expect_new_session(self, session_id: str) -> Iterator[None]:
        """While inside, reading `session_id` answers "none" without a query, until the session is written."""
        fresh = self._fresh_sessions()
        fresh.add(session_id)
        try:
            yield
        finally:
            fresh.discard(session_id)

    async def get_session(self, session_id: str, *args: Any, **kwargs: Any) -> Any:
        if session_id in self._fresh_sessions():
            return None
        parent: Any = super()
        return await parent.get_session(session_id, *args, **kwargs)

    async def upsert_session(self, session: Any, deserialize: bool | None = True) -> Any:
        self._fresh_sessions().discard(session.session_id)
        parent: Any = super()
        return await parent.upsert_session(session, deserialize=deserialize)


class _TurnState:
    """A store's session rows waiting for their run row, their flush tasks, and its two statements."""

    def __init__(self) -> None:
        self.pending: dict[str, tuple[Any, ...]] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.sql: tuple[str, str] | None = None


class _BatchedTurnWrites(NewSessionsUnread):
    """A session row waits for its run row, then both are written in one transaction (see the module docstring).

    Subclasses give the dialect, the statements for their tables, and how statements run in one transaction.
    """

    _dialect: _Dialect

    def _turn_state(self) -> _TurnState:
        state: _TurnState | None = self.__dict__.get("_mindroom_turn_state")
        if state is None:
            state = self.__dict__["_mindroom_turn_state"] = _TurnState()
        return state

    def _statements_for(self, sessions: Any, runs: Any) -> tuple[str, str]:
        raise NotImplementedError

    async def _run_in_transaction(self, statements: list[_Statement]) -> None:
        raise NotImplementedError

    async def _write(
        self, session: tuple[Any, ...] | None, run: tuple[Any, ...] | None, prelude: tuple[_Statement, ...] = ()
    ) -> None:
        state = self._turn_state()
        if state.sql is None:
            parent: Any = super()
            sessions = await parent._get_table(table_type="sessions", create_table_if_not_found=True)
            runs = await parent._get_table(table_type="runs", create_table_if_not_found=True)
            state.sql = self._statements_for(sessions, runs)
        session_sql, run_sql = state.sql
        statements = list(prelude)
        if session is not None:
            statements.append((session_sql, session))
        if run is not None:
            statements.append((run_sql, run))
        if statements:
            await self._run_in_transaction(statements)

    async def _flush(self, session_id: str | None = None) -> None:
        """Write the session rows still waiting (one session's, or all)."""
        pending = self._turn_state().pending
        ids = [session_id] if session_id is not None else list(pending)
        for waiting in ids:
            params = pending.pop(waiting, None)
            if params is not None:
                await self._write(params, None)

    async def upsert_session(self, session: Any, deserialize: bool | None = True) -> Any:
        if not isinstance(session, AgentSession) or not deserialize:
            await self._flush(session.session_id)
            return await super().upsert_session(session, deserialize=deserialize)
        state = self._turn_state()
        state.pending[session.session_id] = _session_params(session, self._dialect)
        self._fresh_sessions().discard(session.session_id)
        task = asyncio.get_running_loop().create_task(self._flush(session.session_id))
        state.tasks.add(task)
        task.add_done_callback(state.tasks.discard)
        return session

    async def upsert_run(
        self, run: Any, session_id: str, user_id: str | None = None, run_index: int | None = None
    ) -> None:
        row = build_single_run_row(run=run, session_id=session_id, user_id=user_id, run_index=run_index)
        prelude = self._index_lock(session_id) if row["run_index"] is None else ()
        session = self._turn_state().pending.pop(session_id, None)
        await self._write(session, _run_params(row, self._dialect), prelude)

    def _index_lock(self, session_id: str) -> tuple[_Statement, ...]:
        """Statements run first when the run's index is computed from the stored ones."""
        return ()

    async def get_session(self, session_id: str, *args: Any, **kwargs: Any) -> Any:
        await self._flush(session_id)
        return await super().get_session(session_id, *args, **kwargs)

    async def get_sessions(self, *args: Any, **kwargs: Any) -> Any:
        await self._flush()
        parent: Any = super()
        return await parent.get_sessions(*args, **kwargs)

    async def delete_session(self, *args: Any, **kwargs: Any) -> Any:
        await self._flush()
        parent: Any = super()
        return await parent.delete_session(*args, **kwargs)

    async def delete_sessions(self, *args: Any, **kwargs: Any) -> Any:
        await self._flush()
        parent: Any = super()
        return await parent.delete_sessions(*args, **kwargs)

    async def rename_session(self, *args: Any, **kwargs: Any) -> Any:
        await self._flush()
        parent: Any = super()
        return await parent.rename_session(*args, **kwargs)

    async def close(self) -> None:
        state = self._turn_state()
        await asyncio.gather(*state.tasks, return_exceptions=True)
        await self._flush()
        parent: Any = super()
        await parent.close()


class TurnWrites(_BatchedTurnWrites):
    """Mixed in before agno's `AsyncSqliteDb`: the turn's statements run in a worker thread on one `sqlite3`
    connection."""

    _dialect = _SQLITE
    db_file: str | None

    def _writer(self) -> _Writer:
        writer: _Writer | None = self.__dict__.get("_mindroom_writer")
        if writer is None:
            if self.db_file is None:
                msg = "the turn-writing session store needs a database file"
                raise ValueError(msg)
            writer = self.__dict__["_mindroom_writer"] = _Writer(self.db_file)
        return writer

    def _statements_for(self, sessions: Any, runs: Any) -> tuple[str, str]:
        session_table, run_table = f'"{sessions.name}"', f'"{runs.name}"'
        return (
            _session_sql(session_table, session_table, _SQLITE),
            _run_sql(run_table, run_table, run_table, _SQLITE),
        )

    async def _run_in_transaction(self, statements: list[_Statement]) -> None:
        await asyncio.to_thread(self._writer().write, statements)

    async def close(self) -> None:
        await super().close()
        self._writer().close()


class PostgresTurnWrites(_BatchedTurnWrites):
    """Mixed in before agno's `AsyncPostgresDb`: the turn's statements run on a connection of agno's own engine,
    as driver SQL (no statement building), in one transaction."""

    _dialect = _POSTGRES
    db_engine: Any

    def _statements_for(self, sessions: Any, runs: Any) -> tuple[str, str]:
        session_table, run_table = f'"{sessions.schema}"."{sessions.name}"', f'"{runs.schema}"."{runs.name}"'
        return (
            _session_sql(f"{session_table} AS t", "t", _POSTGRES),
            _run_sql(f"{run_table} AS t", "t", run_table, _POSTGRES),
        )

    def _index_lock(self, session_id: str) -> tuple[_Statement, ...]:
        # agno's own lock: two writers of one session cannot both read the same highest index.
        return (("SELECT pg_advisory_xact_lock(hashtext('agno_run_index'), hashtext(%s))", (session_id,)),)

    async def _run_in_transaction(self, statements: list[_Statement]) -> None:
        async with self.db_engine.begin() as connection:
            for sql, params in statements:
                await connection.exec_driver_sql(sql, params)


def expecting_new_session(db: AsyncBaseDb, session_id: str, new: bool) -> contextlib.AbstractContextManager[None]:
    """`db.expect_new_session(session_id)` when `new` and the store has it; otherwise nothing."""
    if new and isinstance(db, NewSessionsUnread):
        return db.expect_new_session(session_id)
    return contextlib.nullcontext()
