"""An isolated plugin on a real Synapse: a hook that kills its own process costs a failure, never the daemon."""

from __future__ import annotations

import pytest

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
