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
- `_BatchedTurnWrites`: an agent session's row waits in memory for the run row agno writes right after
  it, and both go to the database in one transaction, with the statements agno itself would run
  (`mindroom.ai.sessions.rows`). `PostgresTurnWrites` runs them on one connection of agno's engine, as
  driver SQL; the SQLite store (`mindroom.ai.sessions.sqlite_store`) in one trip to its worker thread.
  A session row with no run row behind it is written by a task of its own as soon as the turn's task
  yields.

`session_store_class` builds a store class from agno's (PostgreSQL's). Every other coroutine method of
agno's store (found on agno's class when it is built, so methods a newer agno adds are covered) first
writes what waits, and
waits for writes under way, so every read and change sees the rows written before it; the upserts it
makes itself (`rename_session` is a read and an upsert) are agno's own, with agno's results. When the
installed agno's tables or row helpers are not what the batched writes write, it logs what differs
and builds the store without them: agno writes each row itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from agno.db.base import AsyncBaseDb
from agno.session.agent import AgentSession

from mindroom.ai.sessions.rows import (
    POSTGRES,
    RUN_COLUMNS,
    Dialect,
    agno_differences,
    run_params,
    run_sql,
    session_params,
    session_sql,
)
from mindroom.logging_config import get_logger
from mindroom.tasks import TaskOwner

__all__ = [
    "NewSessionsUnread",
    "PostgresTurnWrites",
    "expecting_new_session",
    "session_store_class",
]

logger = get_logger(__name__)

_Statement = tuple[str, tuple[Any, ...]]
_RUN_INDEX = RUN_COLUMNS.index("run_index")  # in `run_params`, None when the index is computed
_IN_AGNOS_METHOD: ContextVar[bool] = ContextVar("mindroom_in_agnos_store_method", default=False)
"""Set while one of agno's own store methods runs: the upserts it makes are agno's, with its results."""
_TABLE_UPKEEP = frozenset({"table_exists", "get_latest_schema_version", "upsert_schema_version"})
"""agno's bookkeeping of its tables, called while a table is resolved for a write: no session rows in it."""


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
    """A store's session rows waiting for their run row, the writes of them under way, and its two statements."""

    def __init__(self) -> None:
        self.pending: dict[str, tuple[Any, ...]] = {}
        self.writing: dict[str, asyncio.Future[None]] = {}
        self.tasks = TaskOwner("session store")
        self.sql: tuple[str, str] | None = None


class _BatchedTurnWrites(NewSessionsUnread):
    """A session row waits for its run row, then both are written in one transaction (see the module docstring).

    Subclasses give the dialect, the statements for their tables, and how statements run in one transaction.
    """

    _dialect: Dialect

    def _turn_state(self) -> _TurnState:
        state: _TurnState | None = self.__dict__.get("_mindroom_turn_state")
        if state is None:
            state = self.__dict__["_mindroom_turn_state"] = _TurnState()
        return state

    async def _run_in_transaction(self, statements: list[_Statement]) -> None:
        raise NotImplementedError

    async def _statements(self) -> tuple[str, str]:
        """The session row's and the run row's statement, kept in the turn state (tables made on first use)."""
        raise NotImplementedError

    async def _settled(self, session_id: str) -> None:
        """Return once no write of `session_id`'s rows is under way."""
        writing = self._turn_state().writing
        while (busy := writing.get(session_id)) is not None:
            await asyncio.shield(busy)

    async def _write_rows(self, session_id: str, statements: list[_Statement]) -> None:
        """Run `statements` (rows of `session_id`) in one transaction; its readers wait until they are written."""
        state = self._turn_state()
        done = state.writing[session_id] = asyncio.get_running_loop().create_future()
        try:
            await self._run_in_transaction(statements)
        finally:
            del state.writing[session_id]
            done.set_result(None)

    async def _flush(self, session_id: str | None = None) -> None:
        """Write the session rows still waiting (one session's, or all), and wait for those being written."""
        state = self._turn_state()
        for waiting in [session_id] if session_id is not None else [*state.pending, *state.writing]:
            while True:
                await self._settled(waiting)
                if waiting not in state.pending:
                    break
                if state.sql is None:  # resolving agno's tables may wait: settle again after it
                    await self._statements()
                    continue
                await self._write_rows(waiting, [(state.sql[0], state.pending.pop(waiting))])
                break

    async def upsert_session(self, session: Any, deserialize: bool | None = True) -> Any:
        if _IN_AGNOS_METHOD.get() or not isinstance(session, AgentSession) or not deserialize:
            await self._flush(session.session_id)
            return await super().upsert_session(session, deserialize=deserialize)
        # The session as given, not re-read as agno's returns it: agno's turn does not use what this returns.
        state = self._turn_state()
        state.pending[session.session_id] = session_params(session, self._dialect)
        self._fresh_sessions().discard(session.session_id)
        state.tasks.spawn(self._flush(session.session_id), "writing a session row")
        return session

    async def upsert_run(
        self, run: Any, session_id: str, user_id: str | None = None, run_index: int | None = None
    ) -> None:
        if _IN_AGNOS_METHOD.get():
            await self._flush(session_id)
            parent: Any = super()
            await parent.upsert_run(run, session_id, user_id=user_id, run_index=run_index)
            return
        session_sql, run_sql = await self._statements()
        params = run_params(run, session_id, user_id, run_index, self._dialect)
        statements = list(self._index_lock(session_id)) if params[_RUN_INDEX] is None else []
        await self._settled(session_id)
        session = self._turn_state().pending.pop(session_id, None)
        if session is not None:
            statements.append((session_sql, session))
        await self._write_rows(session_id, [*statements, (run_sql, params)])

    def _index_lock(self, session_id: str) -> tuple[_Statement, ...]:
        """Statements run first when the run's index is computed from the stored ones."""
        return ()

    async def get_session(self, session_id: str, *args: Any, **kwargs: Any) -> Any:
        await self._flush(session_id)
        return await super().get_session(session_id, *args, **kwargs)

    async def close(self) -> None:
        state = self._turn_state()
        await state.tasks.settled()
        await self._flush()
        parent: Any = super()
        await parent.close()


class PostgresTurnWrites(_BatchedTurnWrites):
    """Mixed in before agno's `AsyncPostgresDb`: the turn's statements run on a connection of agno's own engine,
    as driver SQL (no statement building), in one transaction."""

    _dialect = POSTGRES
    db_engine: Any
    metadata: Any  # agno's store's SQLAlchemy tables

    async def _statements(self) -> tuple[str, str]:
        """The session row's and the run row's statement on agno's tables, resolved by agno on first use."""
        state = self._turn_state()
        if state.sql is None:
            parent: Any = super()
            known = set(self.metadata.tables)
            try:
                sessions = await parent._get_table(table_type="sessions", create_table_if_not_found=True)
                runs = await parent._get_table(table_type="runs", create_table_if_not_found=True)
            except Exception:
                # agno defines a table in its metadata before creating it, keeps the definition when the creation
                # fails (the database unreachable) and then refuses to define it again: forget what this attempt
                # defined, so the next write, with the database back, resolves the tables afresh.
                for key in set(self.metadata.tables) - known:
                    parent._invalidate_table_cache(self.metadata.tables[key].name)
                raise
            session_table, run_table = f'"{sessions.schema}"."{sessions.name}"', f'"{runs.schema}"."{runs.name}"'
            state.sql = (
                session_sql(f"{session_table} AS t", "t", POSTGRES),
                run_sql(f"{run_table} AS t", "t", run_table, POSTGRES),
            )
        return state.sql

    def _index_lock(self, session_id: str) -> tuple[_Statement, ...]:
        # agno's own lock: two writers of one session cannot both read the same highest index.
        return (("SELECT pg_advisory_xact_lock(hashtext('agno_run_index'), hashtext(%s))", (session_id,)),)

    async def _run_in_transaction(self, statements: list[_Statement]) -> None:
        async with self.db_engine.begin() as connection:
            for sql, params in statements:
                await connection.exec_driver_sql(sql, params)


def _writing_first(store: type[Any], name: str) -> Callable[..., Any]:
    """`store`'s inherited coroutine method `name`, run once the session rows that wait are written."""

    async def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        await self._flush()
        inside = _IN_AGNOS_METHOD.set(True)
        try:
            return await getattr(super(store, self), name)(*args, **kwargs)
        finally:
            _IN_AGNOS_METHOD.reset(inside)

    functools.update_wrapper(method, getattr(store, name))
    return method


def session_store_class(
    base: type[Any], batching: type[_BatchedTurnWrites], name: str, methods: Mapping[str, Any]
) -> type[Any]:
    """agno's store class `base` with `methods`, new threads' sessions unread, and a turn's writes batched by
    `batching` (`PostgresTurnWrites`), unless the installed agno differs from what they write."""
    differences = agno_differences(base, batching._dialect)
    if differences:
        logger.warning(
            "agno's session store is not what the batched turn writes expect: agno writes each row itself",
            store=base.__name__,
            differences=differences,
        )
        return type(name, (NewSessionsUnread, base), dict(methods))
    store = type(name, (batching, base), dict(methods))
    own = {attribute for cls in batching.__mro__ if cls is not object for attribute in vars(cls)} | set(methods)
    for attribute, _method in inspect.getmembers(base, inspect.iscoroutinefunction):
        if not attribute.startswith("_") and attribute not in own and attribute not in _TABLE_UPKEEP:
            setattr(store, attribute, _writing_first(store, attribute))
    return store


def expecting_new_session(db: AsyncBaseDb, session_id: str, new: bool) -> contextlib.AbstractContextManager[None]:
    """`db.expect_new_session(session_id)` when `new` and the store has it; otherwise nothing."""
    if new and isinstance(db, NewSessionsUnread):
        return db.expect_new_session(session_id)
    return contextlib.nullcontext()
