"""Memories in agno's table, scoped per person and agent, redacted, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from mindroom.ai.agents import agent_cache
from mindroom.ai.memory import copy_memories, extract_memories, forget_memories, memory_db_path, recall_memories
from mindroom.config.main import ModelConfig
from mindroom.testing.memory_script import is_memory_request, script_memory
from mindroom.testing.model_server import ScriptedModelServer
from tests.state.postgres_server import postgres_server, postgres_url

pytestmark = pytest.mark.asyncio
__all__ = ["postgres_server", "postgres_url"]

ALICE, BOB = "@alice:example.org", "@bob:example.org"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest) -> str | None:
    return request.getfixturevalue("postgres_url") if request.param == "postgres" else None


async def _tell(model: ModelConfig, user: str, agent: str, text: str, storage: Path, url: str | None) -> bool:
    exchange = [("user", text), ("assistant", "Got it.")]
    return await extract_memories(
        agent_cache.model(model, {}), user, agent, exchange, storage_root=storage, database_url=url
    )


async def test_memory_is_extracted_for_the_person_and_agent_only(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path, database_url: str | None
):
    script_memory(model_server, "teal", "Alice's favourite colour is teal")

    changed = await _tell(scripted_model, ALICE, "helper", "my favourite colour is teal", storage_root, database_url)
    unchanged = await _tell(scripted_model, BOB, "helper", "what's the weather", storage_root, database_url)

    assert (changed, unchanged) == (True, False)
    found = await recall_memories(ALICE, agent="helper", storage_root=storage_root, database_url=database_url)
    assert [(item.agent, item.text) for item in found] == [("helper", "Alice's favourite colour is teal")]
    assert await recall_memories(BOB, agent="helper", storage_root=storage_root, database_url=database_url) == []
    assert await recall_memories(ALICE, agent="other", storage_root=storage_root, database_url=database_url) == []
    # Where they live: a private SQLite file, or no file at all when the state is in PostgreSQL.
    assert memory_db_path(storage_root).exists() == (database_url is None)


async def test_memory_extraction_sees_only_its_own_scope(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path, database_url: str | None
):
    script_memory(model_server, "teal", "Alice likes teal")
    await _tell(scripted_model, ALICE, "helper", "I like teal", storage_root, database_url)
    before = len(model_server.requests)

    await _tell(scripted_model, ALICE, "coder", "anything else", storage_root, database_url)
    await _tell(scripted_model, BOB, "helper", "anything else", storage_root, database_url)

    later = [r for r in model_server.requests[before:] if is_memory_request(r)]
    assert len(later) == 2
    assert all("Alice likes teal" not in str(request["messages"]) for request in later)


async def test_memory_text_is_redacted_before_it_is_stored(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path, database_url: str | None
):
    script_memory(model_server, "key", "Alice's API key is sk-proj-abcdefghijklmnopqrstuvwx1234")

    await _tell(
        scripted_model, ALICE, "helper", "my key is sk-proj-abcdefghijklmnopqrstuvwx1234", storage_root, database_url
    )

    [item] = await recall_memories(ALICE, agent="helper", storage_root=storage_root, database_url=database_url)
    assert "sk-proj-abcdefghijklmnopqrstuvwx1234" not in item.text
    assert item.text.startswith("Alice's API key is ")


async def test_memory_forget_deletes_only_the_person_s_own(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path, database_url: str | None
):
    script_memory(model_server, "teal", "likes teal")
    await _tell(scripted_model, ALICE, "helper", "teal", storage_root, database_url)
    await _tell(scripted_model, BOB, "helper", "teal", storage_root, database_url)
    [alice] = await recall_memories(ALICE, agent=None, storage_root=storage_root, database_url=database_url)
    [bob] = await recall_memories(BOB, agent=None, storage_root=storage_root, database_url=database_url)

    assert await forget_memories(BOB, [alice.memory_id], storage_root=storage_root, database_url=database_url) == 0
    assert await forget_memories(ALICE, [alice.memory_id], storage_root=storage_root, database_url=database_url) == 1
    assert await recall_memories(ALICE, agent=None, storage_root=storage_root, database_url=database_url) == []
    assert await recall_memories(BOB, agent=None, storage_root=storage_root, database_url=database_url) == [bob]
    assert await forget_memories(BOB, None, storage_root=storage_root, database_url=database_url) == 1


@pytest.mark.postgres
async def test_memory_copy_moves_sqlite_memories_into_postgres(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path, postgres_url: str
):
    script_memory(model_server, "teal", "likes teal")
    await _tell(scripted_model, ALICE, "helper", "teal", storage_root, None)

    counts = await copy_memories(storage_root, postgres_url)

    assert [(c.kind, c.source, c.target) for c in counts] == [("memories", 1, 1)]
    [moved] = await recall_memories(ALICE, agent="helper", storage_root=storage_root, database_url=postgres_url)
    assert moved.text == "likes teal"


async def test_memory_store_of_one_agent_cannot_rewrite_another_agents_memory(storage_root: Path):
    from agno.db.schemas import UserMemory

    from mindroom.ai.memory import memory_db

    helper, coder = memory_db(storage_root, None, "helper"), memory_db(storage_root, None, "coder")
    await helper.upsert_user_memory(UserMemory(memory="likes teal", user_id=ALICE, memory_id="m-1"))

    with pytest.raises(PermissionError):
        await coder.upsert_user_memory(UserMemory(memory="likes red", user_id=ALICE, memory_id="m-1"))

    [kept] = await recall_memories(ALICE, agent=None, storage_root=storage_root, database_url=None)
    assert (kept.agent, kept.text) == ("helper", "likes teal")
    assert await coder.get_user_memories(user_id=ALICE) == []


async def test_memory_store_of_one_agent_cannot_delete_another_agents_memory(storage_root: Path):
    from agno.db.schemas import UserMemory

    from mindroom.ai.memory import memory_db

    helper, coder = memory_db(storage_root, None, "helper"), memory_db(storage_root, None, "coder")
    await helper.upsert_user_memory(UserMemory(memory="likes teal", user_id=ALICE, memory_id="m-1"))
    await coder.upsert_user_memory(UserMemory(memory="writes rust", user_id=ALICE, memory_id="m-2"))

    # The memory tool deletes by id: an id of another agent's memory (guessed or leaked) deletes nothing.
    with pytest.raises(PermissionError):
        await coder.delete_user_memory(memory_id="m-1", user_id=ALICE)
    await coder.delete_user_memory(memory_id="m-2", user_id=ALICE)

    kept = await recall_memories(ALICE, agent=None, storage_root=storage_root, database_url=None)
    assert [(item.agent, item.text) for item in kept] == [("helper", "likes teal")]
