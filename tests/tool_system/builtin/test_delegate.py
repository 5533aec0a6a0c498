"""The `delegate` tool: the hand-off under MindRoom's names; a subagent ID binds the agent asked to the asking
agent's conversation, so a follow-up from elsewhere, or with a forged ID, is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mindroom.constants import RuntimePaths
from mindroom.tool_system.builtin.delegate import continue_subagent, run_subagent
from mindroom.tool_system.builtin.parts import DaemonParts, HandoffAnswer, provide_daemon_parts
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import ToolError

pytestmark = pytest.mark.asyncio


class Desk:
    """Answers as `HandoffDesk.ask` does, from a script."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str, str]] = []

    async def ask(self, asking: str, target: str, task: str) -> HandoffAnswer:
        self.asked.append((asking, target, task))
        if target == "stranger":
            return HandoffAnswer(None, None, "you may hand questions to researcher only.")
        if target == "silent":
            return HandoffAnswer("silent", None, failure="the model failed")
        return HandoffAnswer(target, f"{target} says: {task}")


@pytest.fixture
def desk(tmp_path: Path) -> Iterator[Desk]:
    desk = Desk()
    withdraw = provide_daemon_parts(tmp_path, DaemonParts(handoffs=desk))
    yield desk
    withdraw()


def turn(tmp_path: Path, thread: str = "$t1", agent: str = "helper"):
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path, {})
    return bind_runtime_context(ToolRuntimeContext(None, agent, "!r:hs", thread, "@alice:hs", runtime_paths=paths))


def subagent(answer: str) -> str:
    return answer.rsplit("Subagent ID: ", 1)[1]


async def test_delegate_hands_off_and_follows_up_in_the_same_conversation(tmp_path: Path, desk: Desk):
    with turn(tmp_path):
        first = await run_subagent("what is the tide?", agent_name="researcher")
        again = await continue_subagent(subagent(first), "and tomorrow?")

    assert first.startswith("researcher says: what is the tide?\n\nSubagent ID: researcher@")
    assert subagent(again) == subagent(first)
    assert desk.asked == [("helper", "researcher", "what is the tide?"), ("helper", "researcher", "and tomorrow?")]


async def test_delegate_refuses_ids_of_another_conversation_or_agent(tmp_path: Path, desk: Desk):
    with turn(tmp_path):
        ident = subagent(await run_subagent("q", agent_name="researcher"))
    forged = ident.replace("researcher@", "vault@")
    for where, used in (
        (turn(tmp_path, thread="$t2"), ident),
        (turn(tmp_path, agent="other"), ident),
        (turn(tmp_path), forged),
        (turn(tmp_path), "researcher"),
    ):
        with where, pytest.raises(ToolError, match="not a subagent of yours"):
            await continue_subagent(used, "follow up")
    assert [target for _, target, _ in desk.asked] == ["researcher"]


async def test_delegate_reports_refusals_and_missing_answers_as_failures(tmp_path: Path, desk: Desk):
    with turn(tmp_path):
        with pytest.raises(ToolError, match="not delegated: you may hand questions to researcher only"):
            await run_subagent("q", agent_name="stranger")
        with pytest.raises(ToolError, match=r"silent did not answer \(the model failed\)"):
            await run_subagent("q", agent_name="silent")
        with pytest.raises(ToolError, match="name the agent"):
            await run_subagent("q")
        noted = await run_subagent("q", agent_name="researcher", model="cheap")

    assert noted.endswith("(model is not offered here and was ignored.)")
