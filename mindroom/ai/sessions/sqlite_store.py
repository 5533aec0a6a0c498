"""The SQLite session store: agno's session interface on agno's tables, through `sqlite3` in a worker thread.

agno's `AsyncSqliteDb` reaches SQLite through SQLAlchemy's async layer and aiosqlite; loading them
cost the daemon about 19 MB of memory, and every statement is built anew. This store keeps agno's
tables, schema and row encoding (agno's own store reads and writes its files, and reads files agno
made) and implements the calls agno's agents and teams and the daemon make: reading a session with
its runs, listing sessions, storing a session, reading, storing and deleting runs, renaming and
deleting a session. Each runs its statements on the store's one `sqlite3` connection in a worker
thread. agno's other store methods (memories, metrics, evals, knowledge, traces, ...) are not for
session files: they raise `NotImplementedError` naming the method.

`SqliteSessionStore` adds the two savings of `mindroom.ai.sessions.store`: a new thread's session is
not read, and a turn's session row and run row are written in one transaction; every other method
first writes the rows that wait.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from agno.db.base import AsyncBaseDb, SessionType
from agno.db.migrations.manager import MigrationManager
from agno.db.utils import (
    SessionRunObjectCache,
    deserialize_run,
    deserialize_session,
    deserialize_session_json_fields,
    deserialize_sessions,
    validate_pagination,
)
from agno.session.agent import AgentSession
from agno.session.team import TeamSession

from mindroom.ai.sessions import sqlite_queries as queries
from mindroom.ai.sessions.rows import SQLITE, run_params, run_sql, session_params, session_sql
from mindroom.ai.sessions.sqlite_tables import Tables, existing_tables, make_tables, transaction
from mindroom.ai.sessions.store import _BatchedTurnWrites, _Statement, _writing_first
from mindroom.private_files import open_private_database

__all__ = ["SqliteSessionStore", "SqliteSessions"]

_T = TypeVar("_T")
_ABSENT_TABLES = ("agno_tool_results", "agno_transcripts")  # agno's delete_session cascades to them


class _Connection:
    """A store's one `sqlite3` connection, opened on first use, used by one worker thread at a time."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def run(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        with self._lock:
            connection = self._connection
            if connection is None:
                # WAL as agno's store sets it; a turn's rows survive a crash of the daemon without an fsync per
                # turn (NORMAL mode): only a crash of the machine can lose the last turns' history, never the file.
                # `sqlite3` waits up to 5 s for another writer's lock (its default timeout).
                connection = open_private_database(Path(self._path), synchronous_normal=True)
                connection.execute("PRAGMA foreign_keys = ON")
                self._connection = connection
            return work(connection)

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


class SqliteSessions(AsyncBaseDb):
    """agno's session and run rows in the SQLite file `db_file`, without SQLAlchemy (see the module docstring)."""

    def __init__(
        self, db_file: str, id: str | None = None, session_table: str | None = None, runs_table: str | None = None
    ) -> None:
        super().__init__(id=id, session_table=session_table, runs_table=runs_table)
        path = Path(db_file).resolve()
        self.db_file: str | None = str(path)
        self._tables = Tables(self.session_table_name, self.runs_table_name, self.versions_table_name)
        self._connection = _Connection(str(path))
        self._found: set[str] = set()
        self._run_object_cache = SessionRunObjectCache()

    async def _call(self, work: Callable[..., _T], *args: Any) -> _T:
        return await asyncio.to_thread(self._connection.run, lambda connection: work(connection, *args))

    async def _where_present(self, table: str, work: Callable[[sqlite3.Connection, set[str]], _T], absent: _T) -> _T:
        """`work(connection, tables found)` in the worker thread, or `absent` when the file has no `table` yet."""

        def run(connection: sqlite3.Connection) -> _T:
            found = self._present(connection)
            return work(connection, found) if table in found else absent

        return await self._call(run)

    def _present(self, connection: sqlite3.Connection, create: bool = False) -> set[str]:
        """The session tables the file has ("sessions", "runs"), created first when `create`."""
        if self._found == {"sessions", "runs"}:
            return self._found
        found = existing_tables(connection, self._tables)
        if create and found != {"sessions", "runs"}:
            make_tables(connection, self._tables, MigrationManager(self).latest_schema_version.public)
            found = existing_tables(connection, self._tables)
        self._found = found
        return found

    def _write(self, connection: sqlite3.Connection, statements: list[_Statement]) -> None:
        self._present(connection, create=True)
        with transaction(connection, write=True):
            for sql, params in statements:
                connection.execute(sql, params)

    async def close(self) -> None:
        """Close the connection (the next call opens it again)."""
        await asyncio.to_thread(self._connection.close)

    async def table_exists(self, table_name: str) -> bool:
        """Whether the file has the table `table_name`."""

        def exists(connection: sqlite3.Connection) -> bool:
            sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
            return connection.execute(sql, (table_name,)).fetchone() is not None

        return await self._call(exists)

    async def get_session(
        self,
        session_id: str,
        session_type: SessionType | None = None,
        user_id: str | None = None,
        deserialize: bool | None = True,
        runs_limit: int | None = None,
    ) -> Any:
        """A session with its runs (the last `runs_limit` a history shows, when given), or None."""

        def read(connection: sqlite3.Connection, found: set[str]) -> Any:
            return queries.read_session(
                connection, self._tables, found, session_id, session_type, user_id, bool(deserialize), runs_limit
            )

        answer = await self._where_present("sessions", read, None)
        if answer is None:
            return None
        raw, run_rows = answer
        if not deserialize:
            return raw
        session = deserialize_session(session_type, raw)
        if run_rows is not None:
            session.runs = self._run_object_cache.runs_from_rows(session_id, run_rows)  # type: ignore[assignment]
        return session

    async def get_sessions(
        self,
        session_type: SessionType | None = None,
        user_id: str | None = None,
        component_id: str | None = None,
        session_name: str | None = None,
        start_timestamp: int | None = None,
        end_timestamp: int | None = None,
        limit: int | None = None,
        page: int | None = None,
        sort_by: str | None = None,
        sort_order: str | None = None,
        deserialize: bool | None = True,
        include_runs: bool = True,
    ) -> Any:
        """The sessions matching the filters (with their runs unless not `include_runs`); rows and count when
        not `deserialize`."""
        validate_pagination(limit, page)
        clauses: list[str] = []
        params: list[Any] = []
        components = {SessionType.AGENT: "agent_id", SessionType.TEAM: "team_id", SessionType.WORKFLOW: "workflow_id"}
        for clause, value in (
            ("user_id = ?", user_id),
            (
                f"{components[session_type]} = ?"
                if session_type is not None
                else "(agent_id = ? OR team_id = ? OR workflow_id = ?)",
                component_id,
            ),
            ("created_at >= ?", start_timestamp),
            ("created_at <= ?", end_timestamp),
            ("session_data LIKE ?", None if session_name is None else f"%{session_name}%"),
            ("session_type = ?", None if session_type is None else session_type.value),
        ):
            if value is not None:
                clauses.append(clause)
                params += [value] * clause.count("?")

        def read(connection: sqlite3.Connection, found: set[str]) -> tuple[list[dict[str, Any]], int] | None:
            where = (" AND ".join(clauses), params)
            return queries.read_sessions(
                connection, self._tables, found, where, (sort_by, sort_order), (limit, page), include_runs
            )

        answer = await self._where_present("sessions", read, None)
        if answer is None:
            return [] if deserialize else ([], 0)
        sessions, count = answer
        if not deserialize:
            return sessions, count
        return deserialize_sessions(session_type, sessions) if sessions else []

    async def upsert_session(self, session: Any, deserialize: bool | None = True) -> Any:
        """Store a session row as agno does (another user's write does not take a session over)."""
        kind = (
            "agent" if isinstance(session, AgentSession) else "team" if isinstance(session, TeamSession) else "workflow"
        )
        table = f'"{self._tables.sessions}"'
        sql, params = session_sql(table, table, SQLITE, kind), session_params(session, SQLITE, kind)

        def write(connection: sqlite3.Connection) -> dict[str, Any] | None:
            self._present(connection, create=True)
            with transaction(connection, write=True):
                found = queries.rows(connection, sql + " RETURNING *", params)
            return deserialize_session_json_fields(found[0]) if found else None

        raw = await self._call(write)
        if raw is None:
            return None
        if not deserialize:
            raw["runs"] = [run if isinstance(run, dict) else run.to_dict() for run in session.runs or []]
            return raw
        raw.pop("runs", None)
        stored = deserialize_session(None, raw)
        stored.runs = session.runs
        return stored

    async def upsert_run(
        self, run: Any, session_id: str, user_id: str | None = None, run_index: int | None = None
    ) -> None:
        """Store a run row as agno does (a run without an index gets its session's next one)."""
        table = f'"{self._tables.runs}"'
        statement = (run_sql(table, table, table, SQLITE), run_params(run, session_id, user_id, run_index, SQLITE))
        await self._call(self._write, [statement])

    async def get_run(self, run_id: str, deserialize: bool | None = True) -> Any:
        """One run (its row when not `deserialize`), or None."""

        def read(connection: sqlite3.Connection, _found: set[str]) -> list[dict[str, Any]]:
            return queries.rows(connection, f"SELECT * FROM {self._tables.runs} WHERE run_id = ?", (run_id,))  # noqa: S608

        found: list[dict[str, Any]] = await self._where_present("runs", read, [])
        if not found:
            return None
        return found[0] if not deserialize else deserialize_run(found[0].get("run_type"), found[0]["run_data"])

    async def get_runs(
        self,
        session_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        team_id: str | None = None,
        workflow_id: str | None = None,
        status: Any = None,
        limit: int | None = None,
        page: int | None = None,
        sort_by: str | None = None,
        sort_order: str | None = None,
        deserialize: bool | None = True,
    ) -> Any:
        """The runs matching the filters, oldest first unless sorted; rows and count when not `deserialize`."""
        validate_pagination(limit, page)
        filters = {
            name: value
            for name, value in (
                ("session_id", session_id),
                ("user_id", user_id),
                ("agent_id", agent_id),
                ("team_id", team_id),
                ("workflow_id", workflow_id),
                ("status", getattr(status, "value", status)),
            )
            if value is not None
        }

        def read(connection: sqlite3.Connection, _found: set[str]) -> tuple[list[dict[str, Any]], int]:
            return queries.read_runs(connection, self._tables, filters, (sort_by, sort_order), (limit, page))

        answer: tuple[list[dict[str, Any]], int] = await self._where_present("runs", read, ([], 0))
        found, count = answer
        if not deserialize:
            return found, count
        return [deserialize_run(row.get("run_type"), row["run_data"]) for row in found]

    async def delete_run(self, run_id: str) -> bool:
        """Delete one run; whether it was there."""
        return bool(await self._delete_runs([run_id]))

    async def delete_runs(self, run_ids: list[str]) -> None:
        """Delete the given runs."""
        await self._delete_runs(list(run_ids))

    async def _delete_runs(self, run_ids: list[str]) -> int:
        """Delete the given runs; how many there were."""

        def delete(connection: sqlite3.Connection, _found: set[str]) -> int:
            return queries.delete_runs(connection, self._tables, run_ids)

        return await self._where_present("runs", delete, 0)

    async def delete_session(self, session_id: str, user_id: str | None = None) -> bool:
        """Delete a session (only `user_id`'s, when given) and its runs; whether it was there."""

        def delete(connection: sqlite3.Connection, found: set[str]) -> bool:
            for table in _ABSENT_TABLES:
                if connection.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone():
                    msg = f"delete_session of the SQLite session store: {self.db_file} has agno's table {table}"
                    raise NotImplementedError(msg)
            return queries.delete_session(connection, self._tables, found, session_id, user_id)

        deleted = await self._where_present("sessions", delete, False)
        if deleted:
            self._run_object_cache.drop_session(session_id)
        return deleted

    async def rename_session(
        self,
        session_id: str,
        session_type: SessionType | None,
        session_name: str,
        user_id: str | None = None,
        deserialize: bool | None = True,
    ) -> Any:
        """Set a session's name in its data, as agno does."""
        session = await self.get_session(session_id, session_type, user_id=user_id, deserialize=True)
        if session is None:
            return None
        session.session_data = {**(session.session_data or {}), "session_name": session_name}
        return await self.upsert_session(session, deserialize=deserialize)


def _not_implemented(name: str) -> Callable[..., Any]:
    async def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        msg = f"{name} is not implemented by the SQLite session store (it holds agno's sessions and runs only)"
        raise NotImplementedError(msg)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Not implemented here: agno's `{name}` is not for session files."
    return method


# Found on agno's base class when this module loads, so a method a newer agno adds is refused by name too;
# agno's two session methods with a default body are refused as well (their defaults do nothing useful).
for _name in sorted({*SqliteSessions.__abstractmethods__, "cancel_pending_run", "reassign_session_owner"}):
    setattr(SqliteSessions, _name, _not_implemented(_name))
SqliteSessions.__abstractmethods__ = frozenset()  # ABCMeta computed them before the methods above were set


class SqliteSessionStore(_BatchedTurnWrites, SqliteSessions):
    """The SQLite session store with new threads' sessions unread and a turn's two rows written together."""

    _dialect = SQLITE

    async def _statements(self) -> tuple[str, str]:
        state = self._turn_state()
        if state.sql is None:
            await self._call(self._present, True)
            sessions, runs = f'"{self._tables.sessions}"', f'"{self._tables.runs}"'
            state.sql = (session_sql(sessions, sessions, SQLITE), run_sql(runs, runs, runs, SQLITE))
        return state.sql

    async def _run_in_transaction(self, statements: list[_Statement]) -> None:
        await self._call(self._write, statements)


# Every other read and change first writes the session rows that wait (the turn's own are batched above).
for _name in ("get_sessions", "get_run", "get_runs", "_delete_runs", "delete_session", "rename_session"):
    setattr(SqliteSessionStore, _name, _writing_first(SqliteSessionStore, _name))
