"""What the AI layer leans on in agno (beyond the session store's tables, `sessions/test_store_contract.py`).

- The memory store (`mindroom/ai/memory.py`) subclasses agno's async stores and overrides the public memory
  methods that agno's `MemoryManager` reads and writes through; on SQLite it also makes the memory table
  through agno's private `_get_table`, because agno's async SQLite store does not make it on a write.
- Every class here that subclasses one of agno's overrides methods agno defines (`_per_run_copy`,
  `_parse_provider_response`, ...), and names its own helpers with names agno does not use.
- `TurnAgent` turns `additional_context` into a property: agno must read it afresh at each run.

`.ci/run` runs this file against the newest agno 3.x too, so a release that changes any of it is seen
before the pin moves.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from agno.db.schemas import UserMemory
from agno.db.sqlite import AsyncSqliteDb

from mindroom.ai.memory import MEMORY_TABLE, extract_memories, memory_db, memory_db_path, recall_memories
from mindroom.config.main import ModelConfig
from mindroom.testing.memory_script import is_memory_request
from mindroom.testing.model_replies import Text, ToolCall, content_text
from mindroom.testing.model_server import ScriptedModelServer
from tests.state.postgres_server import postgres_server, postgres_url

__all__ = ["postgres_server", "postgres_url"]

ALICE = "@alice:example.org"
SECRET = "sk-proj-abcdefghijklmnopqrstuvwx1234"


def _tables(path: Path) -> set[str]:
    connection = sqlite3.connect(path)
    try:
        return {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        connection.close()


@pytest.mark.asyncio
async def test_contract_agnos_async_sqlite_store_stores_no_memory_without_its_table(tmp_path: Path):
    # Why the scoped SQLite store makes the table first. When this fails, agno makes it on a write by
    # itself: `makes_table` can go for SQLite too, and with it the last use of `_get_table` there.
    db = AsyncSqliteDb(db_file=str(tmp_path / "m.db"), memory_table=MEMORY_TABLE)
    try:
        await db.upsert_user_memory(UserMemory(memory="likes teal", user_id=ALICE, memory_id="m-1"))
        assert await db.get_user_memories(user_id=ALICE) == []
    finally:
        await db.close()


@pytest.mark.asyncio
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


@pytest.mark.asyncio
async def test_contract_the_scoped_sqlite_store_reads_and_writes_a_fresh_file(storage_root: Path):
    store = memory_db(storage_root, None, "helper")
    assert await store.get_user_memories(user_id=ALICE) == []
    assert MEMORY_TABLE in _tables(memory_db_path(storage_root))

    await store.upsert_user_memory(UserMemory(memory="likes teal", user_id=ALICE))

    assert [(m.agent_id, m.memory) for m in await store.get_user_memories(user_id=ALICE)] == [("helper", "likes teal")]


@pytest.mark.postgres
@pytest.mark.asyncio
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


@pytest.mark.asyncio
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


def _agno_subclasses() -> list[type[Any]]:
    from agno.models.openai import OpenAIChat

    from mindroom.ai.failures import reporting_class
    from mindroom.ai.memory import _postgres_class, _sqlite_class
    from mindroom.ai.offline import OfflineModel
    from mindroom.ai.sessions.history import _postgres_store_class, sqlite_store_class
    from mindroom.ai.synthetic import SyntheticModel
    from mindroom.ai.teams.team import MemberAgent, TurnTeam
    from mindroom.ai.tool_payload import verbatim_class
    from mindroom.ai.tools import _function_class
    from mindroom.ai.turn_agent import TurnAgent

    return [
        TurnAgent,
        MemberAgent,
        TurnTeam,
        _function_class(),
        OfflineModel,
        SyntheticModel,
        reporting_class(OpenAIChat),
        verbatim_class(OpenAIChat),
        _sqlite_class(),
        _postgres_class(),
        sqlite_store_class(),
        _postgres_store_class(),
    ]


OWN_HELPERS = {
    "_answer",
    "_call",
    "_call_policy",
    "_check_own_memory",
    "_chunks",
    "_delete_runs",
    "_flush",
    "_fresh_sessions",
    "_index_lock",
    "_present",
    "_ready",
    "_retried_invoke",
    "_retried_invoke_stream",
    "_run_in_transaction",
    "_settled",
    "_shown",
    "_statements",
    "_timed",
    "_timed_events",
    "_transcript",
    "_turn_state",
    "_where_present",
    "_write",
    "_write_rows",
    "expect_new_session",
    "shown_answer",
}
"""Methods the subclasses add of their own: agno must not define any of them (ours would replace agno's)."""


def _ours_and_agnos(cls: type[Any]) -> tuple[set[str], set[str]]:
    """The methods `cls` defines in our classes of its MRO, and every name agno's classes in it define."""
    ours: set[str] = set()
    agnos: set[str] = set()
    for klass in cls.__mro__:
        if klass.__module__.startswith("agno."):
            agnos |= set(vars(klass))
        elif klass.__module__.startswith("mindroom.") and not agnos:
            ours |= {
                name
                for name, value in vars(klass).items()
                if not (name.startswith("__") and name.endswith("__"))
                and (callable(value) or isinstance(value, property | classmethod | staticmethod))
            }
    return ours, agnos


def test_contract_our_agno_subclasses_override_what_agno_defines_and_add_only_names_it_does_not_use():
    overrides_gone: list[str] = []
    clashes: list[str] = []
    for cls in _agno_subclasses():
        ours, agnos = _ours_and_agnos(cls)
        assert agnos, f"{cls.__qualname__} has no agno base"
        overrides_gone += [f"{cls.__qualname__}.{name}" for name in sorted(ours - OWN_HELPERS - agnos)]
        clashes += [f"{cls.__qualname__}.{name}" for name in sorted(ours & OWN_HELPERS & agnos)]

    assert overrides_gone == [], "overrides of methods agno no longer defines: they would never be called"
    assert clashes == [], "helpers whose names agno now uses: they would replace agno's own"


@pytest.mark.asyncio
async def test_contract_an_agent_reads_additional_context_at_each_run(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
):
    from mindroom.ai.agents import agent_cache
    from mindroom.ai.turn_agent import TurnAgent, run_system_context

    model_server.when(lambda r: True, Text("ok"))
    agent = TurnAgent(
        id="scribe", model=agent_cache.model(scripted_model, {}), additional_context="own words", telemetry=False
    )
    for block in ("first turn's block", "second turn's block"):
        with run_system_context(block):
            await agent.arun("hello")

    first, second = (content_text(r["messages"][0]["content"]) for r in model_server.requests)
    assert "own words" in first and "first turn's block" in first
    assert "own words" in second and "second turn's block" in second and "first turn's block" not in second
