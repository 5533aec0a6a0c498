"""Per-room hook policy on a real Synapse: a room's administrator turns a plugin off there, not elsewhere, for good."""

from __future__ import annotations

from pathlib import Path

import pytest

from mindroom.hooks.room_policy import POLICY_EVENT_TYPE
from mindroom.testing.model_server import Text
from tests.integration.conftest import E2E
from tests.integration.support import thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

AUDIT = """
from mindroom.hooks import hook

@hook("message:received")
async def note_room(ctx):
    if ctx.envelope.agent_name == "router":
        return
    with open(ctx.settings["log"], "a") as log:
        log.write(ctx.envelope.room_id + " " + ctx.envelope.body + "\\n")
"""


def audited(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


async def test_hook_room_policy_turns_a_plugin_off_in_one_room_and_holds_after_a_restart(e2e: E2E, tmp_path: Path):
    log = tmp_path / "audit.log"
    e2e.plugin("audit", AUDIT)
    human = await e2e.human()
    agent, quiet, loud = e2e.name("helper"), e2e.name("quiet"), e2e.name("loud")
    config = e2e.basic_config(
        [human.user_id],
        {agent: {"display_name": "Helper", "model": "default", "rooms": [quiet, loud]}},
        plugins=[{"path": "plugins/audit", "settings": {"log": str(log)}}],
    )
    config["room_defaults"]["admins"] = [human.user_id]
    await e2e.start(config)
    quiet_id, loud_id = e2e.room_id(quiet), e2e.room_id(loud)
    for room_id in (quiet_id, loud_id):
        await e2e.joined(human, room_id)
    agent_id = e2e.user_id(agent)
    e2e.model_server.set_default(Text("Noted."), model="agent-model")

    async def ask(room_id: str, text: str) -> None:
        event_id = await human.send(room_id, text)
        await human.wait_for(thread_replies(event_id, agent_id))

    await ask(quiet_id, "before the policy")
    await human.client.room_put_state(quiet_id, POLICY_EVENT_TYPE, {"plugins": {"audit": False}})
    await ask(quiet_id, "after the policy")
    await ask(loud_id, "in the other room")
    await e2e.idle()
    assert audited(log) == [
        f"{quiet_id} before the policy",
        f"{loud_id} in the other room",
    ]

    command = await human.send(quiet_id, "!hooks")
    table = (await human.wait_for(thread_replies(command, e2e.user_id("router"))))["content"]["body"]
    assert f"Room policy (set by {human.user_id}):" in table
    assert "- plugin audit: off" in table

    await e2e.stop()
    await e2e.start(config)
    await ask(quiet_id, "after the restart")
    await ask(loud_id, "elsewhere after the restart")
    await e2e.idle()
    assert audited(log)[2:] == [f"{loud_id} elsewhere after the restart"]
