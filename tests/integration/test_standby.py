"""One active daemon per state, on real subprocesses and a real Synapse: a second daemon is refused (naming
the holder), and a standby takes over after kill -9 of the active one, answering every message once."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from urllib.parse import urlsplit

import pytest

from mindroom.testing.model_server import Delay, Text
from tests.integration.conftest import E2E, DaemonProcess
from tests.integration.support import HumanClient, thread_replies
from tests.state.postgres_server import postgres_server, postgres_url

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
__all__ = ["postgres_server", "postgres_url"]

MESSAGES = 12
KILL_AFTER = 5


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def state_env(request: pytest.FixtureRequest) -> dict[str, str]:
    """The environment that puts the daemons' state in SQLite files or in a fresh PostgreSQL database."""
    if request.param == "postgresql":
        return {"MINDROOM_DATABASE_URL": request.getfixturevalue("postgres_url")}
    return {}


async def _world(e2e: E2E) -> tuple[HumanClient, str, str, dict]:
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config([human.user_id], {agent: {"display_name": "Helper", "rooms": [room]}})
    return human, agent, room, config


def _spawn(e2e: E2E, config: dict, log: str, env: dict[str, str]) -> DaemonProcess:
    process = e2e.spawn(config, **env)
    process.log_path = e2e.root / log  # each daemon its own log, so lines are counted per process
    return process


async def _room(e2e: E2E, human: HumanClient, room: str) -> str:
    response = await human.client.room_resolve_alias(f"#{room}:{e2e.homeserver.server_name}")
    await e2e.joined(human, response.room_id)
    return str(response.room_id)


async def test_standby_second_daemon_on_the_same_state_is_refused_naming_the_holder(
    state_env: dict[str, str], e2e: E2E
):
    _human, _agent, _room_key, config = await _world(e2e)
    active = _spawn(e2e, config, "active.log", state_env)
    active.start()
    await active.wait_for_line("daemon ready")
    assert active.process is not None

    second = _spawn(e2e, config, "second.log", state_env)
    second.start()
    assert second.process is not None
    code = await asyncio.to_thread(second.process.wait, 60)

    output = second.output()
    assert code == 3, output[-2000:]
    assert "is held by another daemon (host " in output
    assert f", pid {active.process.pid}, since " in output
    assert "logging in" not in output
    assert active.process.poll() is None


async def test_standby_takes_over_after_kill9_and_answers_every_message_once(state_env: dict[str, str], e2e: E2E):
    human, agent, room, config = await _world(e2e)
    e2e.model_server.set_default(Delay(0.4, Text("answered")), model="agent-model")
    active = _spawn(e2e, config, "active.log", state_env)
    active.start()
    await active.wait_for_line("daemon ready")
    standby = _spawn(e2e, config, "standby.log", {**state_env, "MINDROOM_STANDBY": "1"})
    standby.start()
    await standby.wait_for_line("standby: waiting for the active daemon to stop")
    room_id = await _room(e2e, human, room)
    agent_id = f"@{e2e.account_prefix}{agent}:{e2e.homeserver.server_name}"

    sent: list[str] = []
    killed_at_ms = 0
    for index in range(MESSAGES):
        sent.append(await human.send(room_id, f"question {index}"))
        if index == KILL_AFTER:
            active.kill()
            killed_at_ms = int(time.time() * 1000)
        await asyncio.sleep(0.5)  # spread out, so some questions come while nobody is active
    for event_id in sent:
        await human.wait_for(thread_replies(event_id, agent_id))
    assert await standby.terminate() == 0
    await human.sync_past(room_id)

    replies = {event_id: human.matching(thread_replies(event_id, agent_id)) for event_id in sent}
    assert {event_id: len(found) for event_id, found in replies.items()} == dict.fromkeys(sent, 1)
    after_kill = [r[0]["origin_server_ts"] for r in replies.values() if r[0]["origin_server_ts"] >= killed_at_ms]
    assert after_kill  # the standby answered what came after the kill (how fast is for the benchmarks)
    output = standby.output()
    assert "standby taking over" in output and "daemon ready" in output
    password = urlsplit(state_env.get("MINDROOM_DATABASE_URL", "")).password
    assert password is None or password not in output + active.output()


async def test_standby_continues_the_replaced_run_so_a_message_the_active_never_saw_is_answered(
    state_env: dict[str, str], e2e: E2E
):
    human, agent, room, config = await _world(e2e)
    e2e.model_server.set_default(Text("answered"), model="agent-model")
    before_active = time.time()
    active = _spawn(e2e, config, "active.log", state_env)
    active.start()
    await active.wait_for_line("daemon ready")
    standby = _spawn(e2e, config, "standby.log", {**state_env, "MINDROOM_STANDBY": "1"})
    standby.start()
    await standby.wait_for_line("standby: waiting for the active daemon to stop")
    room_id = await _room(e2e, human, room)
    agent_id = f"@{e2e.account_prefix}{agent}:{e2e.homeserver.server_name}"
    first = await human.send(room_id, "answered by the active daemon")
    await human.wait_for(thread_replies(first, agent_id))

    assert active.process is not None
    active.process.send_signal(signal.SIGSTOP)  # alive and holding the lock, but it sees nothing more
    unseen = await human.send(room_id, "sent while the active daemon was frozen")
    sent_at = time.time()
    await asyncio.sleep(3.0)  # older than the clock-skew allowance by the time anyone takes over
    active.kill()

    reply = await human.wait_for(thread_replies(unseen, agent_id))
    assert reply["content"]["body"] == "answered"
    await asyncio.sleep(2.0)
    assert len(human.matching(thread_replies(unseen, agent_id))) == 1
    assert len(human.matching(thread_replies(first, agent_id))) == 1
    takeover = next(json.loads(line) for line in standby.output().splitlines() if '"standby taking over"' in line)
    assert before_active <= takeover["run_since"] < sent_at  # the active daemon's start, not the takeover
