"""A plugin of each API generation in one daemon on the real homeserver: both work, side by side.

The older plugin is written against the hooks spec: the flat `envelope.resolved_thread_id`, enrichment
without `persist` (stripped from history after the answer). The newer one against the 2026 API: the
`mindroom.plugin_api` import surface, `envelope.target`, `EnrichmentItem(persist=True/False)`,
`system:enrich`, and a toolkit registered with `register_tool_with_metadata(..., file_access=...)`.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from mindroom.testing.model_replies import content_text, last_user_message
from mindroom.testing.model_server import Text, ToolCall
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

OLDER_HOOKS = """
from mindroom.constants import ROUTER_AGENT_NAME
from mindroom.hooks import EnrichmentItem, MessageEnrichContext, MessageReceivedContext, hook


@hook("message:received", agents=(ROUTER_AGENT_NAME,))
async def ping(ctx: MessageReceivedContext) -> None:
    if ctx.envelope.body.strip() == "ping":
        await ctx.send_message(ctx.envelope.room_id, "pong", thread_id=ctx.envelope.resolved_thread_id)
        ctx.suppress = True


@hook("message:enrich")
async def location(ctx: MessageEnrichContext) -> EnrichmentItem:
    return EnrichmentItem(key="location", text="User is in Berlin")
"""

NEWER_HOOKS = """
from mindroom.plugin_api import (
    EVENT_MESSAGE_ENRICH,
    EVENT_MESSAGE_RECEIVED,
    EVENT_SYSTEM_ENRICH,
    EnrichmentItem,
    TurnIntent,
    hook,
)


@hook(EVENT_MESSAGE_RECEIVED, agents=("router",))
async def where(ctx):
    if ctx.envelope.body.strip() == "where am i?" and ctx.envelope.origin.intent is TurnIntent.USER_MESSAGE:
        target = ctx.envelope.target
        await ctx.send_message(target.room_id, f"session {target.session_id}", thread_id=target.resolved_thread_id)
        ctx.suppress = True


@hook(EVENT_MESSAGE_ENRICH)
async def goal(ctx):
    return [
        EnrichmentItem(key="thread_goal", text="Ship the release", cache_policy="stable", persist=True),
        EnrichmentItem(key="clock", text="It is 09:00", persist=False),
    ]


@hook(EVENT_SYSTEM_ENRICH)
async def tone(ctx):
    ctx.add_instruction("tone", "Be brief.")
"""

NEWER_TOOLS = """
from pathlib import Path

from agno.tools import Toolkit

from mindroom.plugin_api import ToolCategory, ToolFileAccess, register_tool_with_metadata

NOTES = Path(__file__).with_name("notes.log")


class ReleaseNotes(Toolkit):
    def __init__(self) -> None:
        super().__init__(name="release_notes", tools=[self.add_note])

    def add_note(self, text: str) -> str:
        \"\"\"Add one line to the release notes.\"\"\"
        with NOTES.open("a") as fh:
            fh.write(text + "\\n")
        return f"noted: {text}"


@register_tool_with_metadata(
    name="release_notes",
    display_name="Release notes",
    description="Keeps the release notes.",
    category=ToolCategory.PRODUCTIVITY,
    file_access=ToolFileAccess.NONE,
)
def release_notes_factory():
    return ReleaseNotes
"""


def install(e2e: E2E) -> Path:
    """The older plugin (hooks module only) and the newer one (hooks and tools, api_version 2026.10)."""
    e2e.plugin("older", OLDER_HOOKS)
    newer = e2e.config_dir / "plugins" / "newer"
    newer.mkdir(parents=True)
    manifest = {"name": "newer", "hooks_module": "hooks.py", "tools_module": "tools.py", "api_version": "2026.10"}
    (newer / "mindroom.plugin.json").write_text(json.dumps(manifest))
    (newer / "hooks.py").write_text(textwrap.dedent(NEWER_HOOKS))
    (newer / "tools.py").write_text(textwrap.dedent(NEWER_TOOLS))
    return newer


async def world(e2e: E2E) -> tuple[HumanClient, str, str, Path]:
    newer = install(e2e)
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config(
        [human.user_id],
        {agent: {"display_name": "Helper", "model": "default", "rooms": [room], "tools": ["release_notes"]}},
        plugins=["plugins/older", "plugins/newer"],
    )
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    return human, agent, room_id, newer


def agent_requests(e2e: E2E) -> list[dict[str, Any]]:
    return [request for request in e2e.model_server.requests if request.get("model") == "agent-model"]


async def test_generations_both_plugins_shape_one_turn_and_its_history(e2e: E2E):
    human, agent, room_id, newer = await world(e2e)
    e2e.model_server.script(
        ToolCall("add_note", {"text": "v1 ships friday"}), Text("Noted."), Text("Still on track."), model="agent-model"
    )

    root = await human.send(room_id, "status?")
    await human.wait_for(lambda e: len(human.matching(thread_replies(root, e2e.user_id(agent)))) == 1)
    await human.send(room_id, "and now?", thread_root=root)
    await human.wait_for(lambda e: len(human.matching(thread_replies(root, e2e.user_id(agent)))) == 2)

    first, after_tool, second = agent_requests(e2e)
    turn = last_user_message(first)
    assert turn.startswith("status?")
    assert "User is in Berlin" in turn and "Ship the release" in turn and "It is 09:00" in turn
    system = content_text(first["messages"][0]["content"])
    assert "<mindroom_system_context>" in system and "Be brief." in system
    assert "add_note" in [tool["function"]["name"] for tool in first.get("tools") or []]
    assert content_text(after_tool["messages"][-1]["content"]) == "noted: v1 ships friday"
    assert (newer / "notes.log").read_text() == "v1 ships friday\n"

    history = [content_text(m.get("content")) for m in second["messages"][1:-1] if m["role"] == "user"]
    assert len(history) == 1
    assert "Ship the release" in history[0]  # persist=True: kept as it was rendered
    assert "User is in Berlin" not in history[0]  # the older plugin's item: stripped after the answer
    assert "It is 09:00" not in history[0]  # persist=False: this request only
    now = last_user_message(second)
    assert now.startswith("and now?") and "User is in Berlin" in now and "It is 09:00" in now


async def test_generations_older_flat_thread_and_newer_target_both_answer_in_the_thread(e2e: E2E):
    human, _, room_id, _ = await world(e2e)
    router = e2e.user_id("router")

    ping = await human.send(room_id, "ping")
    where = await human.send(room_id, "where am i?")

    pong = await human.wait_for(thread_replies(ping, router))
    session = await human.wait_for(thread_replies(where, router))
    assert pong["content"]["body"] == "pong"
    assert session["content"]["body"] == f"session {room_id}:{where}"
