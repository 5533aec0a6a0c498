"""End-to-end encryption on a real Synapse: encrypted DMs and rooms, restarts, a second device, lost keys.

The human is a full encryption device with its own store (as Element is), trusting unverified devices.
"""

from __future__ import annotations

import asyncio
import io
import secrets
import time
from typing import Any

import pytest
from rich.console import Console
from structlog.testing import capture_logs

from mindroom.cli.chat import ChatLogin, TerminalChat
from mindroom.matrix.crypto.undecrypted import NOTICE_AFTER_S, UNDECRYPTABLE_NOTICE
from mindroom.testing.model_server import HttpError, Stream, Text, last_user_message
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, WithheldSession, edits_of, eventually, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

RELAY = """
from mindroom.hooks import hook

@hook("message:after_response")
async def relay(ctx):
    await ctx.send_message(ctx.envelope.room_id, "a hook's note", thread_id=ctx.envelope.resolved_thread_id)
"""


async def _encrypted_human(e2e: E2E, base: str = "alice", *, device_of: HumanClient | None = None) -> HumanClient:
    if device_of is None:
        user = e2e.homeserver.register_user(e2e.name(base), "secret-pass-" + e2e.uid)
        user_id, password = user.user_id, user.password
    else:
        user_id, password = device_of.user_id, device_of.password
    store = e2e.root / "human-crypto" / secrets.token_hex(4)
    human = HumanClient(e2e.homeserver.url, user_id, password, store_dir=store)
    await human.start()
    e2e.humans.append(human)
    return human


def _agent(name: str, room: str) -> dict[str, Any]:
    return {"display_name": name.title(), "role": f"{name} helps.", "model": "default", "rooms": [room]}


def _body(event: dict[str, Any]) -> str:
    return str(event.get("content", {}).get("body", ""))


async def _encrypted_room_world(
    e2e: E2E, human: HumanClient, agents: list[str], **extra: Any
) -> tuple[str, dict[str, Any]]:
    """The daemon with `agents` in one managed room that it creates encrypted; returns (room id, config)."""
    room = e2e.name("vault")
    config = e2e.basic_config(
        [human.user_id],
        {name: _agent(name, room) for name in agents},
        rooms={room: {"name": "Vault", "encrypted": True}},
        **extra,
    )
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    for name in agents:
        await human.wait_for_member(room_id, e2e.user_id(name))
    return room_id, config


async def _bot_events_are_all_encrypted(e2e: E2E, human: HumanClient, room_id: str) -> list[dict[str, Any]]:
    bots = set(e2e.daemon.running.directory.bot_user_ids.values()) if e2e.daemon else set()
    sent = [e for e in await human.raw_timeline(room_id) if e["sender"] in bots and "state_key" not in e]
    assert sent, "the bots sent nothing to scan"
    assert [e["type"] for e in sent] == ["m.room.encrypted"] * len(sent)
    return sent


async def test_encryption_dm_with_an_agent_is_answered_encrypted(e2e: E2E):
    human = await _encrypted_human(e2e)
    agent, room = e2e.name("helper"), e2e.name("lobby")
    await e2e.start(e2e.basic_config([human.user_id], {agent: _agent(agent, room)}))
    agent_id = e2e.user_id(agent)
    e2e.model_server.set_default(Text("a private answer"), model="agent-model")

    dm = await human.create_room([agent_id], direct=True)
    await human.wait_for_member(dm, agent_id)
    event_id = await human.send(dm, "hello in private")
    reply = await human.wait_for(thread_replies(event_id, agent_id))

    assert _body(reply) == "a private answer"
    assert reply.get("decrypted") is True
    assert "hello in private" in last_user_message(e2e.model_server.requests[-1])
    await _bot_events_are_all_encrypted(e2e, human, dm)


async def test_encryption_mention_in_an_encrypted_group_room_reaches_that_agent(e2e: E2E):
    human = await _encrypted_human(e2e)
    first, second = e2e.name("alpha"), e2e.name("beta")
    room_id, _ = await _encrypted_room_world(e2e, human, [first, second])
    e2e.model_server.set_default(Text("beta here"), model="agent-model")
    assert "m.room.encryption" in {e["type"] for e in await human.raw_timeline(room_id)}

    second_id = e2e.user_id(second)
    event_id = await human.send(room_id, f"{second_id} can you help?", mentions=[second_id])
    reply = await human.wait_for(thread_replies(event_id))

    assert reply["sender"] == second_id
    assert reply.get("decrypted") is True
    await e2e.settle(human, room_id)
    assert len(human.matching(thread_replies(event_id))) == 1
    assert not any(r.get("model") == "router-model" for r in e2e.model_server.requests)


async def test_encryption_everything_the_bots_send_into_an_encrypted_room_is_encrypted(e2e: E2E):
    human = await _encrypted_human(e2e)
    e2e.plugin("relay", RELAY)
    agent = e2e.name("helper")
    room_id, _ = await _encrypted_room_world(
        e2e, human, [agent], plugins=[{"path": "plugins/relay"}], defaults={"enable_streaming": True}
    )
    agent_id, router_id = e2e.user_id(agent), e2e.user_id("router")
    e2e.model_server.script(Text("streamed " * 60), model="agent-model")

    answered = await human.send(room_id, "tell me something long")
    reply = await human.wait_for(thread_replies(answered, agent_id))
    final = await human.wait_for(lambda e: edits_of(reply["event_id"])(e) and "⋯" not in str(e["content"]))
    await human.wait_for(lambda e: _body(e) == "a hook's note")
    help_request = await human.send(room_id, "!help")
    await human.wait_for(thread_replies(help_request, router_id))
    command = await human.send(room_id, "!schedule in 1 second wake up")
    await human.wait_for(thread_replies(command, router_id))
    await human.wait_for(lambda e: "wake up" in _body(e) and e["sender"] in {agent_id, router_id})
    e2e.model_server.script(HttpError(500), model="agent-model")
    failing = await human.send(room_id, "this one breaks")
    error = await human.wait_for(thread_replies(failing, agent_id))
    await e2e.settle(human, room_id)

    assert final["content"]["m.new_content"]["body"].strip().startswith("streamed")
    assert _body(error).startswith("⚠️")
    sent = await _bot_events_are_all_encrypted(e2e, human, room_id)
    assert {e["sender"] for e in sent} == {agent_id, router_id}
    seen = [e for e in human.events if e["sender"] in {agent_id, router_id} and "state_key" not in e]
    assert seen and all(e.get("decrypted") is True for e in seen)


async def test_encryption_restart_keeps_the_device_and_keeps_decrypting(e2e: E2E):
    human = await _encrypted_human(e2e)
    agent = e2e.name("helper")
    room_id, config = await _encrypted_room_world(e2e, human, [agent])
    agent_id = e2e.user_id(agent)
    e2e.model_server.set_default(Text("still here"), model="agent-model")
    before = await human.send(room_id, "before the restart")
    await human.wait_for(thread_replies(before, agent_id))
    device = e2e.daemon.bots[agent].client.device_id

    await e2e.stop()
    phone = await _encrypted_human(e2e, device_of=human)  # a device added while the daemon was down
    await e2e.start(config)
    after = await human.send(room_id, "after the restart")  # the same room session as before
    reply = await human.wait_for(thread_replies(after, agent_id))

    assert e2e.daemon.bots[agent].client.device_id == device
    assert reply.get("decrypted") is True
    assert "after the restart" in last_user_message(e2e.model_server.requests[-1])
    on_phone = await phone.wait_for(lambda e: e["event_id"] == reply["event_id"])
    assert on_phone.get("decrypted") is True


async def test_encryption_a_second_device_of_the_same_user_reads_the_answers(e2e: E2E):
    human = await _encrypted_human(e2e)
    agent = e2e.name("helper")
    room_id, _ = await _encrypted_room_world(e2e, human, [agent])
    phone = await _encrypted_human(e2e, device_of=human)
    assert phone.device_id != human.device_id
    agent_id = e2e.user_id(agent)
    e2e.model_server.set_default(Text("for all your devices"), model="agent-model")

    event_id = await human.send(room_id, "read this on the phone too")
    on_phone = await phone.wait_for(thread_replies(event_id, agent_id))

    assert on_phone.get("decrypted") is True
    assert _body(on_phone) == "for all your devices"
    question = await phone.wait_for(lambda e: e["event_id"] == event_id)
    assert _body(question) == "read this on the phone too"


async def test_encryption_unreadable_messages_get_one_notice_and_are_answered_when_the_key_comes(e2e: E2E):
    human = await _encrypted_human(e2e)
    agent = e2e.name("helper")
    room_id, _ = await _encrypted_room_world(e2e, human, [agent])
    agent_id, router_id = e2e.user_id(agent), e2e.user_id("router")
    e2e.model_server.set_default(Text("now I can read it"), model="agent-model")

    withheld = WithheldSession()
    with capture_logs() as logs:
        first = await human.send_withheld(room_id, "you cannot read this", withheld)
        second = await human.send_withheld(room_id, "nor this", withheld)
        notice = await human.wait_for(lambda e: _body(e) == UNDECRYPTABLE_NOTICE)
        expected = {(name, event_id) for name in (agent, "router") for event_id in (first, second)}

        def parked() -> list[dict[str, Any]]:
            return [entry for entry in logs if entry["event"] == "encrypted event not readable yet"]

        await eventually(lambda: {(e["agent"], e["event_id"]) for e in parked()} == expected, "both bots parking both")
        # A notice is due NOTICE_AFTER_S after parking: by then plus a margin, a second one would have come.
        # (The daemon has no later sign to wait for; a slow machine could only make this pass, not fail.)
        await asyncio.sleep(NOTICE_AFTER_S + 3.0)
        await human.sync_past(room_id)

    assert {(entry["agent"], entry["event_id"]) for entry in parked()} == expected
    assert [entry["key_requested"] for entry in parked()].count(True) == 2  # one request per bot and session

    notices = human.matching(lambda e: _body(e) == UNDECRYPTABLE_NOTICE)
    assert len(notices) == 1
    assert notice["sender"] == router_id  # one bot of the daemon answers, not each one that failed
    assert notice["content"]["msgtype"] == "m.notice"
    assert notice["content"]["m.relates_to"]["event_id"] == first
    assert human.matching(thread_replies(first, agent_id)) == []

    for bot in (agent_id, router_id):
        await human.hand_over(room_id, withheld, bot)
    for event_id in (first, second):
        reply = await human.wait_for(thread_replies(event_id, agent_id))
        assert _body(reply) == "now I can read it"
    asked = [last_user_message(r) for r in e2e.model_server.requests if r.get("model") == "agent-model"]
    assert any("you cannot read this" in text for text in asked)
    assert any("nor this" in text for text in asked)


def _made_up_encrypted_content(device_id: str) -> dict[str, Any]:
    """An `m.room.encrypted` content with a random session and ciphertext: nobody holds a key to it."""
    return {
        "algorithm": "m.megolm.v1.aes-sha2",
        "sender_key": secrets.token_urlsafe(32),
        "ciphertext": secrets.token_urlsafe(96),
        "session_id": secrets.token_urlsafe(32),
        "device_id": device_id,
    }


async def test_encryption_made_up_encrypted_events_of_a_stranger_get_no_notice_and_no_key_request(e2e: E2E):
    human = await _encrypted_human(e2e)
    stranger = await _encrypted_human(e2e, "mallory")
    agent, vault, plain = e2e.name("helper"), e2e.name("vault"), e2e.name("plain")
    config = e2e.basic_config(
        [human.user_id],
        {agent: {**_agent(agent, vault), "rooms": [vault, plain]}},
        rooms={vault: {"name": "Vault", "encrypted": True}, plain: {"name": "Plain"}},
        room_defaults={"invite_users": [human.user_id, stranger.user_id]},
    )
    await e2e.start(config)
    vault_id, plain_id = e2e.room_id(vault), e2e.room_id(plain)
    for person in (human, stranger):
        for room_id in (vault_id, plain_id):
            await e2e.joined(person, room_id)

    with capture_logs() as logs:
        fakes = [
            await stranger.send_raw(room_id, "m.room.encrypted", _made_up_encrypted_content(stranger.device_id))
            for room_id in (vault_id, plain_id)
            for _ in range(6)
        ]
        in_plain = await human.send_raw(plain_id, "m.room.encrypted", _made_up_encrypted_content(human.device_id))
        withheld = await human.send_withheld(vault_id, "you cannot read this", WithheldSession())
        notice = await human.wait_for(lambda e: _body(e) == UNDECRYPTABLE_NOTICE)
        await asyncio.sleep(2.0)  # every made-up event is overdue by now

    assert notice["room_id"] == vault_id
    assert notice["content"]["m.relates_to"]["event_id"] == withheld
    notices = human.matching(lambda e: _body(e) == UNDECRYPTABLE_NOTICE)
    assert [n["event_id"] for n in notices] == [notice["event_id"]]
    assert stranger.matching(lambda e: _body(e) == UNDECRYPTABLE_NOTICE) == [notice]  # she sees it, nothing more
    parked = {entry["event_id"] for entry in logs if entry["event"] == "encrypted event not readable yet"}
    assert parked == {in_plain, withheld}  # keys are asked for the human's events only
    dropped = {
        entry["event_id"] for entry in logs if entry["event"] == "unreadable event of an unauthorized sender dropped"
    }
    assert dropped == set(fakes)
    assert any(entry["event"] == "unreadable event in a plain room not answered" for entry in logs)


async def test_encryption_terminal_chat_talks_in_an_encrypted_room(e2e: E2E):
    human = await _encrypted_human(e2e)
    agent = e2e.name("helper")
    room_id, _ = await _encrypted_room_world(e2e, human, [agent])
    e2e.model_server.set_default(Text("hello terminal"), model="agent-model")
    login = ChatLogin(e2e.homeserver.url, human.user_id, human.password)

    async with TerminalChat(login, room_id, Console(file=io.StringIO())) as chat:
        await chat.ask("hi from the terminal", timeout_s=30)
        answers = chat.answers

    assert [a.shown_text for a in answers] == ["hello terminal"]
    sent = [e for e in await human.raw_timeline(room_id) if e["sender"] == human.user_id and "state_key" not in e]
    assert sent and all(e["type"] == "m.room.encrypted" for e in sent)


async def test_encryption_an_encrypted_stop_reaction_stops_a_streaming_answer(e2e: E2E):
    human = await _encrypted_human(e2e)
    agent = e2e.name("helper")
    room_id, _ = await _encrypted_room_world(e2e, human, [agent], defaults={"enable_streaming": True})
    agent_id = e2e.user_id(agent)
    e2e.model_server.script(
        Stream(["The first part", " and a part nobody should see"], delay_s=30), model="agent-model"
    )

    question = await human.send(room_id, "tell me a long story")
    streamed = await human.wait_for(thread_replies(question, agent_id))
    reaction = await human.react(room_id, streamed["event_id"], "🛑")
    final = await human.wait_for(
        lambda e: edits_of(streamed["event_id"])(e) and "(stopped)" in str(e["content"].get("m.new_content")),
    )

    assert final.get("decrypted") is True
    raw = {e["event_id"]: e for e in await human.raw_timeline(room_id)}
    assert raw[reaction]["type"] == "m.room.encrypted"  # the bot had to decrypt the reaction to act on it


async def test_encryption_an_agent_restarted_by_a_reload_keeps_reading_the_room(e2e: E2E):
    human = await _encrypted_human(e2e)
    agent = e2e.name("helper")
    room_id, config = await _encrypted_room_world(e2e, human, [agent])
    agent_id = e2e.user_id(agent)
    e2e.model_server.set_default(Text("same device, new instance"), model="agent-model")
    before = e2e.daemon.bots[agent]
    device = before.client.device_id
    await human.wait_for(thread_replies(await human.send(room_id, "before the reload"), agent_id))

    config["agents"][agent]["role"] = "Helps differently."
    saved = time.time()
    e2e.write_config(config)
    outcome = await e2e.reloads.wait(saved)
    assert outcome.ok and outcome.entities.changed == (agent,)
    after = e2e.daemon.bots[agent]
    assert after is not before
    assert after.client.device_id == device

    human.client.olm.outbound_group_sessions.pop(room_id, None)  # a new room key, sent during or after the handover
    event_id = await human.send(room_id, "after the reload")
    reply = await human.wait_for(thread_replies(event_id, agent_id))
    assert reply.get("decrypted") is True


async def test_encryption_a_plain_room_of_the_daemon_turns_encrypted_when_the_config_says_so(e2e: E2E):
    human = await _encrypted_human(e2e)
    agent, room = e2e.name("helper"), e2e.name("annex")
    config = e2e.basic_config([human.user_id], {agent: _agent(agent, room)}, rooms={room: {"name": "Annex"}})
    await e2e.start(config)
    room_id = e2e.room_id(room)
    assert "m.room.encryption" not in {e["type"] for e in await human.raw_timeline(room_id)}
    await e2e.stop()

    config["rooms"][room]["encrypted"] = True
    await e2e.start(config)
    await e2e.joined(human, room_id)
    agent_id = e2e.user_id(agent)
    await human.wait_for_member(room_id, agent_id)
    e2e.model_server.set_default(Text("encrypted from now on"), model="agent-model")
    event_id = await human.send(room_id, "is this room private now?")
    reply = await human.wait_for(thread_replies(event_id, agent_id))

    assert reply.get("decrypted") is True
    assert "m.room.encryption" in {e["type"] for e in await human.raw_timeline(room_id)}
