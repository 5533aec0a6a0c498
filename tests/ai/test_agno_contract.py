"""What the memory store (`mindroom/ai/memory.py`) leans on in agno, pinned against the installed agno.

The scoped store subclasses agno's async stores and overrides the public memory methods that agno's
`MemoryManager` reads and writes through; on SQLite it also makes the memory table through agno's private
`_get_table`, because agno's async SQLite store does not make it on a write. `.ci/run` runs this file
against the newest agno 3.x too, so a release that changes any of it is seen before the pin moves.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from agno.db.schemas import UserMemory
from agno.db.sqlite import AsyncSqliteDb

from mindroom.ai.memory import MEMORY_TABLE, extract_memories, memory_db, memory_db_path, recall_memories
from mindroom.config.main import ModelConfig
from mindroom.testing.memory_script import is_memory_request
from mindroom.testing.model_replies import Text, ToolCall, content_text
from mindroom.testing.model_server import ScriptedModelServer
from tests.state.postgres_server import postgres_server, postgres_url

pytestmark = pytest.mark.asyncio
__all__ = ["postgres_server", "postgres_url"]

ALICE = "@alice:example.org"
SECRET = "sk-proj-abcdefghijklmnopqrstuvwx1234"


def _tables(path: Path) -> set[str]:
    connection = sqlite3.connect(path)
    try:
        return {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        connection.close()


async def test_contract_agnos_async_sqlite_store_stores_no_memory_without_its_table(tmp_path: Path):
    # Why the scoped SQLite store makes the table first. When this fails, agno makes it on a write by
    # itself: `makes_table` can go for SQLite too, and with it the last use of `_get_table` there.
    db = AsyncSqliteDb(db_file=str(tmp_path / "m.db"), memory_table=MEMORY_TABLE)
    try:
        await db.upsert_user_memory(UserMemory(memory="likes teal", user_id=ALICE, memory_id="m-1"))
        assert await db.get_user_memories(user_id=ALICE) == []
    finally:
        await db.close()


async def test_contract_get_table_makes_the_memory_table_under_its_configured_name(tmp_path: Path):
    path = tmp_path / "m.db"
    db = AsyncSqliteDb(db_file=str(path), memory_table="kept_here")
    try:
        table = await db._get_table(table_type="memories", create_table_if_not_found=True)
        assert table is not None and table.name == "kept_here"
        columns = {"memory_id", "memory", "user_id", "agent_id", "input", "created_at", "updated_at"}
        assert columns <= set(table.c.keys())
        assert "kept_here" in _tables(path) and "agno_sessions" not in _tables(path)  # that table only
        await db.upsert_user_memory(UserMemory(memory="likes teal", user_id=ALICE, memory_id="m-1"))
        assert [m.memory for m in await db.get_user_memories(user_id=ALICE)] == ["likes teal"]
    finally:
        await db.close()


async def test_contract_the_scoped_sqlite_store_reads_and_writes_a_fresh_file(storage_root: Path):
    store = memory_db(storage_root, None, "helper")
    assert await store.get_user_memories(user_id=ALICE) == []
    assert MEMORY_TABLE in _tables(memory_db_path(storage_root))

    await store.upsert_user_memory(UserMemory(memory="likes teal", user_id=ALICE))

    assert [(m.agent_id, m.memory) for m in await store.get_user_memories(user_id=ALICE)] == [("helper", "likes teal")]


@pytest.mark.postgres
async def test_contract_agnos_postgresql_store_makes_the_memory_table_on_its_first_write(postgres_url: str):
    import psycopg
    from agno.db.postgres import AsyncPostgresDb, create_async_postgres_engine

    engine = create_async_postgres_engine(postgres_url)
    db = AsyncPostgresDb(db_engine=engine, db_schema="contract", memory_table=MEMORY_TABLE)
    try:
        assert await db.get_user_memories(user_id=ALICE) == []  # a read before any write: nothing, no error
        await db.upsert_user_memory(UserMemory(memory="likes teal", user_id=ALICE, agent_id="helper"))
        assert [m.memory for m in await db.get_user_memories(user_id=ALICE, agent_id="helper")] == ["likes teal"]
    finally:
        await engine.dispose()
    with psycopg.connect(postgres_url) as connection:
        found = connection.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'contract'"
        ).fetchall()
    assert (MEMORY_TABLE,) in found


async def test_contract_memory_manager_reads_updates_and_deletes_through_the_stores_memory_methods(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
):
    """The scoping holds only while `MemoryManager` goes through `get_user_memories`, `upsert_user_memory`
    and `delete_user_memory`: the model must see the agent's own memories only, and its update must come
    out redacted and in the agent's scope."""
    from mindroom.ai.agents import agent_cache

    helper, coder = memory_db(storage_root, None, "helper"), memory_db(storage_root, None, "coder")
    await helper.upsert_user_memory(UserMemory(memory="likes teal", user_id=ALICE, memory_id="h-1"))
    await helper.upsert_user_memory(UserMemory(memory="has a cat", user_id=ALICE, memory_id="h-2"))
    await coder.upsert_user_memory(UserMemory(memory="writes rust", user_id=ALICE, memory_id="c-1"))

    def asked(words: str):
        return lambda r: (
            is_memory_request(r)
            and not any(m.get("role") == "tool" for m in r["messages"])
            and any(words in content_text(m.get("content")) for m in r["messages"] if m.get("role") == "user")
        )

    model_server.when(asked("now blue"), ToolCall("update_memory", {"memory_id": "h-1", "memory": f"blue {SECRET}"}))
    model_server.when(asked("no cat"), ToolCall("delete_memory", {"memory_id": "h-2"}))
    model_server.when(is_memory_request, Text("Done."))
    model = agent_cache.model(scripted_model, {})

    for said in ("I like blue now blue", "I have no cat"):
        exchange = [("user", said), ("assistant", "Noted.")]
        await extract_memories(model, ALICE, "helper", exchange, storage_root=storage_root, database_url=None)

    shown = " ".join(content_text(m.get("content")) for r in model_server.requests for m in r["messages"])
    assert "likes teal" in shown and "writes rust" not in shown
    remembered = await recall_memories(ALICE, agent=None, storage_root=storage_root, database_url=None)
    assert sorted((m.agent, m.memory_id) for m in remembered) == [("coder", "c-1"), ("helper", "h-1")]
    [updated] = [m for m in remembered if m.memory_id == "h-1"]
    assert updated.text.startswith("blue ") and SECRET not in updated.text
