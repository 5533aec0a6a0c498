"""SIGTERM on `python -m mindroom run` during a streamed answer: the answer ends cleanly and the process exits 0;
and a part of the daemon that fails to stop leaves the others stopped."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from mindroom.bots.bot import INTERRUPTED_NOTE
from mindroom.matrix.credentials import bot_user_id
from mindroom.testing.model_server import Stream
from tests.integration.conftest import E2E, DaemonProcess
from tests.integration.support import HumanClient, edits_of, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

LIFECYCLE = """
import json
from pathlib import Path
from mindroom.hooks import hook

@hook("agent:stopped")
async def on_stopped(ctx):
    with Path(ctx.settings["log"]).open("a") as fh:
        fh.write(json.dumps({"entity": ctx.entity_name, "reason": ctx.stop_reason}) + "\\n")
"""


async def _room_id(human: HumanClient, alias: str) -> str:
    response = await human.client.room_resolve_alias(alias)
    return str(response.room_id)


async def _streaming_world(e2e: E2E, tmp_path: Path) -> tuple[HumanClient, str, str, Path, Path]:
    log = tmp_path / "lifecycle.jsonl"
    e2e.plugin("lifecycle", LIFECYCLE)
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config(
        [human.user_id],
        {agent: {"display_name": "Helper", "role": "Helps.", "rooms": [room]}},
        plugins=[{"path": "plugins/lifecycle", "settings": {"log": str(log)}}],
    )
    config["defaults"]["enable_streaming"] = True
    config["defaults"]["streaming_edit_interval_ms"] = 100
    path = e2e.write_config(config)
    agent_user = bot_user_id(agent, e2e.homeserver.server_name, e2e.account_prefix)
    return human, agent_user, f"#{room}:{e2e.homeserver.server_name}", path, log


def _new_body(event: dict) -> str:
    content = event.get("content", {})
    return str(content.get("m.new_content", {}).get("body", content.get("body", "")))


async def _ask_and_terminate(
    daemon: DaemonProcess, human: HumanClient, alias: str, agent_user: str
) -> tuple[str, str, float]:
    """Ask for a streamed answer, SIGTERM the daemon once it began; (room id, answer id, seconds to exit)."""
    daemon.start()
    await daemon.wait_for_line("daemon ready")
    room_id = await _room_id(human, alias)
    await human.join(room_id)
    question = await human.send(room_id, "stream something")
    streamed = await human.wait_for(thread_replies(question, agent_user))
    signalled = time.monotonic()
    assert await daemon.terminate() == 0
    return room_id, str(streamed["event_id"]), time.monotonic() - signalled


async def _last_edit(human: HumanClient, room_id: str, event_id: str) -> str:
    await human.sync_past(room_id)  # the daemon has exited: all its edits came before this marker
    edits = human.matching(edits_of(event_id))
    assert edits, "the streamed answer was never edited"
    return _new_body(edits[-1])


async def test_shutdown_sigterm_lets_a_streamed_answer_finish_and_exits_0(e2e: E2E, tmp_path: Path):
    human, agent_user, alias, path, log = await _streaming_world(e2e, tmp_path)
    chunks = [f"chunk{index} " for index in range(8)]
    e2e.model_server.script(Stream(chunks, delay_s=0.25), model="agent-model")
    # A grace no loaded machine runs out of: the answer needs about two seconds.
    daemon = e2e.spawn(path, MINDROOM_SHUTDOWN_GRACE_S="60")
    room_id, event_id, _ = await _ask_and_terminate(daemon, human, alias, agent_user)
    assert await _last_edit(human, room_id, event_id) == "".join(chunks)
    stopped = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(record["entity"] for record in stopped) == sorted(["router", e2e.name("helper")])
    assert all(record["reason"] == "shutdown" for record in stopped)


async def test_shutdown_sigterm_past_the_grace_edits_the_answer_to_say_it_was_interrupted(e2e: E2E, tmp_path: Path):
    human, agent_user, alias, path, _ = await _streaming_world(e2e, tmp_path)
    e2e.model_server.script(Stream(["The beginning", " of a very slow answer"], delay_s=60), model="agent-model")
    daemon = e2e.spawn(path, MINDROOM_SHUTDOWN_GRACE_S="1")
    room_id, event_id, _exit_s = await _ask_and_terminate(daemon, human, alias, agent_user)
    # Cut at its 1 s grace: had it waited for the 60 s stream, the answer would have ended whole.
    assert await _last_edit(human, room_id, event_id) == f"The beginning\n\n{INTERRUPTED_NOTE}"


async def test_a_part_that_fails_to_stop_is_logged_and_everything_else_still_stops(
    e2e: E2E, monkeypatch: pytest.MonkeyPatch
):
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config([human.user_id], {agent: {"display_name": "Helper", "rooms": [room]}})
    daemon = await e2e.start(config)
    assert daemon.scheduler is not None and daemon.state is not None
    names = set(daemon.bots)

    async def wedged() -> None:
        raise RuntimeError("the scheduler's store went away")

    monkeypatch.setattr(daemon.scheduler, "stop", wedged)  # the first part to stop after the reloader
    with capture_logs() as logs:
        await asyncio.wait_for(daemon.stop(), 60)

    failed = [entry for entry in logs if entry["event"] == "a part did not stop cleanly"]
    assert [(entry["part"], entry["error"]) for entry in failed] == [("scheduler", "the scheduler's store went away")]
    assert {entry["agent"] for entry in logs if entry["event"] == "bot stopped"} == names
    assert [entry["event"] for entry in logs][-1] == "daemon stopped"
    assert daemon.running is None and daemon.state is None  # the state was released (closed: the daemon opened it)
    await asyncio.wait_for(daemon.stop(), 5)  # stopping again returns at once
    restarted = await e2e.start(config)  # the same data dir starts again
    assert restarted.running is not None
