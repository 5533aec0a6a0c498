"""Hand-offs: an agent asks another agent of the same room for help within its turn (`delegate_to`).

An agent whose config names `delegate_to` gets the `delegate_task` tool. A call posts the question in the
conversation under the asking agent's account, and the other agent answers it there as itself, in a turn of
its own at the hand-off's door (`Door.HANDOFF`: claimed in the journal, `message:received`, then the same
answer stages as any turn; its hooks, tools and approvals are its own); the first agent's model then reads
that answer as the tool's result and goes on.

A hand-off is refused, with a message the model reads, when the other agent is not one the asking agent
may hand to, is not in the room, would close a circle (an agent already waiting on this chain), or when
the limits on bot conversations would stop it: the chain of bot answers (`MAX_BOT_HOPS`) and the window
of bot turns per thread (the same `SlidingWindow` ingress counts bot messages in).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from mindroom.bots.channel import GenerationSetup
from mindroom.bots.directory import Directory
from mindroom.bots.doors import Arrival, Door, TurnEntry
from mindroom.bots.ingress import MAX_BOT_HOPS, InboundMessage, inbound_origin
from mindroom.bots.lifecycle import stable_correlation_id
from mindroom.bots.limits import SlidingWindow
from mindroom.bots.matrix_answer import MatrixAnswer
from mindroom.bots.reply import ReplyChannel
from mindroom.bots.runtime import Entity, LiveCell, LiveState
from mindroom.bots.streaming import Streamed
from mindroom.config.main import Config
from mindroom.constants import HANDOFF_KEY, ORIGINAL_SENDER_KEY
from mindroom.hooks.target import MessageTarget
from mindroom.hooks.transport import MessageEnvelope
from mindroom.logging_config import get_logger
from mindroom.tool_system.builtin.parts import HandoffAnswer
from mindroom.tool_system.runtime_context import get_runtime_context
from mindroom.tool_system.spec import ToolSpec

__all__ = ["HANDOFF_TOOL", "HandoffDesk"]

logger = get_logger(__name__)

HANDOFF_TOOL = "delegate_task"


@dataclass(frozen=True, slots=True)
class _Chain:
    """A turn running now: how many bot answers its answer ends (1: it answers a person), and who waits on it."""

    hops: int
    waiting: tuple[str, ...] = ()


class _HeardAnswer:
    """A Matrix answer whose final text (or error) the hand-off hands back to the agent that asked."""

    def __init__(self, inner: MatrixAnswer) -> None:
        self.inner = inner
        self.text: str | None = None
        self.failure: str | None = None

    @property
    def in_room(self) -> bool:
        """Always: the answer is a Matrix message."""
        return True

    def working(self) -> contextlib.AbstractAsyncContextManager[None]:
        """The typing notice."""
        return self.inner.working()

    async def generate(self, request: Any, setup: GenerationSetup) -> Streamed:
        """As in the thread."""
        return await self.inner.generate(request, setup)

    async def reply(self, text: str, extra: dict[str, Any] | None = None) -> str:
        """Send, and keep the text."""
        self.text = text
        return await self.inner.reply(text, extra)

    async def edit(self, event_id: str, text: str, extra: dict[str, Any] | None = None) -> str:
        """Make final, and keep the text."""
        self.text = text
        return await self.inner.edit(event_id, text, extra)

    async def error(self, message: str, *, edit_event_id: str | None = None) -> None:
        """Answer with an error, and keep it."""
        self.failure = message
        await self.inner.error(message, edit_event_id=edit_event_id)

    async def redact(self, event_id: str, reason: str) -> None:
        """Withdraw the streamed answer."""
        await self.inner.redact(event_id, reason)


class HandoffDesk:
    """The run's hand-offs: the tool of each agent that may hand off, and the turns running now (their chains)."""

    def __init__(
        self, cell: LiveCell, directory: Directory, bot_turns: SlidingWindow, turns: Callable[[], TurnEntry]
    ) -> None:
        self._cell = cell
        self._directory = directory
        self._bot_turns = bot_turns
        self._turns = turns
        self._chains: dict[str, _Chain] = {}
        self._tools: dict[str, tuple[tuple[str, ...], tuple[Any, ...]]] = {}

    @contextlib.contextmanager
    def turn(self, correlation_id: str, hops: int) -> Iterator[None]:
        """While a turn runs: its answer ends a chain of `hops` bot answers (hand-offs from it count on)."""
        self._chains.setdefault(correlation_id, _Chain(hops))
        try:
            yield
        finally:
            self._chains.pop(correlation_id, None)

    def tools(self, config: Config, agent_name: str) -> tuple[Any, ...]:
        """The `delegate_task` tool of an agent whose `delegate_to` names others (the same object while it stays)."""
        agent = config.agents.get(agent_name)
        targets = tuple(agent.delegate_to) if agent is not None else ()
        cached = self._tools.get(agent_name)
        if cached is not None and cached[0] == targets:
            return cached[1]
        if not targets:
            return ()
        from mindroom.ai.tools import agno_function  # agno loads with the first turn, not with the daemon

        built = (agno_function(self._spec(agent_name, targets), agent_name),)
        self._tools[agent_name] = (targets, built)
        return built

    def _spec(self, asking: str, targets: tuple[str, ...]) -> ToolSpec:
        async def delegate_task(agent_name: str, task: str) -> str:
            return await self.hand_off(asking, agent_name, task)

        description = (
            "Ask another agent of this room for help: it answers in this conversation, and its answer comes back "
            f"to you. You may ask: {', '.join(targets)}. `agent_name` names one of them; `task` is the question, "
            "complete enough to be answered on its own."
        )
        return ToolSpec(HANDOFF_TOOL, delegate_task, description=description)

    async def hand_off(self, asking: str, target: str, task: str) -> str:
        """Have `target` answer `task` in the conversation of the turn running this tool; its answer, or why not."""
        answer = await self.ask(asking, target, task)
        if answer.refusal is not None:
            return f"Hand-off refused: {answer.refusal}"
        if answer.text is not None:
            return f"{answer.agent_name} answered: {answer.text}"
        return f"{answer.agent_name} did not answer ({answer.failure or 'no answer was given'})."

    async def ask(self, asking: str, target: str, task: str) -> HandoffAnswer:
        """`hand_off`, told apart: the agent that answered and its answer, or the refusal (MindRoom's `delegate`)."""
        bound = get_runtime_context()
        if bound is None or bound.room_id is None:
            return HandoffAnswer(None, None, "there is no conversation to hand the question to.")
        live = self._cell.live
        name = self._agent_named(live.config, target)
        refusal = self._refusal(live.config, asking, name, bound.room_id, bound.correlation_id or "")
        if refusal is not None:
            logger.info("hand-off refused", agent=asking, target=target, reason=refusal)
            return HandoffAnswer(name, None, refusal)
        assert name is not None
        chain = self._chains.get(bound.correlation_id or "", _Chain(1))
        thread = bound.resolved_thread_id
        if not self._bot_turns.allow((name, bound.room_id, thread)):
            return HandoffAnswer(name, None, "too many bot messages in this conversation just now; answer without it.")
        return await self._answer(live, asking, name, task, bound, chain, thread)

    def _agent_named(self, config: Config, target: str) -> str | None:
        wanted = target.strip().lstrip("@").split(":")[0].lower()
        for name, agent in config.agents.items():
            if wanted in (name.lower(), agent.display_name.lower()):
                return name
        return None

    def _refusal(self, config: Config, asking: str, name: str | None, room_id: str, correlation: str) -> str | None:
        allowed = config.agents[asking].delegate_to if asking in config.agents else []
        if name is None or name not in allowed:
            return f"you may hand questions to {', '.join(allowed) or 'no agent'} only."
        if name not in self._directory.agents_in_room(room_id, config):
            return f"{name} is not in this room."
        chain = self._chains.get(correlation, _Chain(1))
        if name == asking or name in chain.waiting:
            circle = " → ".join((*chain.waiting, asking, name))
            return f"that would go in a circle ({circle}); answer with what you have."
        if chain.hops >= MAX_BOT_HOPS:
            return "the conversation between agents is as long as it may get; answer without it."
        return None

    async def _answer(
        self, live: LiveState, asking: str, name: str, task: str, bound: Any, chain: _Chain, thread: str | None
    ) -> HandoffAnswer:
        entities = self._directory.entities
        asker, helper = entities.get(asking), entities.get(name)
        if asker is None or helper is None:
            return HandoffAnswer(name, None, f"{name} is not running.")
        display = live.config.agents[name].display_name
        extra = {HANDOFF_KEY: name, ORIGINAL_SENDER_KEY: bound.requester_id}
        question_id = await asker.client.send_message(
            bound.room_id, f"➡️ {display}: {task}", thread_root=thread, extra_content=extra
        )
        sender = self._directory.bot_user_ids.get(asking, asking)
        envelope = MessageEnvelope(
            source_event_id=question_id,
            target=MessageTarget(bound.room_id, thread, thread, question_id),
            body=task,
            attachment_ids=(),
            mentioned_agents=(name,),
            agent_name=name,
            origin=inbound_origin(sender, bound.requester_id or "", "message"),
        )
        logger.info("hand-off", agent=asking, target=name, room_id=bound.room_id, question_event_id=question_id)
        return await self._run(live, helper, envelope, chain, asking)

    async def _run(
        self, live: LiveState, helper: Entity, envelope: MessageEnvelope, chain: _Chain, asking: str
    ) -> HandoffAnswer:
        """The helper's turn at the hand-off's door: its question, answered in the thread and heard back."""
        markdown = live.config.agents[helper.name].resolved(live.config.defaults).markdown
        hops = chain.hops + 1
        heard = _HeardAnswer(MatrixAnswer(ReplyChannel(helper, envelope, hops=hops, markdown=markdown)))
        # The answer ends a chain one bot answer longer than the asking turn's; the asker waits on it.
        correlation_id = stable_correlation_id(envelope.source_event_id)
        self._chains[correlation_id] = _Chain(hops, (*chain.waiting, asking))
        question = InboundMessage(envelope, True, 0, False, None, hops=chain.hops)
        try:
            await self._turns().run(Arrival(Door.HANDOFF, helper, live, question, channel=heard))
        finally:
            self._chains.pop(correlation_id, None)
        if heard.text is not None:
            return HandoffAnswer(helper.name, heard.text)
        return HandoffAnswer(helper.name, None, None, heard.failure or "no answer was given")
