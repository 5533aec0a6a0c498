"""Conversation history in agno's session store: one database (or table pair) per agent, one session per thread.

By default each agent has a SQLite file; every prompt, answer and tool result of an agent is in it, so
the store creates the file 0600 in a 0700 folder when it opens it (`sqlite3` would create both with the
process umask, normally world-readable); it keeps agno's tables, not agno's store class, and needs no
SQLAlchemy (`sessions.sqlite_store`). When the daemon's state lives in PostgreSQL, the daemon passes that
database's URL (`database_url`) to every call here, and each agent gets the tables `sessions_<agent>` and
`sessions_<agent>_runs` in schema `mindroom` of that database, through agno's async store (psycopg),
all on one engine per event loop.

Enrichment blocks are rendered into the user turn the model sees, but they describe the moment of that
turn; they are stripped from the run's user messages before it is stored (or right after, for runs that
failed), so later turns see the user's own words in their history.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import re
import weakref
from pathlib import Path
from typing import Any

from agno.db.base import AsyncBaseDb, SessionType
from agno.run.agent import RunOutput
from agno.run.base import HISTORY_SKIP_STATUSES

from mindroom.hooks.enrichment import strip_enrichment_blocks
from mindroom.logging_config import get_logger
from mindroom.state.migrate import CopyCount

__all__ = [
    "RUN_EVENT_KEY",
    "SESSIONS_DIRNAME",
    "SESSION_SCHEMA",
    "close_session_dbs",
    "copy_sessions",
    "forget_turn",
    "load_history",
    "postgres_engine",
    "session_db",
    "session_db_path",
    "session_exists",
    "session_table",
    "sqlite_store_class",
    "strip_run_enrichment",
    "strip_run_output_enrichment",
    "strip_session_enrichment",
]

logger = get_logger(__name__)

SESSIONS_DIRNAME = "sessions"
RUN_EVENT_KEY = "event"
"""In a stored run's metadata: the Matrix message the run answered."""
SESSION_SCHEMA = "mindroom"
_MAX_TABLE_AGENT_CHARS = 40  # PostgreSQL cuts names at 63 bytes; `sessions_<agent>_runs` must stay unique
_AGENT_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,63}$")  # MindRoom allows capitals in names
_SKIPPED_STATUSES = frozenset(status.value for status in HISTORY_SKIP_STATUSES)
_HISTORY_ROLES = frozenset({"user", "assistant"})


async def _no_approval_update(self: Any, run_id: str, run_status: Any) -> int:
    """No approvals exist in agno's sense here (runs never pause), so there is nothing to update."""
    return 0


_STORE_METHODS = {"update_approval_run_status": _no_approval_update, "__module__": __name__}
"""Added to agno's stores: its per-run approvals update skipped, one SQL statement fewer for every turn stored."""


@functools.cache
def sqlite_store_class() -> type[Any]:
    """The SQLite session store (`sessions.sqlite_store`), imported on first use, with agno's approvals update
    skipped."""
    from mindroom.ai.sessions.sqlite_store import SqliteSessionStore

    return type("SessionStore", (SqliteSessionStore,), dict(_STORE_METHODS))


def _sqlite_store(path: Path) -> AsyncBaseDb:
    store: AsyncBaseDb = sqlite_store_class()(db_file=str(path), id=f"mindroom-sessions-{path.stem}")
    return store


@functools.cache
def _postgres_store_class() -> type[Any]:
    """agno's PostgreSQL session store, imported on first use (SQLite users never load it)."""
    from agno.db.postgres import AsyncPostgresDb

    from mindroom.ai.sessions.store import PostgresTurnWrites, session_store_class

    return session_store_class(AsyncPostgresDb, PostgresTurnWrites, "PostgresSessionStore", _STORE_METHODS)


def _postgres_store(engine: Any, agent_name: str) -> AsyncBaseDb:
    store: AsyncBaseDb = _postgres_store_class()(
        db_engine=engine,
        db_schema=SESSION_SCHEMA,
        session_table=session_table(agent_name),
        id=f"mindroom-sessions-{agent_name}",
    )
    return store


class _SessionDbs:
    """The open session databases, per event loop (their connections belong to the loop that opened them)."""

    def __init__(self) -> None:
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[object, AsyncBaseDb]] = (
            weakref.WeakKeyDictionary()
        )
        self._engines: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, Any]] = (
            weakref.WeakKeyDictionary()
        )

    def get(self, path: Path) -> AsyncBaseDb:
        dbs = self._by_loop.setdefault(asyncio.get_running_loop(), {})
        db = dbs.get(path)
        if db is None:
            db = _sqlite_store(path)
            dbs[path] = db
        return db

    def engine(self, url: str) -> Any:
        engines = self._engines.setdefault(asyncio.get_running_loop(), {})
        if url not in engines:
            from agno.db.postgres import create_async_postgres_engine

            # One engine (one pool) for every agent of the daemon (sessions and memories). No ping before each
            # checkout: it cost more than the turn's own queries (measured ~10 ms a turn); a connection a database
            # restart broke fails one read, which agno logs and answers without history, and is then replaced.
            engines[url] = create_async_postgres_engine(url, pool_size=5, max_overflow=5, pool_pre_ping=False)
        return engines[url]

    def get_postgres(self, url: str, agent_name: str) -> AsyncBaseDb:
        dbs = self._by_loop.setdefault(asyncio.get_running_loop(), {})
        db = dbs.get((url, agent_name))
        if db is None:
            db = _postgres_store(self.engine(url), agent_name)
            dbs[(url, agent_name)] = db
        return db

    async def close_all(self) -> None:
        loop = asyncio.get_running_loop()
        dbs = self._by_loop.pop(loop, {})
        failures: list[Exception] = []
        for key, db in dbs.items():
            # Writes the session rows that wait. A PostgreSQL store's close also disposes the shared engine
            # (as below): a later store's close opens a connection of it again, the last dispose ends it.
            try:
                await db.close()
            except Exception as error:  # the other stores are still closed; the first failure is raised below
                agent = key[1] if isinstance(key, tuple) else Path(str(key)).stem  # not the URL: it may hold a password
                logger.warning("session store not closed cleanly", agent=agent, error=str(error))
                failures.append(error)
        for engine in self._engines.pop(loop, {}).values():
            await engine.dispose()
        if failures:
            raise failures[0]


_DBS = _SessionDbs()


def session_db_path(storage_root: Path, agent_name: str) -> Path:
    """`<storage_root>/sessions/<agent_name>.db`; `ValueError` for names that are not agent names."""
    if not _AGENT_NAME.match(agent_name):
        msg = f"not a valid agent name for session storage: {agent_name!r}"
        raise ValueError(msg)
    return _resolved(Path(storage_root)) / SESSIONS_DIRNAME / f"{agent_name}.db"


@functools.lru_cache(maxsize=64)
def _resolved(storage_root: Path) -> Path:
    """`storage_root` resolved once: every turn asks for its session file, and resolving walks the path's folders."""
    return storage_root.resolve()


def postgres_engine(url: str) -> Any:
    """The running loop's SQLAlchemy engine for the state's PostgreSQL database (shared by sessions and memories)."""
    return _DBS.engine(url)


def session_table(agent_name: str) -> str:
    """The agent's session table in PostgreSQL: `sessions_<agent>` (long names shortened with a digest)."""
    session_db_path(Path(), agent_name)  # validates the name
    if len(agent_name) > _MAX_TABLE_AGENT_CHARS:
        digest = hashlib.sha256(agent_name.encode()).hexdigest()[:8]
        agent_name = f"{agent_name[: _MAX_TABLE_AGENT_CHARS - 9]}_{digest}"
    return f"sessions_{agent_name.lower()}"  # names differ in more than case (config checks)


def session_db(storage_root: Path, agent_name: str, database_url: str | None = None) -> AsyncBaseDb:
    """The agent's session store, reused per loop: in the PostgreSQL database at `database_url` (the state's),
    or without one a SQLite file under `storage_root`."""
    if database_url is not None:
        session_db_path(storage_root, agent_name)  # validates the name
        return _DBS.get_postgres(database_url, agent_name)
    return _DBS.get(session_db_path(storage_root, agent_name))


async def close_session_dbs() -> None:
    """Dispose every session store opened in the running event loop (call on shutdown)."""
    await _DBS.close_all()


def _strip_content(content: Any) -> tuple[Any, bool]:
    if isinstance(content, str):
        cleaned = strip_enrichment_blocks(content)
        return cleaned, cleaned != content
    if isinstance(content, list):
        changed = False
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                cleaned = strip_enrichment_blocks(part["text"])
                if cleaned != part["text"]:
                    part = {**part, "text": cleaned}
                    changed = True
            parts.append(part)
        return parts, changed
    return content, False


def _strip_run_data(run_data: dict[str, Any]) -> bool:
    """Strip enrichment from a stored run's input and user messages in place; True when anything changed."""
    changed = False
    run_input = run_data.get("input")
    if isinstance(run_input, dict) and "input_content" in run_input:
        run_input["input_content"], input_changed = _strip_content(run_input["input_content"])
        changed |= input_changed
    for message in run_data.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "user":
            message["content"], message_changed = _strip_content(message.get("content"))
            changed |= message_changed
    return changed


def strip_run_output_enrichment(run_output: RunOutput) -> None:
    """agno post-hook: strip enrichment from the finished run's input and user messages before agno stores it."""
    if run_output.input is not None:
        run_output.input.input_content, _changed = _strip_content(run_output.input.input_content)
    for message in run_output.messages or []:
        if message.role == "user":
            message.content, _changed = _strip_content(message.content)


async def _run_rows(db: AsyncBaseDb, session_id: str) -> list[dict[str, Any]]:
    result = await db.get_runs(session_id=session_id, deserialize=False)
    if isinstance(result, tuple):
        return [row for row in result[0] if isinstance(row.get("run_data"), dict)]
    return []


async def _save_row(db: AsyncBaseDb, row: dict[str, Any]) -> None:
    await db.upsert_run(row["run_data"], session_id=row["session_id"], user_id=row.get("user_id"))


async def strip_run_enrichment(db: AsyncBaseDb, run_id: str) -> bool:
    """Strip enrichment blocks from one stored run; True when the run was rewritten."""
    row = await db.get_run(run_id, deserialize=False)
    if not isinstance(row, dict) or not _strip_run_data(row["run_data"]):
        return False
    await _save_row(db, row)
    return True


async def strip_session_enrichment(
    agent_name: str, session_id: str, *, storage_root: Path, database_url: str | None = None
) -> int:
    """Strip enrichment blocks from every stored run of a session; returns how many runs were rewritten."""
    db = session_db(storage_root, agent_name, database_url)
    rewritten = 0
    for row in await _run_rows(db, session_id):
        if _strip_run_data(row["run_data"]):
            await _save_row(db, row)
            rewritten += 1
    if rewritten:
        logger.info("enrichment stripped from a stored session", agent=agent_name, session=session_id, runs=rewritten)
    return rewritten


async def load_history(
    agent_name: str, session_id: str, *, storage_root: Path, database_url: str | None = None
) -> list[tuple[str, str]]:
    """The (role, text) turns a model sees as history for this session: user and assistant, oldest first."""
    db = session_db(storage_root, agent_name, database_url)
    history: list[tuple[str, str]] = []
    for row in await _run_rows(db, session_id):
        if row.get("status") in _SKIPPED_STATUSES or row.get("parent_run_id") is not None:
            continue
        for message in row["run_data"].get("messages") or []:
            if message.get("role") in _HISTORY_ROLES and not message.get("from_history"):
                text = _text_of(message.get("content"))
                if text:
                    history.append((message["role"], text))
    return history


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str))
    return ""


async def forget_turn(
    agent_name: str, session_id: str, source_event_id: str, *, storage_root: Path, database_url: str | None = None
) -> int:
    """Remove the stored runs that answered `source_event_id` (an edited question takes their place)."""
    db = session_db(storage_root, agent_name, database_url)
    run_ids = [
        str(row["run_id"])
        for row in await _run_rows(db, session_id)
        if (row["run_data"].get("metadata") or {}).get(RUN_EVENT_KEY) == source_event_id and row.get("run_id")
    ]
    if run_ids:
        await db.delete_runs(run_ids)
        logger.info("stored turn replaced by an edit", agent=agent_name, session=session_id, runs=len(run_ids))
    return len(run_ids)


async def session_exists(
    agent_name: str, session_id: str, *, storage_root: Path, database_url: str | None = None
) -> bool:
    """Whether the conversation has a stored run yet."""
    return bool(await _run_rows(session_db(storage_root, agent_name, database_url), session_id))


def _session_files(storage_root: Path) -> list[Path]:
    folder = Path(storage_root).resolve() / SESSIONS_DIRNAME
    found = sorted(folder.glob("*.db")) if folder.is_dir() else []
    return [path for path in found if _AGENT_NAME.match(path.stem)]


async def copy_sessions(storage_root: Path, url: str) -> list[CopyCount]:
    """Copy every agent's SQLite sessions and runs into PostgreSQL (laid out as `session_db` reads them)."""
    from agno.db.postgres import create_async_postgres_engine

    counts: list[CopyCount] = []
    engine = create_async_postgres_engine(url)
    try:
        for path in await asyncio.to_thread(_session_files, storage_root):
            source = _sqlite_store(path)
            target = _postgres_store(engine, path.stem)
            try:
                counts += await _copy_agent(path.stem, source, target)
            finally:
                await source.close()
    finally:
        await engine.dispose()
    return counts


async def _copy_agent(agent_name: str, source: AsyncBaseDb, target: AsyncBaseDb) -> list[CopyCount]:
    sessions: list[Any] = []
    for kind in (SessionType.AGENT, SessionType.TEAM):  # a team's file holds team sessions
        found = await source.get_sessions(session_type=kind, include_runs=False)
        assert isinstance(found, list)
        sessions += found
    run_ids: set[str] = set()
    for session in sessions:
        await target.upsert_session(session)
        for row in await _all_runs(source, session.session_id):
            run_ids.add(row["run_id"])
            await target.upsert_run(
                row["run_data"],
                session_id=row["session_id"],
                user_id=row.get("user_id"),
                run_index=row.get("run_index"),
            )
    copied: list[Any] = []
    for kind in (SessionType.AGENT, SessionType.TEAM):
        found = await target.get_sessions(session_type=kind, include_runs=False)
        assert isinstance(found, list)
        copied += found
    wanted = {session.session_id for session in sessions}
    found_runs = {row["run_id"] for sid in wanted for row in await _all_runs(target, sid)}
    return [
        CopyCount(f"sessions of {agent_name}", len(wanted), len(wanted & {s.session_id for s in copied})),
        CopyCount(f"runs of {agent_name}", len(run_ids), len(run_ids & found_runs)),
    ]


async def _all_runs(db: AsyncBaseDb, session_id: str) -> list[dict[str, Any]]:
    result = await db.get_runs(session_id=session_id, deserialize=False)
    return list(result[0]) if isinstance(result, tuple) else []
