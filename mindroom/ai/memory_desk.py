"""The `memory` tool's desk: one agent's memories of one person, in the store `mindroom.ai.memory` keeps.

Every call is scoped to (person, agent): reads go through the agent's scoped store and keep only that
person's rows; a memory id of another agent or person is answered as unknown, and is never rewritten or
deleted. Text is redacted as the store redacts what memory extraction writes. agno is imported on the first
call, not with the daemon.
"""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path
from typing import Any

from mindroom.logging_config import get_logger
from mindroom.tool_system.builtin.parts import MemoryRecord

__all__ = ["ScopedMemories"]

logger = get_logger(__name__)

_SCAN = 1000
_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return {word for word in _WORD.findall(text.lower()) if len(word) > 1}


class ScopedMemories:
    """`MemoryDesk` over the run's memory store (SQLite under the data directory, or the state's PostgreSQL)."""

    def __init__(self, storage_root: Path, database_url: str | None) -> None:
        self._storage_root = storage_root
        self._database_url = database_url

    def _db(self, agent: str) -> Any:
        from mindroom.ai.memory import memory_db

        return memory_db(self._storage_root, self._database_url, agent)

    async def _rows(self, agent: str, user_id: str, limit: int) -> list[Any]:
        from agno.db.schemas import UserMemory

        found = await self._db(agent).get_user_memories(
            user_id=user_id, agent_id=agent, sort_by="updated_at", sort_order="desc", limit=limit
        )
        return [row for row in found if isinstance(row, UserMemory) and row.agent_id == agent]

    async def _own(self, agent: str, user_id: str, memory_id: str) -> Any:
        from agno.db.schemas import UserMemory

        if not memory_id:
            return None
        row = await self._db(agent).get_user_memory(memory_id, deserialize=True, user_id=user_id)
        owned = isinstance(row, UserMemory) and row.user_id == user_id and row.agent_id == agent
        return row if owned else None

    async def add(self, agent: str, user_id: str, text: str) -> MemoryRecord:
        """Store a memory of `user_id` for `agent`."""
        from agno.db.schemas import UserMemory

        now = int(time.time())
        memory = UserMemory(
            memory=text, memory_id=str(uuid.uuid4()), user_id=user_id, agent_id=agent, created_at=now, updated_at=now
        )
        stored = await self._db(agent).upsert_user_memory(memory)
        logger.info("memory added by tool", agent=agent, user=user_id)
        return MemoryRecord(str(memory.memory_id), stored.memory if stored is not None else text)

    async def search(self, agent: str, user_id: str, query: str, limit: int) -> list[MemoryRecord]:
        """The memories sharing the most words with `query` (a phrase inside one counts most), best first."""
        wanted = _words(query)
        phrase = query.strip().lower()
        scored: list[tuple[int, int, Any]] = []
        for order, row in enumerate(await self._rows(agent, user_id, _SCAN)):
            text = str(row.memory or "")
            score = len(wanted & _words(text)) + (len(wanted) + 1 if phrase and phrase in text.lower() else 0)
            if score:
                scored.append((-score, order, row))
        scored.sort(key=lambda item: item[:2])
        return [MemoryRecord(str(row.memory_id), str(row.memory)) for _, _, row in scored[:limit]]

    async def listing(self, agent: str, user_id: str, limit: int) -> list[MemoryRecord]:
        """The memories, newest first."""
        return [MemoryRecord(str(row.memory_id), str(row.memory)) for row in await self._rows(agent, user_id, limit)]

    async def get(self, agent: str, user_id: str, memory_id: str) -> MemoryRecord | None:
        """One memory of this scope."""
        row = await self._own(agent, user_id, memory_id)
        return MemoryRecord(str(row.memory_id), str(row.memory)) if row is not None else None

    async def update(self, agent: str, user_id: str, memory_id: str, text: str) -> bool:
        """Rewrite one memory of this scope."""
        row = await self._own(agent, user_id, memory_id)
        if row is None:
            return False
        row.memory = text
        row.updated_at = int(time.time())
        await self._db(agent).upsert_user_memory(row)
        logger.info("memory updated by tool", agent=agent, user=user_id, memory_id=memory_id)
        return True

    async def delete(self, agent: str, user_id: str, memory_id: str) -> bool:
        """Delete one memory of this scope."""
        if await self._own(agent, user_id, memory_id) is None:
            return False
        await self._db(agent).delete_user_memory(memory_id, user_id=user_id)
        logger.info("memory deleted by tool", agent=agent, user=user_id, memory_id=memory_id)
        return True
