"""Approvals on the real homeserver: a gate asks on a card; ✅ allows, ❌ or a reply denies, the clock denies;
a pending card outlives a crash, and an answer given while the daemon was down still counts."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from mindroom.bots.approvals.desk import APPROVAL_CONTENT_KEY
from mindroom.testing.model_replies import content_text
from mindroom.testing.model_server import Text, ToolCall, last_user_message
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, edits_of, eventually, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

GUARD = """
import json
from pathlib import Path

from mindroom.hooks import hook


def _log(ctx, **fields):
    with Path(ctx.settings["log"]).open("a") as fh:
        fh.write(json.dumps({"event": ctx.event_name, **fields}) + "\\n")


@hook("tool:before_call")
async def ask_a_person(ctx):
    if ctx.tool_name != "run_shell_command":
        return
    command = ctx.arguments.get("args")
    approved = await ctx.request_approval(f"it runs `{command}`", timeout_s=float(ctx.settings["timeout_s"]))
    _log(ctx, approved=approved, command=command)
    if not approved:
        ctx.decline("A person did not allow it.")


@hook("reaction:received")
async def reaction(ctx):
    _log(ctx, key=ctx.reaction_key, target=ctx.target_event_id)
"""

COMMAND = {"args": "echo ran"}
RAN = "exit code: 0\nran\n"
DECLINED = "Reason: A person did not allow it."


def read_log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def config_for(e2e: E2E, human: HumanClient, log: Path, timeout_s: float) -> tuple[dict[str, Any], str, str]:
    e2e.plugin("guard", GUARD)
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config(
        [human.user_id],
        {agent: {"display_name": "Helper", "model": "default", "rooms": [room], "tools": ["shell"]}},
        plugins=[{"path": "plugins/guard", "settings": {"log": str(log), "timeout_s": timeout_s}}],
        tools={"shell": {"allowed_commands": ["echo"]}},
    )
    return config, agent, room


async def world(e2e: E2E, tmp_path: Path, timeout_s: float = 60.0):
    human = await e2e.human()
    log = tmp_path / "guard.jsonl"
    config, agent, room = config_for(e2e, human, log, timeout_s)
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    return human, e2e.user_id(agent), room_id, log


def is_card(root: str, agent_id: str):
    def predicate(event: dict[str, Any]) -> bool:
        return thread_replies(root, agent_id)(event) and APPROVAL_CONTENT_KEY in event["content"]

    return predicate


def answers(human: HumanClient, root: str, agent_id: str) -> list[dict[str, Any]]:
    """The agent's messages in the thread that are not approval cards."""
    return [e for e in human.matching(thread_replies(root, agent_id)) if APPROVAL_CONTENT_KEY not in e["content"]]


async def card_outcome(human: HumanClient, card_id: str) -> str:
    edit = await human.wait_for(edits_of(card_id))
    return edit["content"]["m.new_content"]["body"]


def tool_result(e2e: E2E) -> str:
    requests = [r for r in e2e.model_server.requests if r.get("model") == "agent-model"]
    message = requests[-1]["messages"][-1]
    assert message["role"] == "tool"
    return content_text(message["content"])


async def ask_for_the_command(e2e: E2E, human: HumanClient, agent_id: str, room_id: str, answer: str):
    e2e.model_server.script(ToolCall("run_shell_command", COMMAND), Text(answer), model="agent-model")
    root = await human.send(room_id, "please run echo")
    card = await human.wait_for(is_card(root, agent_id))
    return root, card


async def test_approval_a_check_mark_allows_the_call(e2e: E2E, tmp_path):
    human, agent_id, room_id, log = await world(e2e, tmp_path)
    root, card = await ask_for_the_command(e2e, human, agent_id, room_id, "It ran.")

    assert card["content"]["body"] == (
        "🔐 Helper wants to run run_shell_command: it runs `echo ran` — react ✅ to allow or ❌ to deny"
        " (expires in 1 min)."
    )
    await human.react(room_id, card["event_id"], "👍")  # not an answer: it goes on to reaction:received
    await human.react(room_id, card["event_id"], "✅")
    await human.wait_for(lambda e: [a["content"]["body"] for a in answers(human, root, agent_id)] == ["It ran."])

    assert tool_result(e2e) == RAN
    assert await card_outcome(human, card["event_id"]) == (
        f"🔐 Helper wants to run run_shell_command: it runs `echo ran` — ✅ approved by {human.user_id}."
    )
    entries = read_log(log)
    assert [e for e in entries if e["event"] == "tool:before_call"] == [
        {"event": "tool:before_call", "approved": True, "command": "echo ran"}
    ]
    assert [e["key"] for e in entries if e["event"] == "reaction:received"] == ["👍"]


async def test_approval_a_cross_denies_the_call(e2e: E2E, tmp_path):
    human, agent_id, room_id, _ = await world(e2e, tmp_path)
    root, card = await ask_for_the_command(e2e, human, agent_id, room_id, "It was not allowed.")

    await human.react(room_id, card["event_id"], "❌")
    await human.wait_for(lambda e: len(answers(human, root, agent_id)) == 1)

    assert DECLINED in tool_result(e2e)
    assert (await card_outcome(human, card["event_id"])).endswith(f"— ❌ denied by {human.user_id}.")


async def test_approval_a_reply_to_the_card_denies_and_gets_no_answer_of_its_own(e2e: E2E, tmp_path):
    human, agent_id, room_id, _ = await world(e2e, tmp_path)
    root, card = await ask_for_the_command(e2e, human, agent_id, room_id, "Understood, not running it.")

    relation = {
        "rel_type": "m.thread",
        "event_id": root,
        "is_falling_back": False,
        "m.in_reply_to": {"event_id": card["event_id"]},
    }
    await human.client.room_send(
        room_id, "m.room.message", {"msgtype": "m.text", "body": "no, not today", "m.relates_to": relation}
    )
    await human.wait_for(lambda e: len(answers(human, root, agent_id)) == 1)

    assert DECLINED in tool_result(e2e)
    outcome = await card_outcome(human, card["event_id"])
    assert outcome.endswith(f'— ❌ denied by {human.user_id}: "no, not today".')
    await e2e.settle(human, room_id)
    assert len(answers(human, root, agent_id)) == 1  # the reply started no turn
    assert len([r for r in e2e.model_server.requests if r.get("model") == "agent-model"]) == 2


async def test_approval_nobody_answers_and_the_clock_denies(e2e: E2E, tmp_path):
    human, agent_id, room_id, _ = await world(e2e, tmp_path, timeout_s=2.0)
    root, card = await ask_for_the_command(e2e, human, agent_id, room_id, "Nobody allowed it in time.")

    assert card["content"]["body"].endswith("(expires in 2 s).")
    await human.wait_for(lambda e: len(answers(human, root, agent_id)) == 1)

    assert DECLINED in tool_result(e2e)
    assert (await card_outcome(human, card["event_id"])).endswith("— ⌛ expired without an answer.")


async def _subprocess_world(e2e: E2E, tmp_path: Path, timeout_s: float):
    human = await e2e.human()
    log = tmp_path / "guard.jsonl"
    config, agent, room = config_for(e2e, human, log, timeout_s)
    daemon = e2e.spawn(config)
    daemon.start()
    await daemon.wait_for_line("daemon ready")
    response = await human.client.room_resolve_alias(f"#{room}:{e2e.homeserver.server_name}")
    room_id = response.room_id
    await e2e.joined(human, room_id)
    agent_id = f"@{e2e.account_prefix}{agent}:{e2e.homeserver.server_name}"
    return human, daemon, agent_id, room_id


async def test_approval_given_while_the_daemon_was_down_lets_the_replayed_turn_run(e2e: E2E, tmp_path):
    human, daemon, agent_id, room_id = await _subprocess_world(e2e, tmp_path, timeout_s=300)
    call = ToolCall("run_shell_command", COMMAND)
    e2e.model_server.script(call, call, Text("Ran it after the restart."), model="agent-model")

    root = await human.send(room_id, "please run echo")
    card = await human.wait_for(is_card(root, agent_id))
    daemon.kill()
    await human.react(room_id, card["event_id"], "✅")
    daemon.start()
    await daemon.wait_for_line("daemon ready", count=2)

    await human.wait_for(
        lambda e: any(a["content"]["body"] == "Ran it after the restart." for a in answers(human, root, agent_id))
    )
    assert tool_result(e2e) == RAN
    assert (await card_outcome(human, card["event_id"])).endswith(f"— ✅ approved by {human.user_id}.")
    assert await daemon.terminate() == 0
    await human.sync_past(room_id)
    assert len(human.matching(is_card(root, agent_id))) == 1  # the replayed turn found its card


async def test_approval_that_expired_while_the_daemon_was_down_is_marked_on_start(e2e: E2E, tmp_path):
    # Long enough that the daemon is surely killed before the card expires, even on a loaded machine.
    timeout_s = 10.0
    human, daemon, agent_id, room_id = await _subprocess_world(e2e, tmp_path, timeout_s=timeout_s)
    call = ToolCall("run_shell_command", COMMAND)
    e2e.model_server.script(call, call, Text("It expired, so I did not run it."), model="agent-model")

    root = await human.send(room_id, "please run echo")
    card = await human.wait_for(is_card(root, agent_id))
    daemon.kill()
    assert "approval expired" not in daemon.output(), "the card expired before the daemon was killed"
    # The approval was asked before its card was sent, so it ends by the card's time plus its timeout.
    expired_at = card["origin_server_ts"] / 1000 + timeout_s
    await eventually(lambda: time.time() > expired_at + 1.0, "the card's time running out")
    await human.react(room_id, card["event_id"], "✅")  # too late: the card had expired
    daemon.start()
    await daemon.wait_for_line("daemon ready", count=2)

    assert (await card_outcome(human, card["event_id"])).endswith("— ⌛ expired without an answer.")
    await human.wait_for(lambda e: len(answers(human, root, agent_id)) == 1)
    assert DECLINED in tool_result(e2e)
    assert await daemon.terminate() == 0
    await human.sync_past(room_id)
    assert len(human.matching(is_card(root, agent_id))) == 1


async def test_approval_a_reply_from_another_room_decides_nothing(e2e: E2E, tmp_path):
    """Carol may reach the agent only in `ops`; her reply there to the lobby's card is a question, not an answer."""
    human = await e2e.human()
    carol = await e2e.human("carol")
    log = tmp_path / "guard.jsonl"
    config, agent, room = config_for(e2e, human, log, 60.0)
    ops = e2e.name("ops")
    config["agents"][agent]["rooms"] = [room, ops]
    config["authorization"]["room_permissions"] = {ops: [carol.user_id]}
    config["room_defaults"] = {"invite_users": [human.user_id, carol.user_id]}
    await e2e.start(config)
    room_id, ops_id = e2e.room_id(room), e2e.room_id(ops)
    await e2e.joined(human, room_id)
    await e2e.joined(carol, ops_id)
    agent_id = e2e.user_id(agent)
    e2e.model_server.when(lambda r: "no way" in last_user_message(r), Text("A question asked in ops."))
    root, card = await ask_for_the_command(e2e, human, agent_id, room_id, "It ran.")

    content = {"msgtype": "m.text", "body": "no way", "m.relates_to": {"m.in_reply_to": {"event_id": card["event_id"]}}}
    sent = await carol.client.room_send(ops_id, "m.room.message", content)
    asked = sent.event_id
    await carol.wait_for(thread_replies(asked, agent_id))
    await human.react(room_id, card["event_id"], "✅")

    assert await card_outcome(human, card["event_id"]) == (
        f"🔐 Helper wants to run run_shell_command: it runs `echo ran` — ✅ approved by {human.user_id}."
    )
    await human.wait_for(lambda e: [a["content"]["body"] for a in answers(human, root, agent_id)] == ["It ran."])
    assert tool_result(e2e) == RAN
