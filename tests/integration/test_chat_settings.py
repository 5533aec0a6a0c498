"""Settings from chat on the real homeserver: an administrator's `!room_model` and `!model` change the model
the scripted server is asked for, there only, and survive a restart; a non-administrator's `!config` and
`!room_model` change nothing; an administrator's `!config set` of a model's endpoint is refused, and the
operator's key goes nowhere else."""

from __future__ import annotations

from typing import Any

import pytest

from mindroom.testing.model_server import Echo, ScriptedModelServer
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


def settings_config(e2e: E2E, alice: str, bob: str) -> tuple[dict[str, Any], str, str, str]:
    agent, room_a, room_b = e2e.name("helper"), e2e.name("rooma"), e2e.name("roomb")
    agents = {agent: {"display_name": "Helper", "rooms": [room_a, room_b]}}
    config = e2e.basic_config(
        [alice, bob],
        agents,
        administrators=[alice],
        authorization={"global_users": [alice, bob], "config_command_enabled": True},
    )
    config["models"]["fast"] = {**config["models"]["default"], "id": "fast-model"}
    return config, agent, room_a, room_b


async def command(e2e: E2E, human: HumanClient, room_id: str, text: str, thread_root: str | None = None) -> str:
    """Send a command; the router's answer in its thread."""
    sent = await human.send(room_id, text, thread_root=thread_root)
    reply = await human.wait_for(thread_replies(thread_root or sent, e2e.user_id("router")))
    if thread_root is not None:  # a command in a thread: its answer is the router's latest there
        await e2e.settle(human, room_id)
        reply = human.matching(thread_replies(thread_root, e2e.user_id("router")))[-1]
    return str(reply["content"]["body"])


async def model_asked(e2e: E2E, human: HumanClient, room_id: str, agent: str, thread_root: str | None = None) -> str:
    """Ask the agent something; the model id the scripted server was asked for."""
    before = len(e2e.model_server.requests)
    sent = await human.send(room_id, f"@{agent} which model?", mentions=[e2e.user_id(agent)], thread_root=thread_root)
    await human.wait_for(
        lambda event: (
            thread_replies(thread_root or sent, e2e.user_id(agent))(event)
            and event["content"]["m.relates_to"].get("m.in_reply_to", {}).get("event_id") == sent
        )
    )
    return str(e2e.model_server.requests[before]["model"])


async def test_room_model_and_thread_model_apply_there_only_and_survive_a_restart(e2e: E2E):
    alice, bob = await e2e.human("alice"), await e2e.human("bob")
    config, agent, room_a, room_b = settings_config(e2e, alice.user_id, bob.user_id)
    e2e.model_server.set_default(Echo())
    await e2e.start(config)
    a, b = e2e.room_id(room_a), e2e.room_id(room_b)
    await e2e.joined(alice, a)
    await e2e.joined(alice, b)
    thread_in_b = await alice.send(b, "a thread of its own")

    set_room = await command(e2e, alice, a, "!room_model fast")
    set_thread = await command(e2e, alice, b, "!model fast", thread_root=thread_in_b)

    assert set_room.startswith("✅ This room now uses `fast` (openai fast-model)")
    assert set_thread.startswith("✅ This thread now uses `fast` (openai fast-model)")
    assert await model_asked(e2e, alice, a, agent) == "fast-model"
    assert await model_asked(e2e, alice, b, agent) == "agent-model"
    assert await model_asked(e2e, alice, b, agent, thread_root=thread_in_b) == "fast-model"

    await e2e.stop()
    await e2e.start(config)

    assert await model_asked(e2e, alice, a, agent) == "fast-model"
    assert await model_asked(e2e, alice, b, agent) == "agent-model"
    assert await model_asked(e2e, alice, b, agent, thread_root=thread_in_b) == "fast-model"
    listed = await command(e2e, alice, a, "!config show")
    assert f"model = 'fast' (room {a}; set by {alice.user_id})" in listed
    assert await command(e2e, alice, a, "!room_model reset") == "✅ This room uses the configured models again."
    assert await model_asked(e2e, alice, a, agent) == "agent-model"


async def test_a_non_administrators_config_and_room_model_change_nothing(e2e: E2E):
    alice, bob = await e2e.human("alice"), await e2e.human("bob")
    config, agent, room_a, _room_b = settings_config(e2e, alice.user_id, bob.user_id)
    e2e.model_server.set_default(Echo())
    await e2e.start(config)
    a = e2e.room_id(room_a)
    await e2e.joined(bob, a)
    live = e2e.daemon.running.live if e2e.daemon and e2e.daemon.running else None

    refusals = [
        await command(e2e, bob, a, f"!config set agents.{agent}.model fast"),
        await command(e2e, bob, a, "!room_model fast"),
    ]

    assert refusals == ["❌ Only administrators may change settings."] * 2
    assert e2e.daemon is not None and e2e.daemon.running is not None and e2e.daemon.running.live is live
    assert await model_asked(e2e, bob, a, agent) == "agent-model"
    assert not (e2e.storage / "state" / "overrides.db").exists() or _rows(e2e) == 0


async def test_an_administrators_config_set_of_a_models_endpoint_is_refused_and_the_next_turn_stays_home(e2e: E2E):
    alice, bob = await e2e.human("alice"), await e2e.human("bob")
    config, agent, room_a, _room_b = settings_config(e2e, alice.user_id, bob.user_id)
    config["models"]["default"] = {  # the endpoint as `host`, the key as the operator wrote it
        "provider": "openai",
        "id": "agent-model",
        "host": e2e.model_server.base_url,
        "api_key": "operator-key-0123456789",
        "extra_kwargs": {"max_retries": 0},
    }
    e2e.model_server.set_default(Echo())
    with ScriptedModelServer() as listener:
        listener.set_default(Echo())
        await e2e.start(config)
        a = e2e.room_id(room_a)
        await e2e.joined(alice, a)

        refusal = await command(e2e, alice, a, f"!config set models.default.host {listener.base_url}")
        asked = await model_asked(e2e, alice, a, agent)

        assert refusal == (
            "❌ Not changed: `models.default.host` cannot be changed from chat: endpoints, paths, commands, plugins,"
            " sandboxes and credentials are the operator's; edit config.yaml"
        )
        assert asked == "agent-model"
        assert listener.requests == []
        assert not (e2e.storage / "state" / "overrides.db").exists() or _rows(e2e) == 0


def _rows(e2e: E2E) -> int:
    import sqlite3

    db = sqlite3.connect(e2e.storage / "state" / "overrides.db")
    try:
        return int(db.execute("SELECT count(*) FROM overrides").fetchone()[0])
    finally:
        db.close()
