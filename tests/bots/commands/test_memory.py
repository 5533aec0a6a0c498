"""`!memory`: a person lists and forgets only their own memories; administrators wipe a person."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from agno.db.schemas import UserMemory

from mindroom.ai.agents import close_caches
from mindroom.ai.memory import memory_db, recall_memories
from mindroom.bots.commands.memory import memory_command
from mindroom.bots.runtime import LiveState
from mindroom.bots.turn_mind import TurnMind
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.hooks.registry import HookRegistry
from tests.bots.commands.test_table import make_envelope

pytestmark = pytest.mark.asyncio

ALICE, BOB = "@alice:localhost", "@bob:localhost"


async def _remember(root: Path, user: str, agent: str, text: str) -> None:
    await memory_db(root, None, agent).upsert_user_memory(UserMemory(memory=text, user_id=user))


async def _run(root: Path, args: str, requester: str = ALICE, administrators: tuple[str, ...] = ()) -> str:
    live = LiveState(config=Config(administrators=list(administrators)), registry=HookRegistry.from_plugins([]))
    command = memory_command(TurnMind(RuntimePaths(config_path=root / "config.yaml", storage_root=root), None))
    envelope = replace(make_envelope(f"!memory {args}"), requester_id=requester, sender_id=requester)
    return await command.run(None, live, envelope, args)  # type: ignore[arg-type]


async def test_memory_command_lists_forgets_and_wipes(tmp_path: Path):
    await _remember(tmp_path, ALICE, "helper", "Alice likes teal")
    await _remember(tmp_path, ALICE, "coder", "Alice writes Rust")
    await _remember(tmp_path, BOB, "helper", "Bob likes red")
    try:
        listing = await _run(tmp_path, "")
        assert "[coder] Alice writes Rust" in listing and "[helper] Alice likes teal" in listing
        assert "Bob" not in listing
        assert await _run(tmp_path, "forget rust") == "Forgotten: 1 memory."
        assert await _run(tmp_path, "forget 7") == "No memory of yours matches that."
        assert await _run(tmp_path, "wipe @bob:localhost") == "Only administrators can wipe a person's memories."
        assert (
            await _run(tmp_path, "wipe @bob:localhost", administrators=(ALICE,))
            == "Deleted 1 memories of @bob:localhost."
        )
        left = await recall_memories(ALICE, agent=None, storage_root=tmp_path, database_url=None)
        assert [item.text for item in left] == ["Alice likes teal"]
        assert await recall_memories(BOB, agent=None, storage_root=tmp_path, database_url=None) == []
        assert (await _run(tmp_path, "sing")).startswith("Usage: !memory")
    finally:
        await close_caches()
