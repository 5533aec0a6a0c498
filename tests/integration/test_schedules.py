"""Schedules on a real Synapse: posted at their time, rewritten or suppressed by `schedule:fired`, listed, cancelled."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mindroom.constants import ORIGINAL_SENDER_KEY
from mindroom.testing.model_server import Text
from tests.integration.conftest import E2E
from tests.integration.support import eventually, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

FIRED = """
import json
from pathlib import Path
from mindroom.hooks import hook

@hook("schedule:fired")
async def on_fired(ctx):
    with Path(ctx.settings["log"]).open("a") as fh:
        fh.write(json.dumps({"task": ctx.task_id, "text": ctx.message_text, "agent": ctx.agent_name,
                             "by": ctx.created_by, "thread": ctx.thread_id}) + "\\n")
    if "rewrite" in ctx.message_text:
        ctx.message_text = "rewritten: " + ctx.message_text
    if "hush" in ctx.message_text:
        ctx.suppress = True
"""


def _body(event: dict) -> str:
    return str(event.get("content", {}).get("body", ""))


async def test_schedule_posts_at_its_time_rewritten_by_hook_and_the_agent_answers(e2e: E2E, tmp_path: Path):
    log = tmp_path / "fired.jsonl"
    e2e.plugin("fired", FIRED)
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config(
        [human.user_id],
        {agent: {"display_name": "Helper", "role": "Helps.", "rooms": [room]}},
        plugins=[{"path": "plugins/fired", "settings": {"log": str(log)}}],
    )
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    router, agent_user = e2e.user_id("router"), e2e.user_id(agent)
    e2e.model_server.set_default(Text("on it"), model="agent-model")

    command = await human.send(room_id, "!schedule in 2 seconds rewrite me")
    confirmation = await human.wait_for(thread_replies(command, router))
    assert "Scheduled" in _body(confirmation)
    task_id = re.search(r"`([0-9a-f]{6})`", _body(confirmation)).group(1)

    posted = await human.wait_for(lambda ev: ev.get("sender") == router and _body(ev) == "rewritten: rewrite me")
    # At its time by the homeserver's clock: two seconds after the command (which came before the
    # confirmation), give or take what a loaded machine adds, far from "at once" or "a minute later".
    asked = await human.wait_for(lambda ev: ev["event_id"] == command)
    assert posted["origin_server_ts"] - asked["origin_server_ts"] >= 1500
    assert posted["origin_server_ts"] - confirmation["origin_server_ts"] <= 12_000
    assert posted["content"][ORIGINAL_SENDER_KEY] == human.user_id
    assert posted["content"]["m.mentions"]["user_ids"] == [agent_user]
    answer = await human.wait_for(thread_replies(posted["event_id"], agent_user))
    assert _body(answer) == "on it"
    fired = [json.loads(line) for line in log.read_text().splitlines()]
    assert fired == [{"task": task_id, "text": "rewrite me", "agent": agent, "by": human.user_id, "thread": None}]

    hushed = await human.send(room_id, "!schedule in 1 second hush now")
    await human.wait_for(thread_replies(hushed, router))
    await eventually(lambda: len(log.read_text().splitlines()) == 2, "the hushed schedule firing")
    assert json.loads(log.read_text().splitlines()[1])["text"] == "hush now"
    # Schedules fire one after another: once a later one is posted, the hushed one is fully handled.
    later = await human.send(room_id, "!schedule in 1 second all clear")
    await human.wait_for(thread_replies(later, router))
    await human.wait_for(lambda ev: ev.get("sender") == router and _body(ev) == "all clear")
    await human.sync_past(room_id)
    assert not human.matching(lambda ev: ev.get("sender") == router and _body(ev) == "hush now")

    repeating = await human.send(room_id, "!schedule every day at 9:00 stand-up")
    await human.wait_for(thread_replies(repeating, router))
    listing = await human.send(room_id, "!schedule list")
    listed = _body(await human.wait_for(thread_replies(listing, router)))
    daily_id = re.search(r"`([0-9a-f]{6})` every day at 09:00", listed).group(1)
    cancel = await human.send(room_id, f"!schedule cancel {daily_id}")
    assert "Cancelled" in _body(await human.wait_for(thread_replies(cancel, router)))
    relist = await human.send(room_id, "!schedule list")
    assert _body(await human.wait_for(thread_replies(relist, router))) == "No schedules in this room."


async def test_schedule_in_a_thread_posts_into_that_thread(e2e: E2E):
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config([human.user_id], {agent: {"display_name": "Helper", "role": "Helps.", "rooms": [room]}})
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    e2e.model_server.set_default(Text("noted"), model="agent-model")
    root = await human.send(room_id, "planning thread")
    await human.wait_for(thread_replies(root, e2e.user_id(agent)))

    await human.send(room_id, "!schedule in 1 second check the plan", thread_root=root)
    posted = await human.wait_for(
        lambda ev: ev.get("sender") == e2e.user_id("router") and _body(ev) == "check the plan"
    )
    assert posted["content"]["m.relates_to"]["event_id"] == root
