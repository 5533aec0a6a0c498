"""An isolated plugin on a real Synapse: a hook that kills its own process costs a failure, never the daemon;
a hook in a worker calls the context's methods, and a human sees what it sent."""

from __future__ import annotations

import pytest

from mindroom.constants import HOOK_SOURCE_KEY, ORIGINAL_SENDER_KEY
from mindroom.testing.model_server import Text
from tests.integration.conftest import E2E
from tests.integration.support import thread_replies
from tests.integration.test_builtin_tools import start

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

CRASHER = """
import os
from mindroom.hooks import hook

@hook("message:received")
async def crash_on_request(ctx):
    if "crash" in ctx.envelope.body:
        os._exit(9)
    if "hush" in ctx.envelope.body and ctx.envelope.agent_name != "router":
        ctx.suppress = True
"""

PINGER = """
from mindroom.constants import ROUTER_AGENT_NAME
from mindroom.hooks import hook

@hook("message:received", agents=(ROUTER_AGENT_NAME,), timeout_ms=30000)
async def pong(ctx):
    if ctx.envelope.body.strip() != "!ping-worker":
        return
    create = await ctx.query_room_state(ctx.envelope.room_id, "m.room.create", "")
    text = f"pong from a worker, room version {create['room_version']}"
    if await ctx.send_message(ctx.envelope.room_id, text, thread_id=ctx.envelope.resolved_thread_id):
        ctx.suppress = True
"""


async def test_isolated_plugin_hook_sends_a_message_the_human_sees(e2e: E2E):
    agent = e2e.name("helper")
    e2e.plugin("pinger", PINGER)
    human, room_id = await start(e2e, {agent: {}}, plugins=[{"path": "plugins/pinger", "isolated": True}])
    e2e.model_server.set_default(Text("not this"), model="agent-model")

    event_id = await human.send(room_id, "!ping-worker")
    pong = await human.wait_for(thread_replies(event_id, e2e.user_id("router")))

    assert pong["content"]["body"].startswith("pong from a worker, room version ")
    assert pong["content"]["body"] != "pong from a worker, room version "
    assert pong["content"][ORIGINAL_SENDER_KEY] == human.user_id  # the daemon's context marked it
    assert pong["content"][HOOK_SOURCE_KEY].startswith("pinger:")
    await e2e.settle(human, room_id)
    assert human.matching(thread_replies(event_id, e2e.user_id(agent))) == []
    assert e2e.daemon is not None and e2e.daemon.running is not None
    registry = e2e.daemon.running.live.registry
    hook = next(h for h in registry.all_hooks() if h.plugin_name == "pinger")
    assert hook.stats.failures == 0


async def test_isolated_plugin_that_exits_its_worker_leaves_the_daemon_answering(e2e: E2E):
    agent = e2e.name("helper")
    e2e.plugin("crasher", CRASHER)
    human, room_id = await start(e2e, {agent: {}}, plugins=[{"path": "plugins/crasher", "isolated": True}])
    agent_id = e2e.user_id(agent)
    e2e.model_server.set_default(Text("Still here."), model="agent-model")

    crashed = await human.send(room_id, "please crash", mentions=[agent_id])
    reply = await human.wait_for(thread_replies(crashed, agent_id))
    assert reply["content"]["body"] == "Still here."

    hushed = await human.send(room_id, "hush now", mentions=[agent_id])
    after = await human.send(room_id, "and now?", mentions=[agent_id])
    await human.wait_for(thread_replies(after, agent_id))
    await e2e.settle(human, room_id)
    assert human.matching(thread_replies(hushed, agent_id)) == []  # the fresh worker's `suppress` came back

    assert e2e.daemon is not None and e2e.daemon.running is not None
    registry = e2e.daemon.running.live.registry
    hook = next(h for h in registry.all_hooks() if h.plugin_name == "crasher")
    assert hook.stats.failures >= 1
    assert registry.isolated.plugins["crasher"].restarts >= 1
