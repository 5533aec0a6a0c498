"""generate_early: the text is handed back before the session store write, which still completes."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from mindroom.ai import GenerationError, generate_early, load_history, session_db_path
from mindroom.config.main import ModelConfig
from mindroom.testing.model_server import HttpError, ScriptedModelServer, Stream, Text
from tests.ai.test_generation import ENV, make_request


@pytest.mark.asyncio
async def test_generate_early_returns_text_then_stores_the_turn(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(Stream(["Hel", "lo ", "there"]))

    answer = await generate_early(
        make_request(scripted_model, "hi", session_id="early"), storage_root=storage_root, env=ENV
    )
    assert answer.text == "Hello there"
    await answer.stored()

    history = await load_history("helper", "early", storage_root=storage_root)
    assert [text for _, text in history] == ["hi", "Hello there"]


@pytest.mark.asyncio
async def test_generate_early_second_turn_sees_the_first(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(Text("first answer"), Text("second answer"))
    first = await generate_early(
        make_request(scripted_model, "one", session_id="s"), storage_root=storage_root, env=ENV
    )
    await first.stored()
    second = await generate_early(
        make_request(scripted_model, "two", session_id="s"), storage_root=storage_root, env=ENV
    )
    await second.stored()

    texts = [m.get("content") for m in model_server.requests[1]["messages"]]
    assert "one" in texts and "first answer" in texts
    assert second.text == "second answer"


@pytest.mark.asyncio
async def test_generate_early_model_failure_raises_generation_error(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(HttpError(500, "boom"))
    model = scripted_model.model_copy(update={"extra_kwargs": {**scripted_model.extra_kwargs, "max_retries": 0}})
    with pytest.raises(GenerationError):
        await generate_early(make_request(model, "break"), storage_root=storage_root, env=ENV)


@pytest.mark.asyncio
async def test_generate_early_hands_the_text_back_while_the_store_is_still_blocked(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(Text("warm"), Text("answered before the write"))
    warm = await generate_early(
        make_request(scripted_model, "warm", session_id="w"), storage_root=storage_root, env=ENV
    )
    await warm.stored()

    blocker = sqlite3.connect(session_db_path(storage_root, "helper"), isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # holds the write lock: the turn's store has to wait for it
    try:
        answer = await asyncio.wait_for(
            generate_early(make_request(scripted_model, "now", session_id="b"), storage_root=storage_root, env=ENV),
            timeout=4,
        )
        assert answer.text == "answered before the write"
        await asyncio.sleep(0.2)
        assert not answer.storing.done()
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    await asyncio.wait_for(answer.stored(), timeout=10)
    history = await load_history("helper", "b", storage_root=storage_root)
    assert [text for _, text in history] == ["now", "answered before the write"]
