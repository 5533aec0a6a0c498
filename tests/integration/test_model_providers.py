"""Agents on Anthropic, Ollama and OpenAI's Responses API, on the real homeserver: each provider's real agno
client talks HTTP to the scripted server in that provider's own wire protocol. They answer, call a tool and
stream; a rate limit, a stalled stream and a too-long prompt are handled; a final failure is a short answer,
`message:cancelled` fires, and the turn ends."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from mindroom.testing.model_server import ContextOverflow, HttpError, Stall, Stream, Text, ToolCall
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, edits_of, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

EVENTS = """
import json
from pathlib import Path

from mindroom.hooks import hook


def _log(ctx, **fields):
    with Path(ctx.settings["log"]).open("a") as fh:
        fh.write(json.dumps({"event": ctx.event_name, **fields}, default=str) + "\\n")


@hook("message:cancelled")
async def cancelled(ctx):
    _log(ctx, reason=ctx.info.failure_reason, visible=ctx.info.visible_response_event_id)


@hook("message:after_response")
async def answered(ctx):
    _log(ctx, text=ctx.result.response_text)
"""

PROVIDERS = ("anthropic", "ollama", "openai-responses")
API = {"anthropic": "anthropic", "ollama": "ollama", "openai-responses": "responses"}


def model_entry(e2e: E2E, provider: str, **keys: Any) -> dict[str, Any]:
    server = e2e.model_server
    entry: dict[str, Any]
    if provider == "anthropic":
        entry = {"provider": "anthropic", "id": "agent-model", "host": server.url, "api_key": "sk-ant-test"}
    elif provider == "ollama":
        entry = {"provider": "ollama", "id": "agent-model", "host": server.url}
    else:
        entry = {"provider": "openai", "id": "agent-model", "api": "responses", "host": server.base_url}
    retries = keys.pop("max_retries", 0)
    return {**entry, **keys, "extra_kwargs": {"max_retries": retries}}


async def agent_world(
    e2e: E2E, tmp_path: Path, provider: str, *, streaming: bool, **keys: Any
) -> tuple[HumanClient, str, str, Path]:
    log = tmp_path / "events.jsonl"
    e2e.plugin("events", EVENTS)
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config(
        [human.user_id],
        {agent: {"display_name": "Helper", "model": "default", "rooms": [room], "tools": ["calculator"]}},
        plugins=[{"path": "plugins/events", "settings": {"log": str(log)}}],
    )
    config["models"]["default"] = model_entry(e2e, provider, **keys)
    config["defaults"]["enable_streaming"] = streaming
    config["defaults"]["streaming_edit_interval_ms"] = 50
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    return human, agent, room_id, log


def logged(path: Path, event: str) -> list[dict[str, Any]]:
    lines = path.read_text().splitlines() if path.exists() else []
    return [entry for entry in map(json.loads, lines) if entry["event"] == event]


async def final_text(human: HumanClient, event_id: str, sender: str, text: str) -> None:
    """Wait until the answer to `event_id` reads `text` (sent so, or edited to it)."""
    first = await human.wait_for(thread_replies(event_id, sender), timeout=30)
    if first["content"]["body"] == text:
        return
    await human.wait_for(
        lambda ev: edits_of(first["event_id"])(ev) and ev["content"]["m.new_content"]["body"] == text, timeout=30
    )


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_agent_on_provider_answers_calls_a_tool_and_streams(e2e: E2E, tmp_path: Path, provider: str):
    human, agent, room_id, log = await agent_world(e2e, tmp_path, provider, streaming=True)
    server = e2e.model_server
    server.script(
        ToolCall("calculate", {"expression": "6 * 7"}),
        Stream(["The answer ", "is ", "42."], delay_s=0.1),
        model="agent-model",
    )

    event_id = await human.send(room_id, "what is six times seven?")
    await final_text(human, event_id, e2e.user_id(agent), "The answer is 42.")

    requests = server.requests_to(API[provider])
    assert len(requests) == 2 and all(request["model"] == "agent-model" for request in requests)
    assert "42" in json.dumps(requests[1])  # the calculator's result went back to the model
    assert server.requests_to("chat_completions") == []  # each provider spoke its own API

    server.script(Text("Plain and simple."), model="agent-model")
    second = await human.send(room_id, "and a plain answer?")
    await final_text(human, second, e2e.user_id(agent), "Plain and simple.")
    assert [entry["text"] for entry in logged(log, "message:after_response")] == [
        "The answer is 42.",
        "Plain and simple.",
    ]


async def test_rate_limited_anthropic_answer_arrives_after_a_retry(e2e: E2E, tmp_path: Path):
    human, agent, room_id, log = await agent_world(e2e, tmp_path, "anthropic", streaming=False, max_retries=2)
    e2e.model_server.script(HttpError(429, "slow down", retry_after_s=0.2), Text("Patience pays."), model="agent-model")

    event_id = await human.send(room_id, "hello?")
    reply = await human.wait_for(thread_replies(event_id, e2e.user_id(agent)), timeout=30)

    assert reply["content"]["body"] == "Patience pays."
    assert len(e2e.model_server.requests_to("anthropic")) == 2
    assert logged(log, "message:cancelled") == []


async def test_stalled_ollama_stream_is_cut_and_retried_before_anything_shows(e2e: E2E, tmp_path: Path):
    human, agent, room_id, _ = await agent_world(
        e2e, tmp_path, "ollama", streaming=True, stream_idle_timeout_seconds=0.5
    )
    e2e.model_server.script(Stall(seconds=60), Stream(["Back ", "again."]), model="agent-model")

    event_id = await human.send(room_id, "are you awake?")
    await final_text(human, event_id, e2e.user_id(agent), "Back again.")

    assert len(e2e.model_server.requests_to("ollama")) == 2
    replies = human.matching(thread_replies(event_id, e2e.user_id(agent)))
    assert len(replies) == 1 and not replies[0]["content"]["body"].startswith("⚠️")


async def test_final_failure_is_a_short_answer_and_message_cancelled_fires(e2e: E2E, tmp_path: Path):
    human, agent, room_id, log = await agent_world(e2e, tmp_path, "openai-responses", streaming=True)
    e2e.model_server.script(ContextOverflow(), model="agent-model")

    event_id = await human.send(room_id, "a message far too long for the model")
    warning = await human.wait_for(thread_replies(event_id, e2e.user_id(agent)), timeout=30)

    body = warning["content"]["body"]
    assert body == "⚠️ The conversation is too long for this model, even after shortening its history."
    for _ in range(50):
        if logged(log, "message:cancelled"):
            break
        await asyncio.sleep(0.1)
    (cancelled,) = logged(log, "message:cancelled")
    assert "too long" in cancelled["reason"]
    assert logged(log, "message:after_response") == []
    assert e2e.daemon is not None and e2e.daemon.running is not None
    journal = e2e.daemon.running.stores.journal
    for _ in range(50):  # the turn is marked complete once its answer (the warning) is out
        if journal.seen(agent, event_id) and not journal.pending(agent):
            break
        await asyncio.sleep(0.1)
    assert journal.seen(agent, event_id) and journal.pending(agent) == []
    assert journal.open_answers(agent) == []
