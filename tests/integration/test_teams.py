"""Teams and hand-offs on the real homeserver: a team's own account answers a mention once with its members'
parts, in each mode; a member's tool call meets the tool hooks as the member's; an agent hands a question to
another, which answers in the thread as itself, and a hand-off back is refused as a circle."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mindroom.testing.model_server import Text, ToolCall
from tests.integration.conftest import E2E
from tests.integration.support import thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

GATE = """
import json
from pathlib import Path

from mindroom.hooks import hook

LOG = Path(__file__).with_name("gate.log")


@hook("tool:before_call")
async def no_sums_for_research(ctx):
    with LOG.open("a") as fh:
        fh.write(json.dumps({"agent": ctx.agent_name, "tool": ctx.tool_name}) + "\\n")
    if ctx.agent_name == "%s":
        ctx.decline("research may not calculate")
"""


def with_models(e2e: E2E, *names: str) -> dict[str, Any]:
    base = e2e.models()
    for name in names:
        base[name] = {"provider": "openai", "id": name, "extra_kwargs": {**base["default"]["extra_kwargs"]}}
    return base


def team_config(e2e: E2E, human: str, mode: str, **extra: Any) -> tuple[dict[str, Any], dict[str, str]]:
    room, research, writer, crew = e2e.name("room"), e2e.name("research"), e2e.name("writer"), e2e.name("crew")
    agents = {
        research: {"display_name": "Research", "model": "m-research", "rooms": [room], "tools": ["calculator"]},
        writer: {"display_name": "Writer", "model": "m-writer", "rooms": [room]},
    }
    teams = {
        crew: {
            "display_name": "Crew",
            "role": "answers together",
            "agents": [research, writer],
            "model": "m-lead",
            "mode": mode,
            "rooms": [room],
        }
    }
    config = e2e.basic_config([human], agents, teams=teams, **extra)
    config["models"] = with_models(e2e, "m-lead", "m-research", "m-writer")
    return config, {"room": room, "research": research, "writer": writer, "crew": crew}


SCRIPTS = {
    "coordinate": {
        "m-lead": [
            ToolCall("delegate_task_to_member", {"member_id": "{research}", "task": "find"}),
            Text("Consensus."),
        ],
        "m-research": [Text("Found it.")],
    },
    "collaborate": {
        "m-lead": [ToolCall("delegate_task_to_members", {"task": "all"}), Text("Consensus.")],
        "m-research": [Text("Found it.")],
        "m-writer": [Text("Wrote it.")],
    },
    "route": {
        "m-lead": [ToolCall("delegate_task_to_member", {"member_id": "{writer}", "task": "write"})],
        "m-writer": [Text("Wrote it.")],
    },
}
PARTS = {
    "coordinate": ["**Research**: Found it.", "**Team Consensus**: Consensus."],
    "collaborate": ["**Research**: Found it.", "**Writer**: Wrote it.", "**Team Consensus**: Consensus."],
    "route": ["**Writer**: Wrote it."],
}


def _script(e2e: E2E, mode: str, names: dict[str, str]) -> None:
    for model, replies in SCRIPTS[mode].items():
        for reply in replies:
            if isinstance(reply, ToolCall):
                arguments = {key: value.format(**names) for key, value in reply.arguments.items()}
                reply = ToolCall(reply.name, arguments)
            e2e.model_server.script(reply, model=model)


@pytest.mark.parametrize("mode", ["coordinate", "collaborate", "route"])
async def test_team_answers_a_mention_once_with_its_members_parts(e2e: E2E, mode: str):
    alice = await e2e.human("alice")
    config, names = team_config(e2e, alice.user_id, mode)
    _script(e2e, mode, names)
    await e2e.start(config)
    room_id = e2e.room_id(names["room"])
    await e2e.joined(alice, room_id)
    crew = e2e.user_id(names["crew"])

    root = await alice.send(room_id, f"@{names['crew']} plan it", mentions=[crew])
    answer = await alice.wait_for(thread_replies(root, crew))
    await e2e.settle(alice, room_id)

    body = answer["content"]["body"]
    assert body.startswith("🤝 **Team Response** (Research, Writer)")
    for part in PARTS[mode]:
        assert part in body
    assert len(alice.matching(thread_replies(root, crew))) == 1
    for member in (names["research"], names["writer"], "router"):
        assert alice.matching(thread_replies(root, e2e.user_id(member))) == []


async def test_a_members_tool_call_is_gated_by_a_tool_hook_as_the_members(e2e: E2E):
    alice = await e2e.human("alice")
    config, names = team_config(e2e, alice.user_id, "coordinate")
    folder = e2e.plugin("gate", GATE % names["research"])
    config["plugins"] = [str(folder)]
    e2e.model_server.script(
        ToolCall("delegate_task_to_member", {"member_id": names["research"], "task": "add"}), Text("Done."),
        model="m-lead",
    )  # fmt: skip
    e2e.model_server.script(
        ToolCall("calculate", {"expression": "2+2"}), Text("Not allowed to add."), model="m-research"
    )
    await e2e.start(config)
    room_id = e2e.room_id(names["room"])
    await e2e.joined(alice, room_id)
    crew = e2e.user_id(names["crew"])

    root = await alice.send(room_id, f"@{names['crew']} what is 2+2?", mentions=[crew])
    answer = await alice.wait_for(thread_replies(root, crew))

    gate_log = [json.loads(line) for line in (folder / "gate.log").read_text().splitlines()]
    assert gate_log == [{"agent": names["research"], "tool": "calculate"}]
    research = [r for r in e2e.model_server.requests if r.get("model") == "m-research"]
    assert "research may not calculate" in str(research[-1]["messages"][-1]["content"])
    assert "**Research**: Not allowed to add." in answer["content"]["body"]


async def test_handoff_answer_appears_in_the_thread_and_a_handoff_back_is_refused(e2e: E2E):
    alice = await e2e.human("alice")
    room, helper, expert = e2e.name("room"), e2e.name("helper"), e2e.name("expert")
    agents = {
        helper: {"display_name": "Helper", "model": "m-helper", "rooms": [room], "delegate_to": [expert]},
        expert: {"display_name": "Expert", "model": "m-expert", "rooms": [room], "delegate_to": [helper]},
    }
    config = e2e.basic_config([alice.user_id], agents)
    config["models"] = with_models(e2e, "m-helper", "m-expert")
    e2e.model_server.script(
        ToolCall("delegate_task", {"agent_name": expert, "task": "what is six times seven?"}), Text("Expert says 42."),
        model="m-helper",
    )  # fmt: skip
    e2e.model_server.script(
        ToolCall("delegate_task", {"agent_name": helper, "task": "you answer"}), Text("It is 42."), model="m-expert"
    )
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    helper_id, expert_id = e2e.user_id(helper), e2e.user_id(expert)

    root = await alice.send(room_id, f"@{helper} six times seven?", mentions=[helper_id])
    final = await alice.wait_for(
        lambda event: thread_replies(root, helper_id)(event) and event["content"]["body"] == "Expert says 42."
    )
    await e2e.settle(alice, room_id)

    helper_posts = [event["content"]["body"] for event in alice.matching(thread_replies(root, helper_id))]
    expert_posts = [event["content"]["body"] for event in alice.matching(thread_replies(root, expert_id))]
    assert helper_posts == ["➡️ Expert: what is six times seven?", final["content"]["body"]]
    assert expert_posts == ["It is 42."]  # once: its sync left the hand-off's question alone
    expert_requests = [r for r in e2e.model_server.requests if r.get("model") == "m-expert"]
    refusal = str(expert_requests[-1]["messages"][-1]["content"])
    assert refusal.startswith(f"Hand-off refused: that would go in a circle ({helper} → {expert} → {helper})")
    helper_requests = [r for r in e2e.model_server.requests if r.get("model") == "m-helper"]
    assert str(helper_requests[-1]["messages"][-1]["content"]) == f"{expert} answered: It is 42."
