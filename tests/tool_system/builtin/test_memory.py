"""The `memory` tool on the real memory store (SQLite): one agent's memories of the person the turn speaks for,
and nobody else's, whatever id the model names."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from mindroom.ai.memory import close_memory_dbs, recall_memories
from mindroom.ai.memory_desk import ScopedMemories
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.tool_system.builtin import memory as tool
from mindroom.tool_system.builtin.parts import DaemonParts, provide_daemon_parts
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import ToolError

pytestmark = pytest.mark.asyncio

CONFIG = Config.model_validate(
    {
        "memory": {"backend": "mem0"},
        "agents": {
            "helper": {"display_name": "Helper", "tools": ["memory"]},
            "other": {"display_name": "Other", "tools": ["memory"]},
            "forgetful": {"display_name": "Forgetful", "tools": ["memory"], "memory_backend": "none"},
        },
    }
)


@pytest_asyncio.fixture
async def storage(tmp_path: Path) -> AsyncIterator[Path]:
    withdraw = provide_daemon_parts(tmp_path, DaemonParts(memories=ScopedMemories(tmp_path, None)))
    yield tmp_path
    withdraw()
    await close_memory_dbs()


def turn(storage: Path, agent: str = "helper", person: str = "@alice:hs"):
    paths = RuntimePaths(storage / "config.yaml", storage, {})
    context = ToolRuntimeContext(None, agent, "!r:hs", "$t", person, config=CONFIG, runtime_paths=paths)
    return bind_runtime_context(context)


def memory_id(listing: str) -> str:
    return listing.split("[id=")[1].split("]")[0]


async def test_memory_adds_searches_updates_and_forgets_within_the_scope(storage: Path):
    with turn(storage):
        assert (
            await tool.add_memory("Alice's favourite colour is teal") == "Memorized: Alice's favourite colour is teal"
        )
        await tool.add_memory("Alice works on tide tables")
        found = await tool.search_memories("favourite colour")
        first = memory_id(found)
        similar = await tool.add_memory("Alice's favourite colour is now green")
        assert await tool.update_memory(first, "Alice's favourite colour is green") == (
            f"Updated memory [id={first}]: Alice's favourite colour is green"
        )
        got = await tool.get_memory(first)
        assert await tool.delete_memory(first) == f"Deleted memory [id={first}]"
        after = await tool.list_memories()

    assert found.startswith("Found 1 memory(ies):\n1. [id=") and "teal" in found
    assert "Similar existing memories:" in similar and "teal" in similar
    assert got == f"[id={first}] Alice's favourite colour is green"
    assert after.startswith("All memories (2):") and first not in after
    remembered = await recall_memories("@alice:hs", agent="helper", storage_root=storage, database_url=None)
    assert sorted(item.text for item in remembered) == [
        "Alice works on tide tables",
        "Alice's favourite colour is now green",
    ]


async def test_memory_of_another_agent_or_person_is_unknown_by_id(storage: Path):
    with turn(storage):
        await tool.add_memory("Alice likes tea")
        alices = memory_id(await tool.list_memories())
    with turn(storage, agent="other"):
        assert await tool.list_memories() == "No memories stored yet."
        assert await tool.get_memory(alices) == f"No memory found with id={alices}"
        assert await tool.update_memory(alices, "overwritten") == f"No memory found with id={alices}"
        assert await tool.delete_memory(alices) == f"No memory found with id={alices}"
    with turn(storage, person="@bob:hs"):
        assert await tool.search_memories("tea") == "No relevant memories found."
        assert await tool.delete_memory(alices) == f"No memory found with id={alices}"
    with turn(storage):
        assert await tool.get_memory(alices) == f"[id={alices}] Alice likes tea"


async def test_memory_is_refused_where_it_is_off_or_empty(storage: Path):
    with turn(storage, agent="forgetful"), pytest.raises(ToolError, match="memory is off"):
        await tool.add_memory("anything")
    with turn(storage), pytest.raises(ToolError, match="empty"):
        await tool.add_memory("   ")
    with turn(storage, person=""), pytest.raises(ToolError, match="no person"):
        await tool.list_memories()
