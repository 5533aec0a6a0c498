"""Surviving production faults on the real homeserver: crashes, outages, floods and hostile input."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from mindroom.bots.recovery import INTERRUPTED_TEXT
from mindroom.testing.model_server import Delay, Echo, Stream, Text
from tests.integration.conftest import E2E
from tests.integration.support import PATIENCE_S, HumanClient, edits_of, eventually, thread_replies
from tests.integration.test_appservice_restart import sent_everything_to_the_service
from tests.integration.test_encryption import _encrypted_human, _encrypted_room_world

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def _room_world(e2e: E2E, *, streaming: bool = False, **defaults) -> tuple[HumanClient, str, str, dict]:
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config(
        [human.user_id],
        {agent: {"display_name": "Helper", "role": "Helps.", "model": "default", "rooms": [room]}},
    )
    config["defaults"].update(enable_streaming=streaming, streaming_edit_interval_ms=100, **defaults)
    return human, agent, room, config


async def _resolve(e2e: E2E, human: HumanClient, room_key: str) -> str:
    response = await human.client.room_resolve_alias(f"#{room_key}:{e2e.homeserver.server_name}")
    room_id = response.room_id
    await e2e.joined(human, room_id)
    return room_id


async def test_survive_kill9_mid_stream_marks_the_answer_interrupted_and_never_answers_twice(e2e: E2E):
    human, agent, room, config = await _room_world(e2e, streaming=True)
    e2e.model_server.script(Stream([f"part{i} " for i in range(40)], delay_s=0.25), model="agent-model")
    daemon = e2e.spawn(config)
    daemon.start()
    await daemon.wait_for_line("daemon ready")
    room_id = await _resolve(e2e, human, room)
    agent_id = f"@{e2e.account_prefix}{agent}:{e2e.homeserver.server_name}"

    event_id = await human.send(room_id, "tell me a long story")
    partial = await human.wait_for(thread_replies(event_id, agent_id))
    daemon.kill()

    daemon.start()
    await daemon.wait_for_line("daemon ready", count=2)
    marked = await human.wait_for(
        lambda ev: edits_of(partial["event_id"])(ev) and ev["content"]["m.new_content"]["body"] == INTERRUPTED_TEXT,
    )
    assert marked["sender"] == agent_id
    assert await daemon.terminate() == 0
    await human.sync_past(room_id)
    assert len(human.matching(thread_replies(event_id, agent_id))) == 1
    agent_calls = [r for r in e2e.model_server.requests if r.get("model") == "agent-model"]
    assert len(agent_calls) == 1


async def test_survive_kill9_mid_turn_finishes_the_turn_once_after_restart(e2e: E2E):
    human, agent, room, config = await _room_world(e2e)
    e2e.model_server.script(Delay(30, Text("too late")), Text("finished after restart"), model="agent-model")
    daemon = e2e.spawn(config)
    daemon.start()
    await daemon.wait_for_line("daemon ready")
    room_id = await _resolve(e2e, human, room)
    agent_id = f"@{e2e.account_prefix}{agent}:{e2e.homeserver.server_name}"

    event_id = await human.send(room_id, "answer me despite the crash")
    await asyncio.to_thread(e2e.model_server.wait_for_requests, 1, 30)
    daemon.kill()
    daemon.start()
    await daemon.wait_for_line("daemon ready", count=2)

    reply = await human.wait_for(thread_replies(event_id, agent_id))
    assert reply["content"]["body"] == "finished after restart"
    assert await daemon.terminate() == 0
    await human.sync_past(room_id)
    assert len(human.matching(thread_replies(event_id, agent_id))) == 1


async def test_survive_homeserver_outage_answers_each_message_once_after_recovery(e2e: E2E):
    human, agent, room, config = await _room_world(e2e)
    e2e.model_server.set_default(Text("still answering"), model="agent-model")
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    agent_id = e2e.user_id(agent)
    before = await human.send(room_id, "before the outage")
    await human.wait_for(thread_replies(before, agent_id))

    await asyncio.to_thread(e2e.homeserver.stop)
    await asyncio.sleep(5.0)  # the outage: long enough for the bots' syncs to fail and back off
    await asyncio.to_thread(e2e.homeserver.start)
    during = [await human.send(room_id, f"sent while the bots reconnect {i}") for i in range(3)]
    for event_id in during:
        await human.wait_for(thread_replies(event_id, agent_id), timeout=2 * PATIENCE_S)
    await e2e.settle(human, room_id)
    for event_id in [before, *during]:
        assert len(human.matching(thread_replies(event_id, agent_id))) == 1


RESTART_DOWN_S = 10.0
"""How long the homeserver stays stopped in the restart tests: past its first retries of a failed transaction."""


async def _answered_through_a_restart(e2e: E2E, human: HumanClient, room_id: str, agent_id: str) -> float:
    """3 messages answered, the homeserver stopped and started again (same data and port), 6 more: each of the
    nine answered exactly once. Returns the seconds from the homeserver listening again to the first answer.

    In appservice mode the restart is a clean one: the homeserver has sent all it had, so nothing is lost (the
    restart that loses events is in `test_appservice_restart`)."""
    before = []
    for i in range(3):
        event_id = await human.send(room_id, f"before the restart {i}", mentions=[agent_id])
        await human.wait_for(thread_replies(event_id, agent_id))
        before.append(event_id)
    await e2e.idle()
    if e2e.delivery == "appservice":
        database = e2e.homeserver.base_dir / "homeserver.db"
        await eventually(lambda: sent_everything_to_the_service(database, room_id), "the homeserver sending all it has")

    await asyncio.to_thread(e2e.homeserver.stop)
    await asyncio.sleep(RESTART_DOWN_S)  # the outage itself, not a wait for something to happen
    await asyncio.to_thread(e2e.homeserver.start)
    back = time.time()
    after = [await human.send(room_id, f"after the restart {i}", mentions=[agent_id]) for i in range(6)]
    first = await human.wait_for(thread_replies(after[0], agent_id), timeout=2 * PATIENCE_S)
    for event_id in after:
        await human.wait_for(thread_replies(event_id, agent_id), timeout=2 * PATIENCE_S)
    await e2e.settle(human, room_id)

    for event_id in [*before, *after]:
        assert len(human.matching(thread_replies(event_id, agent_id))) == 1, event_id
    return first["origin_server_ts"] / 1000 - back  # the homeserver runs on this machine: one clock


async def test_survive_homeserver_restart_answers_each_later_message_once(each_delivery: E2E):
    e2e = each_delivery
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config(
        [human.user_id],
        {agent: {"display_name": "Helper", "role": "Helps.", "model": "default", "rooms": [room]}},
        rooms={room: {"name": "Plain", "encrypted": False}},
    )
    e2e.model_server.set_default(Echo(prefix="echo: "))
    await e2e.start(config, watch=False)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)

    seconds = await _answered_through_a_restart(e2e, human, room_id, e2e.user_id(agent))
    print(f"{e2e.delivery}: first answer {seconds:.2f} s after the homeserver listened again")


async def test_survive_homeserver_restart_answers_each_later_message_once_encrypted(each_delivery: E2E):
    e2e = each_delivery
    human = await _encrypted_human(e2e)
    agent = e2e.name("helper")
    e2e.model_server.set_default(Text("the secret is safe"), model="agent-model")
    room_id, _ = await _encrypted_room_world(e2e, human, [agent])

    seconds = await _answered_through_a_restart(e2e, human, room_id, e2e.user_id(agent))
    print(f"{e2e.delivery}: first answer {seconds:.2f} s after the homeserver listened again")


async def test_survive_flooded_room_does_not_starve_another_room(e2e: E2E):
    human = await e2e.human()
    agent, flood_room, quiet_room = e2e.name("helper"), e2e.name("flood"), e2e.name("quiet")
    config = e2e.basic_config(
        [human.user_id],
        {agent: {"display_name": "Helper", "role": "Helps.", "model": "default", "rooms": [flood_room, quiet_room]}},
    )
    config["defaults"]["max_concurrent_turns_per_agent"] = 1
    e2e.model_server.set_default(Delay(0.5, Text("ok")), model="agent-model")
    await e2e.start(config)
    flood_id, quiet_id = e2e.room_id(flood_room), e2e.room_id(quiet_room)
    await e2e.joined(human, flood_id)
    await e2e.joined(human, quiet_id)
    agent_id = e2e.user_id(agent)

    # All at once, so the flood is queued however slowly this machine sends.
    flood = await asyncio.gather(*(human.send(flood_id, f"flood {i}") for i in range(20)))
    quiet = await human.send(quiet_id, "just one question")
    quiet_reply = await human.wait_for(thread_replies(quiet, agent_id))
    for event_id in flood:
        await human.wait_for(thread_replies(event_id, agent_id))
    asked = (await human.wait_for(lambda ev: ev["event_id"] == quiet))["origin_server_ts"]

    def answered_at(event_id: str) -> int:
        return min(int(reply["origin_server_ts"]) for reply in human.matching(thread_replies(event_id, agent_id)))

    # By the homeserver's clock: the floods still waiting when the quiet question came, and how many of
    # them were answered before it. First come, first served would answer all of them first.
    waiting = [event_id for event_id in flood if answered_at(event_id) > asked]
    served_first = [event_id for event_id in waiting if answered_at(event_id) < quiet_reply["origin_server_ts"]]
    assert len(waiting) > 8, "the flood was answered before the quiet question came: nothing to compare"
    assert len(served_first) <= 8
    await e2e.settle(human, flood_id, quiet_id)
    for event_id in [*flood, quiet]:
        assert len(human.matching(thread_replies(event_id, agent_id))) == 1


async def test_survive_hostile_events_and_strangers_change_nothing(e2e: E2E):
    human, agent, room, config = await _room_world(e2e)
    e2e.model_server.set_default(Text("fine"), model="agent-model")
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    agent_id = e2e.user_id(agent)
    stranger = await e2e.human("mallory")

    send = human.client.room_send
    await send(room_id, "m.room.message", {"msgtype": "m.text", "body": 12345})
    await send(room_id, "m.room.message", {"msgtype": "m.text"})
    await send(room_id, "m.room.message", {"msgtype": "m.text", "body": "x" * 60_000})
    await send(room_id, "m.room.message", {"msgtype": "com.example.unknown", "body": ["not", "text"]})
    await send(
        room_id,
        "m.room.message",
        {
            "msgtype": "m.text",
            "body": "* edit",
            "m.new_content": {"body": "edit"},
            "m.relates_to": {"rel_type": "m.replace", "event_id": "$does-not-exist"},
        },
    )
    await send(room_id, "m.room.message", {"msgtype": "m.text", "body": "weird", "m.relates_to": "not a dict"})
    await send(room_id, "m.reaction", {"m.relates_to": {"rel_type": "m.annotation"}})
    victim = await human.send(room_id, "to be redacted")
    await human.client.room_redact(room_id, victim)

    stranger_room = await stranger.client.room_create(invite=[agent_id])
    await human.client.room_invite(room_id, stranger.user_id)
    await e2e.joined(stranger, room_id)
    await stranger.send(room_id, "!help")
    await stranger.react(room_id, victim, "🛑")

    control = await human.send(room_id, "are you still fine?")
    reply = await human.wait_for(thread_replies(control, agent_id))
    assert reply["content"]["body"] == "fine"
    await e2e.settle(human, room_id)
    assert stranger_room.room_id not in e2e.daemon.bots[agent].joined_rooms
    assert not any(
        ev.get("sender") == e2e.user_id("router") and "Commands" in str(ev.get("content")) for ev in human.events
    )


async def test_survive_secrets_never_reach_the_log(e2e: E2E):
    human, agent, room, config = await _room_world(e2e)
    daemon = e2e.spawn(config)
    daemon.start()
    await daemon.wait_for_line("daemon ready")
    room_id = await _resolve(e2e, human, room)
    agent_id = f"@{e2e.account_prefix}{agent}:{e2e.homeserver.server_name}"
    event_id = await human.send(room_id, "hello")
    await human.wait_for(thread_replies(event_id, agent_id))
    assert await daemon.terminate() == 0

    secrets_on_disk = [e2e.homeserver.registration_shared_secret]
    for path in (e2e.storage / "matrix").rglob("*.json"):
        stored = json.loads(path.read_text())
        assert oct(path.stat().st_mode & 0o777) == "0o600"
        secrets_on_disk += [stored.get("access_token"), stored.get("password")]
    log = daemon.output()
    for secret in filter(None, secrets_on_disk):
        assert secret not in log
