"""What agents remember about the people they talk to: agno's memory table, scoped per person and agent.

Each memory row is agno's `UserMemory` with `user_id` the person's Matrix id and `agent_id` the agent's
name. Everything here reads and writes one (person, agent) scope: `MemoryManager` sees only that scope's
memories when it decides what to add or change, so one agent never learns what another was told, and
nobody's memories reach another person's turns. The memory model reads the exchange with pasted secrets
redacted (`redact_message`), and what it writes is redacted again (`redact_text`) before it is stored.

Where: `<data>/memory/memories.db` (SQLite, private) by default; with the state in PostgreSQL, the table
`mindroom.memories` on the engine the session stores share. `copy_memories` moves them
(`mindroom state migrate`).
"""

from __future__ import annotations

import asyncio
import functools
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agno.db.base import AsyncBaseDb
from agno.db.schemas import UserMemory
from agno.models.message import Message

from mindroom.ai.sessions.history import SESSION_SCHEMA, postgres_engine
from mindroom.logging_config import get_logger, redact_message, redact_text
from mindroom.private_files import prepare_private_sqlite, private_dir
from mindroom.state.migrate import CopyCount

__all__ = [
    "MEMORY_TABLE",
    "MemoryItem",
    "close_memory_dbs",
    "copy_memories",
    "extract_memories",
    "forget_memories",
    "memory_db",
    "memory_db_path",
    "recall_memories",
]

logger = get_logger(__name__)

MEMORY_TABLE = "memories"
_RECALL_LIMIT = 50


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One thing an agent remembers about a person."""

    memory_id: str
    agent: str
    text: str
    updated_at: int


def memory_db_path(storage_root: Path) -> Path:
    """`<data>/memory/memories.db`."""
    return Path(storage_root).resolve() / "memory" / "memories.db"


def _scoped(store_class: type[Any], *, makes_table: bool) -> type[Any]:
    """agno's store, bound to one agent: reads see that agent's memories only, writes are redacted and stay in it.

    Only public methods of agno's store are overridden (the ones `MemoryManager` reads, writes and deletes
    through); a memory of another agent is neither rewritten nor deleted by id.
    With `makes_table`, the memory table is made before the first read or write, through agno's private
    `_get_table`: `tests/ai/test_agno_contract.py` pins it (and why it is needed).
    """

    class ScopedMemoryStore(store_class):  # type: ignore[misc,valid-type]
        scope_agent: str | None = None
        _table_ready = not makes_table

        async def _ready(self) -> None:
            # agno's async SQLite store writes a memory only into an existing table (and says it did when
            # there is none); its PostgreSQL store makes the table on the first write by itself.
            if not self._table_ready:
                await self._get_table(table_type="memories", create_table_if_not_found=True)
                self._table_ready = True

        async def get_user_memories(self, user_id: str | None = None, agent_id: str | None = None, **kw: Any) -> Any:
            await self._ready()
            return await super().get_user_memories(user_id=user_id, agent_id=agent_id or self.scope_agent, **kw)

        async def _check_own_memory(self, memory_id: str, user_id: str | None) -> None:
            """`PermissionError` when the memory with this id is another agent's."""
            existing = await super().get_user_memory(memory_id, deserialize=True, user_id=user_id)
            if existing is not None and existing.agent_id not in (None, self.scope_agent):
                raise PermissionError("that memory belongs to another agent")

        async def upsert_user_memory(self, memory: UserMemory, deserialize: bool | None = True) -> Any:
            await self._ready()
            if self.scope_agent is not None:
                if memory.memory_id is not None:
                    await self._check_own_memory(memory.memory_id, memory.user_id)
                memory.agent_id = self.scope_agent
            memory.memory = redact_text(memory.memory)
            memory.input = redact_text(memory.input) if memory.input else None
            memory.created_at = memory.created_at or int(time.time())
            return await super().upsert_user_memory(memory, deserialize=deserialize)

        async def delete_user_memory(self, memory_id: str, user_id: str | None = None) -> Any:
            await self._ready()
            if self.scope_agent is not None:
                await self._check_own_memory(memory_id, user_id)
            return await super().delete_user_memory(memory_id, user_id=user_id)

    ScopedMemoryStore.__qualname__ = ScopedMemoryStore.__name__ = f"Scoped{store_class.__name__}"
    return ScopedMemoryStore


@functools.cache
def _sqlite_class() -> type[Any]:
    from agno.db.sqlite import AsyncSqliteDb

    return _scoped(AsyncSqliteDb, makes_table=True)


@functools.cache
def _postgres_class() -> type[Any]:
    from agno.db.postgres import AsyncPostgresDb

    return _scoped(AsyncPostgresDb, makes_table=False)


class _MemoryDbs:
    """One store per (place, agent) and event loop; SQLite stores share an engine per loop."""

    def __init__(self) -> None:
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[object, Any]] = (
            weakref.WeakKeyDictionary()
        )

    def get(self, storage_root: Path, database_url: str | None, agent: str | None) -> AsyncBaseDb:
        entries = self._by_loop.setdefault(asyncio.get_running_loop(), {})
        key = (database_url or str(memory_db_path(storage_root)), agent)
        db = entries.get(key)
        if db is not None:
            return db  # type: ignore[no-any-return]
        if database_url is not None:
            db = _postgres_class()(
                db_engine=postgres_engine(database_url), db_schema=SESSION_SCHEMA, memory_table=MEMORY_TABLE
            )
        else:
            engine_key = ("engine", key[0])
            if engine_key not in entries:
                from sqlalchemy.ext.asyncio import create_async_engine

                path = memory_db_path(storage_root)
                private_dir(path.parent)
                prepare_private_sqlite(path)
                entries[engine_key] = create_async_engine(f"sqlite+aiosqlite:///{path}")
            db = _sqlite_class()(db_engine=entries[engine_key], memory_table=MEMORY_TABLE)
        db.scope_agent = agent
        entries[key] = db
        return db  # type: ignore[no-any-return]

    async def close_all(self) -> None:
        entries = self._by_loop.pop(asyncio.get_running_loop(), {})
        for key, value in entries.items():
            if isinstance(key, tuple) and key[0] == "engine":
                await value.dispose()


_DBS = _MemoryDbs()


def memory_db(storage_root: Path, database_url: str | None, agent: str | None) -> AsyncBaseDb:
    """The memory store of one agent (None: every agent's, for listing and wiping), reused per loop."""
    return _DBS.get(storage_root, database_url, agent)


async def close_memory_dbs() -> None:
    """Close the memory stores' SQLite engines of the running loop (PostgreSQL's belongs to the sessions)."""
    await _DBS.close_all()


def _item(memory: UserMemory) -> MemoryItem:
    return MemoryItem(
        str(memory.memory_id), memory.agent_id or "", memory.memory, int(memory.updated_at or memory.created_at or 0)
    )


async def recall_memories(
    user_id: str, *, agent: str | None, storage_root: Path, database_url: str | None, limit: int = _RECALL_LIMIT
) -> list[MemoryItem]:
    """What `agent` (None: any agent) remembers about `user_id`, newest first."""
    db = memory_db(storage_root, database_url, agent)
    found = await db.get_user_memories(user_id=user_id, sort_by="updated_at", sort_order="desc", limit=limit)
    return [_item(memory) for memory in found if isinstance(memory, UserMemory)]


async def forget_memories(
    user_id: str, memory_ids: list[str] | None, *, storage_root: Path, database_url: str | None
) -> int:
    """Delete these memories of `user_id` (None: all of them, every agent's); returns how many were deleted."""
    db = memory_db(storage_root, database_url, None)
    if memory_ids is None:
        memory_ids = [item.memory_id for item in await recall_memories(
            user_id, agent=None, storage_root=storage_root, database_url=database_url, limit=100_000
        )]  # fmt: skip
    owned = {
        item.memory_id
        for item in await recall_memories(
            user_id, agent=None, storage_root=storage_root, database_url=database_url, limit=100_000
        )
    }
    wanted = [memory_id for memory_id in memory_ids if memory_id in owned]
    if wanted:
        await db.delete_user_memories(wanted, user_id=user_id)
    return len(wanted)


async def extract_memories(
    model: Any,
    user_id: str,
    agent: str,
    exchange: list[tuple[str, str]],
    *,
    storage_root: Path,
    database_url: str | None,
) -> bool:
    """Let `model` (an agno model) write down what this exchange tells about the person; True when it changed any."""
    from agno.memory import MemoryManager

    db = memory_db(storage_root, database_url, agent)

    async def scope() -> set[tuple[str, str, int]]:
        found = await recall_memories(user_id, agent=agent, storage_root=storage_root, database_url=database_url)
        return {(item.memory_id, item.text, item.updated_at) for item in found}

    before = await scope()
    manager = MemoryManager(model=model, db=db)
    messages = [Message(role=role, content=redact_message(text)) for role, text in exchange if text]
    await manager.acreate_user_memories(messages=messages, user_id=user_id, agent_id=agent)
    return await scope() != before


async def copy_memories(storage_root: Path, url: str) -> list[CopyCount]:
    """Copy every memory from the SQLite file into PostgreSQL (as `memory_db` reads them there)."""
    path = memory_db_path(storage_root)
    if not path.exists():
        return [CopyCount("memories", 0, 0)]
    from agno.db.postgres import AsyncPostgresDb, create_async_postgres_engine
    from agno.db.sqlite import AsyncSqliteDb

    source = AsyncSqliteDb(db_file=str(path), memory_table=MEMORY_TABLE)
    engine = create_async_postgres_engine(url)
    try:
        target = AsyncPostgresDb(db_engine=engine, db_schema=SESSION_SCHEMA, memory_table=MEMORY_TABLE)
        memories = [memory for memory in await source.get_user_memories() if isinstance(memory, UserMemory)]
        for memory in memories:
            await target.upsert_user_memory(memory)
        copied = {
            str(memory.memory_id) for memory in await target.get_user_memories() if isinstance(memory, UserMemory)
        }
        wanted = {str(memory.memory_id) for memory in memories}
        return [CopyCount("memories", len(wanted), len(wanted & copied))]
    finally:
        await source.close()
        await engine.dispose()
