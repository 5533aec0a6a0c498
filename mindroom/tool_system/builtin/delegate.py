"""The built-in `delegate` tool (MindRoom's name): hand a task to another agent of the room and get its answer.

`run_subagent` is the daemon's hand-off (`mindroom.bots.handoff`) under MindRoom's function names: the other
agent answers in this conversation, as itself, in a turn of its own (its tools, hooks and approvals), and its
answer comes back as the result. The agents one may ask are its `delegate_to`; the same limits as every
hand-off apply (no circles, the bot-conversation limits). Unlike MindRoom's subagents, the answer is posted in
the conversation, and there are no authored copies (`system_prompt`, `tools`, `profile`, ...). A subagent ID
names the agent and this conversation: `continue_subagent` asks the same agent again here, and it answers
with the conversation so far; an ID from another conversation is refused.
"""

from __future__ import annotations

import hashlib

from mindroom.tool_system.builtin.parts import HandoffAnswer, HandoffPort, ToolCaller, daemon_parts, tool_caller
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = ["continue_subagent", "delegate_tools", "run_subagent", "subagent_id_for"]


def subagent_id_for(caller: ToolCaller, agent_name: str) -> str:
    """The ID of `agent_name` working for the caller's agent in the caller's conversation."""
    scope = "\0".join((caller.agent_name, agent_name, caller.room_id, caller.thread_id or ""))
    return f"{agent_name}@{hashlib.sha256(scope.encode()).hexdigest()[:12]}"


def _port() -> HandoffPort:
    port = daemon_parts().handoffs
    if port is None:
        raise ToolError("hand-offs are not available in this daemon")
    return port


def _result(caller: ToolCaller, answer: HandoffAnswer) -> str:
    if answer.refusal is not None:
        raise ToolError(f"not delegated: {answer.refusal}")
    name = answer.agent_name or "the agent"
    if answer.text is None:
        raise ToolError(f"{name} did not answer ({answer.failure or 'no answer was given'})")
    return f"{answer.text}\n\nSubagent ID: {subagent_id_for(caller, name)}"


async def run_subagent(task: str, agent_name: str | None = None, model: str | None = None) -> str:
    """Hand a task to another agent of this room (one of those you may delegate to) and wait for its answer.

    The agent answers in this conversation, with its own tools, and its answer comes back to you. Include all
    relevant context, constraints and the expected output in `task`. Use continue_subagent with the returned
    Subagent ID for follow-ups.

    Args:
        task: A self-contained task with relevant context, constraints and expected output.
        agent_name: The agent to ask (one you may delegate to).
        model: Not offered here (the agent answers with its own model).
    """
    caller = tool_caller()
    if not agent_name:
        raise ToolError("name the agent to delegate to (agent_name); you cannot run a copy of yourself here")
    if not task.strip():
        raise ToolError("the task is empty")
    answer = await _port().ask(caller.agent_name, agent_name, task)
    note = "\n(model is not offered here and was ignored.)" if model else ""
    return _result(caller, answer) + note


async def continue_subagent(subagent_id: str, message: str) -> str:
    """Send a follow-up to an agent you delegated to in this conversation and wait for its answer.

    Args:
        subagent_id: The exact Subagent ID run_subagent or continue_subagent returned.
        message: The follow-up instructions or question.
    """
    caller = tool_caller()
    agent_name, _, _ = subagent_id.strip().rpartition("@")
    if not agent_name or subagent_id_for(caller, agent_name) != subagent_id.strip():
        raise ToolError(f"{subagent_id!r} is not a subagent of yours in this conversation")
    if not message.strip():
        raise ToolError("the message is empty")
    return _result(caller, await _port().ask(caller.agent_name, agent_name, message))


def delegate_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `delegate` group: `run_subagent` and `continue_subagent`."""
    return (
        ToolSpec(name="run_subagent", function=run_subagent),
        ToolSpec(name="continue_subagent", function=continue_subagent),
    )
