"""Secrets a person pastes never reach a model or the stored history: the daemon's own (recovery key, dashboard
key, Matrix password, registered values) and AWS key ids; near misses of them stay as written."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from mindroom.ai import GenerationRequest, choose_agent, generate, load_history, stream_generate
from mindroom.ai.agents import agent_cache
from mindroom.ai.memory import extract_memories
from mindroom.config.main import ModelConfig
from mindroom.testing.memory_script import is_memory_request, script_memory
from mindroom.testing.model_server import ScriptedModelServer, Text, last_user_message
from tests.pasted_secrets import pasted_secrets

pytestmark = pytest.mark.asyncio


def _request(model: ModelConfig, message: str) -> GenerationRequest:
    return GenerationRequest(
        agent_name="scribe",
        display_name="Scribe",
        role="",
        instructions=(),
        model=model,
        user_message=message,
        session_id="room-thread",
        num_history_runs=5,
        markdown=False,
    )


def _stored_text(path: Path) -> str:
    """Every text value of every row of the session database, as SQLite holds it."""
    with sqlite3.connect(path) as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return "\n".join(
            str(value) for table in tables for row in db.execute(f'SELECT * FROM "{table}"') for value in row
        )


async def _answer(request: GenerationRequest, storage_root: Path, streamed: bool) -> None:
    if streamed:
        async for _delta in stream_generate(request, storage_root=storage_root, env={}):
            pass
    else:
        await generate(request, storage_root=storage_root, env={})


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
async def test_pasted_secrets_are_redacted_for_the_model_and_in_the_stored_history(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path, streamed: bool
):
    pasted = pasted_secrets(storage_root)
    model_server.script(Text("Noted."), Text("Still noted."))

    await _answer(_request(scripted_model, pasted.message()), storage_root, streamed)
    await _answer(_request(scripted_model, "what did I tell you?"), storage_root, streamed)

    stored = _stored_text(storage_root / "sessions" / "scribe.db")
    sent = json.dumps([request["messages"] for request in model_server.requests], ensure_ascii=False)
    [(role, told), *_rest] = await load_history("scribe", "room-thread", storage_root=storage_root)
    assert role == "user"
    for kind, secret in pasted.secrets.items():
        assert f"my {kind} is [redacted] ok." in told
        for where, text in (("the stored session", stored), ("the model's requests", sent)):
            assert secret not in text, f"the {kind} is in {where}"
    for near in pasted.near_misses:
        assert f"not a secret: {near} ok." in told
        assert near in stored and near in sent


async def test_pasted_secrets_are_redacted_for_the_memory_model(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
):
    pasted = pasted_secrets(storage_root)
    script_memory(model_server, "a phrase nobody says", "unused")
    exchange = [("user", pasted.message()), ("assistant", "Noted.")]

    await extract_memories(
        agent_cache.model(scripted_model, {}), "@alice:example.org", "scribe", exchange,
        storage_root=storage_root, database_url=None,
    )  # fmt: skip

    sent = json.dumps([r["messages"] for r in model_server.requests if is_memory_request(r)], ensure_ascii=False)
    assert sent != "[]"
    for kind, secret in pasted.secrets.items():
        assert secret not in sent, f"the {kind} reached the memory model"
    for near in pasted.near_misses:
        assert near in sent


async def test_pasted_secrets_are_redacted_for_the_router_model(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
):
    pasted = pasted_secrets(storage_root)
    model_server.script(Text("coder"))

    assert await choose_agent(scripted_model, [("coder", "Writes code.")], pasted.message(), env={}) == "coder"

    prompt = last_user_message(model_server.requests[0])
    for kind, secret in pasted.secrets.items():
        assert secret not in prompt, f"the {kind} reached the router model"
    for near in pasted.near_misses:
        assert f"not a secret: {near} ok." in prompt
