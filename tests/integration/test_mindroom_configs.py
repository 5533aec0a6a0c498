"""Configs shaped as MindRoom's docs write them (`tests/config/mindroom_configs/`) run the daemon on a real
Synapse, and their keys take effect: names with capitals answer, `timezone` reaches the agent's context,
`room_models` picks the model, `room_thread_modes` decides thread or room replies, `num_history_messages` bounds
what the model is sent, `show_tool_calls` marks calls, `access` and `authorization.aliases` decide who gets an
answer, `accept_invites` decides whose invites are taken, `encrypted` rooms are encrypted.

Each config is used as written, adapted only where the shared test homeserver and the scripted model server
need it: names of agents, teams, rooms and the space get this test's suffix, each person is one of the test's
accounts, each model points at the scripted server (as `<model key>-model`; `default` as `agent-model`) and
the router at its own model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nio
import pytest
import yaml
from structlog.testing import capture_logs

from mindroom.state.private_roots import private_state_root, private_workspace
from mindroom.testing.model_server import Text, ToolCall
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, eventually, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

CONFIGS = Path(__file__).resolve().parents[1] / "config" / "mindroom_configs"


def _renamed(node: Any, names: dict[str, str]) -> Any:
    if isinstance(node, dict):
        return {names.get(key, key): _renamed(value, names) for key, value in node.items()}
    if isinstance(node, list):
        return [_renamed(item, names) for item in node]
    return names.get(node, node) if isinstance(node, str) else node


def mindroom_config(e2e: E2E, name: str, people: dict[str, str]) -> dict[str, Any]:
    """The config file `name` as written, adapted to this test's homeserver and model server."""
    raw = yaml.safe_load((CONFIGS / name).read_text(encoding="utf-8"))
    names = {key: e2e.name(key) for section in ("agents", "teams", "rooms") for key in raw.get(section) or {}}
    for entity in [*(raw.get("agents") or {}).values(), *(raw.get("teams") or {}).values()]:
        names.update({room: e2e.name(room) for room in entity.get("rooms", []) if room not in names})
    config = _renamed(raw, {**names, **people})
    base_url = e2e.model_server.base_url
    config["models"] = {
        key: {
            **model,
            "id": "agent-model" if key == "default" else f"{key}-model",
            "extra_kwargs": {"base_url": base_url, "max_retries": 0},
        }
        for key, model in config["models"].items()
    }
    config["models"]["routing"] = e2e.models()["routing"]
    config["router"] = {**config.get("router", {}), "model": "routing"}
    if "matrix_space" in config:
        config["matrix_space"]["name"] = e2e.name(config["matrix_space"]["name"])
    return config


def body(event: dict[str, Any]) -> str:
    content = event.get("content", {})
    return str(content.get("m.new_content", content).get("body", ""))


def system_text(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content")) for m in request["messages"] if m.get("role") in {"system", "developer"})


def asked(text: str):
    """A model request whose last user message is `text` (each question in these tests is unique)."""

    def predicate(request: dict[str, Any]) -> bool:
        users = [m for m in request.get("messages", []) if m.get("role") == "user"]
        return bool(users) and text in str(users[-1].get("content"))

    return predicate


def requests_for(e2e: E2E, text: str) -> list[dict[str, Any]]:
    return [request for request in e2e.model_server.requests if asked(text)(request)]


def from_(sender: str, room_id: str, text: str):
    """A message (or an edit) from `sender` in `room_id` whose text holds `text`."""

    def predicate(event: dict[str, Any]) -> bool:
        return event.get("sender") == sender and event.get("room_id") == room_id and text in body(event)

    return predicate


def replies_to(question: str, sender: str):
    """A message from `sender` replying to `question` (in a thread or in the room), not an edit."""

    def predicate(event: dict[str, Any]) -> bool:
        relation = event.get("content", {}).get("m.relates_to") or {}
        replied = (relation.get("m.in_reply_to") or {}).get("event_id")
        return (
            event.get("sender") == sender
            and relation.get("rel_type") != "m.replace"
            and question in (replied, relation.get("event_id"))
        )

    return predicate


async def _dm(human: HumanClient, invitee: str) -> str:
    created = await human.client.room_create(is_direct=True, invite=[invitee], preset=nio.RoomPreset.private_chat)
    assert isinstance(created, nio.RoomCreateResponse), created
    return str(created.room_id)


async def _membership(human: HumanClient, room_id: str, user_id: str) -> str | None:
    state = await human.client.room_get_state(room_id)
    members = {e["state_key"]: e["content"].get("membership") for e in state.events if e["type"] == "m.room.member"}
    return members.get(user_id)


async def test_mindroom_config_teams_rooms_and_chat_settings_take_effect(e2e: E2E):
    ana = await e2e.human("ana", encrypted=True)
    ben = await e2e.human("ben", encrypted=True)
    bridged = await e2e.human("tgana", encrypted=True)
    standup = await e2e.human("standup", encrypted=True)
    people = {
        "@ana:chat.example.net": ana.user_id,
        "@ben:chat.example.net": ben.user_id,
        "@telegram_ana:chat.example.net": bridged.user_id,
        "@standup_bot:chat.example.net": standup.user_id,
    }
    config = mindroom_config(e2e, "teams_and_rooms.yaml", people)
    config["room_defaults"]["invite_users"] += [bridged.user_id, standup.user_id]
    e2e.model_server.set_default(Text("Noted."))
    e2e.model_server.when(lambda r: r["messages"][-1].get("role") == "tool", Text("It is 5."))
    e2e.model_server.when(asked("use the calculator"), ToolCall("calculate", {"expression": "2 + 3"}))
    with capture_logs() as start_logs:
        await e2e.start(config, watch=False)
    studio, hallway = e2e.room_id(e2e.name("studio")), e2e.room_id(e2e.name("hallway"))
    for human in (ana, ben, bridged):
        await e2e.joined(human, studio)
    await e2e.joined(ana, hallway)
    planner, critic = e2e.user_id(e2e.name("Planner")), e2e.user_id(e2e.name("Critic"))

    # A name with capitals answers; in the studio it answers in a thread, with the room's model.
    question = await ana.send(studio, "plan the week", mentions=[planner])
    await ana.wait_for(thread_replies(question, planner))
    (request,) = requests_for(e2e, "plan the week")
    assert request["model"] == "deep-model"  # room_models: studio -> deep
    assert "America/New_York" in system_text(request)  # the agent's own timezone

    # In the hallway (room_thread_modes: room) it answers in the room, with its own model.
    question = await ana.send(hallway, "hallway question one", mentions=[planner])
    reply = await ana.wait_for(replies_to(question, planner))
    assert (reply["content"].get("m.relates_to") or {}).get("rel_type") != "m.thread"
    assert requests_for(e2e, "hallway question one")[0]["model"] == "agent-model"

    # num_history_messages: 6 bounds what the model is sent of the earlier exchanges.
    for number in ("two", "three", "four", "five"):
        question = await ana.send(hallway, f"hallway question {number}", mentions=[planner])
        await ana.wait_for(replies_to(question, planner))
    await e2e.idle()
    last = requests_for(e2e, "hallway question five")[-1]
    earlier = [m for m in last["messages"] if m.get("role") in {"user", "assistant"}][:-1]
    assert len(earlier) == 6
    assert "hallway question one" not in str(earlier) and "hallway question four" in str(earlier)

    # bot_accounts: another bot's message in the hallway, mentioning nobody, is not answered; a person's is.
    await e2e.joined(standup, hallway)
    from_bot = await standup.send(hallway, "standup bot: build 41 is green")
    from_person = await ana.send(hallway, "anyone around in the hallway?")
    await ana.wait_for(replies_to(from_person, planner))
    await e2e.settle(ana, hallway)
    assert ana.matching(replies_to(from_bot, planner)) == []
    assert requests_for(e2e, "build 41 is green") == []

    # The Critic: the top-level timezone, tool calls marked, and only Ana (or her bridged account) is answered.
    question = await ana.send(studio, "use the calculator: 2 + 3", mentions=[critic])
    answer = await ana.wait_for(from_(critic, studio, "It is 5."))
    assert "🔧 `calculate` [1]" in body(answer)
    assert "Asia/Tokyo" in system_text(requests_for(e2e, "use the calculator")[0])

    refused = await ben.send(studio, "critic, a word from ben", mentions=[critic])
    via_bridge = await bridged.send(studio, "critic, a word from the bridge", mentions=[critic])
    await ana.wait_for(thread_replies(via_bridge, critic))  # Ana's device has read the room longest
    signal = await ben.send(studio, "planner, a word from ben", mentions=[planner])
    await ana.wait_for(thread_replies(signal, planner))
    await e2e.settle(ana, studio)
    assert ana.matching(thread_replies(refused, critic)) == []
    assert requests_for(e2e, "a word from ben") == [requests_for(e2e, "planner, a word from ben")[0]]

    # accept_invites: the Critic takes Ana's invite, not Ben's; the router (false) takes none.
    from_ana, from_ben = await _dm(ana, critic), await _dm(ben, critic)
    to_router = await _dm(ana, e2e.user_id("router"))

    async def decided() -> bool:
        return (
            await _membership(ana, from_ana, critic) == "join"
            and await _membership(ben, from_ben, critic) == "leave"
            and await _membership(ana, to_router, e2e.user_id("router")) == "leave"
        )

    await eventually(decided, "the invites decided")

    # rooms.*: names, join rules and admins as configured; matrix_space: a space named as configured, with both.
    studio_state = {(e["type"], e["state_key"]): e["content"] for e in (await ana.client.room_get_state(studio)).events}
    hallway_state = {
        (e["type"], e["state_key"]): e["content"] for e in (await ana.client.room_get_state(hallway)).events
    }
    assert studio_state[("m.room.name", "")]["name"] == "The Studio"
    assert studio_state[("m.room.power_levels", "")]["users"][ana.user_id] == 100  # room_defaults.admins
    assert hallway_state[("m.room.join_rules", "")]["join_rule"] == "knock"
    assert studio_state[("m.room.join_rules", "")]["join_rule"] == "invite"
    # listed: the hallway is asked into the directory (this homeserver's publication rules refuse, and it says
    # so); the studio is kept out of it.
    asked_listed = [e for e in start_logs if e["event"] == "room directory listing refused"]
    assert [(e["room_id"], e["visibility"]) for e in asked_listed] == [(hallway, "public")]
    assert (await ana.client.room_get_visibility(studio)).visibility == "private"
    resolved = await ana.client.room_resolve_alias(f"#{e2e.account_prefix}space:{e2e.homeserver.server_name}")
    assert isinstance(resolved, nio.RoomResolveAliasResponse), resolved
    await e2e.joined(ana, resolved.room_id)  # room_defaults.invite_users are invited to the space too
    space = {
        (e["type"], e["state_key"]): e["content"] for e in (await ana.client.room_get_state(resolved.room_id)).events
    }
    assert space[("m.room.create", "")].get("type") == "m.space"
    assert space[("m.room.name", "")]["name"] == e2e.name("Workshop")
    assert {key for kind, key in space if kind == "m.space.child"} == {studio, hallway}

    # encrypted: the studio is encrypted; the hallway (room_defaults say nothing) is not.
    assert (await ana.client.room_get_state_event(studio, "m.room.encryption")).content.get("algorithm")
    assert isinstance(await ana.client.room_get_state_event(hallway, "m.room.encryption"), nio.RoomGetStateEventError)


async def test_mindroom_config_getting_started_answers_with_the_scheduler_and_the_zone(e2e: E2E):
    lee = await e2e.human("lee")
    config = mindroom_config(e2e, "getting_started.yaml", {"@lee:matrix.example.org": lee.user_id})
    e2e.model_server.script(Text("Hello, Lee."), model="agent-model")
    await e2e.start(config, watch=False)
    home = e2e.room_id(e2e.name("home"))
    await e2e.joined(lee, home)
    helper = e2e.user_id(e2e.name("helper"))

    question = await lee.send(home, "hello there", mentions=[helper])
    await lee.wait_for(thread_replies(question, helper))
    await lee.wait_for(lambda event: from_(helper, home, "Hello")(event) and body(event) == "Hello, Lee.")  # streamed
    (request,) = requests_for(e2e, "hello there")
    names = {tool["function"]["name"] for tool in request.get("tools") or []}
    assert {"schedule", "list_schedules", "cancel_schedule"} <= names  # defaults.tools: [scheduler]
    assert "Europe/Lisbon" in system_text(request)


async def test_mindroom_config_developer_reads_its_context_files_and_its_companion_its_memory_file(e2e: E2E):
    dev = await e2e.human("dev")
    config = mindroom_config(e2e, "developer_and_companion.yaml", {"@dev:chat.example.net": dev.user_id})
    devbot, buddy = e2e.name("DevBot"), e2e.name("Buddy")
    mindroom_layout = e2e.storage / "agents" / devbot / "workspace"  # a MindRoom data directory's own folder
    mindroom_layout.mkdir(parents=True)
    (mindroom_layout / "AGENTS.md").write_text("Always run pytest with -q.\n")
    (mindroom_layout / "NOTES.md").write_text("The release is on Friday.\n")
    # Buddy is private (per: user, root: companion): each person's copy keeps its own MEMORY.md.
    dev_copy = private_workspace(private_state_root(e2e.storage, "user", dev.user_id, buddy), buddy, "companion")
    dev_copy.mkdir(parents=True, mode=0o700)
    (dev_copy / "MEMORY.md").write_text("Dev prefers short answers.\n")
    shared = e2e.storage / "workspaces" / buddy  # a shared folder of the agent's is not a private copy's memory
    shared.mkdir(parents=True)
    (shared / "MEMORY.md").write_text("Nobody's notes.\n")
    e2e.model_server.set_default(Text("Understood."))
    await e2e.start(config, watch=False)
    room = e2e.room_id(e2e.name("dev"))
    await e2e.joined(dev, room)

    for agent, text in ((devbot, "how do I run the tests?"), (buddy, "what do you know about me?")):
        question = await dev.send(room, text, mentions=[e2e.user_id(agent)])
        await dev.wait_for(thread_replies(question, e2e.user_id(agent)))

    (to_devbot,) = requests_for(e2e, "how do I run the tests?")
    (to_buddy,) = requests_for(e2e, "what do you know about me?")
    assert to_devbot["model"] == "code-model"
    assert "Always run pytest with -q." in system_text(to_devbot) and "The release is on Friday." in system_text(
        to_devbot
    )
    assert "Dev prefers short answers." not in system_text(to_devbot)
    assert "Dev prefers short answers." in system_text(to_buddy)  # memory_backend: file, in Dev's own copy
    assert "Nobody's notes." not in system_text(to_buddy)
    assert "Always run pytest" not in system_text(to_buddy)
