"""One Matrix account (an agent or the router): the lifecycle shell around its sync callbacks.

The bot owns every task it starts (the sync loop, one task per inbound event) and cancels and
awaits them on stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mindroom.ai.tools import agno_tools
from mindroom.bots.authorization import may_invite
from mindroom.bots.fairness import FairSlots
from mindroom.constants import HOOK_SOURCE_KEY, ROUTER_AGENT_NAME
from mindroom.hooks.context import AgentLifecycleContext, MessageEnvelope
from mindroom.hooks.execution import emit
from mindroom.hooks.registry import HookRegistry
from mindroom.hooks.types import EVENT_AGENT_STARTED, EVENT_AGENT_STOPPED, EVENT_BOT_READY
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixBotClient, MatrixEvent, MatrixEventKind
from mindroom.tool_system.spec import AgentToolEnvironment, workspace_dir

if TYPE_CHECKING:
    from mindroom.bots.runtime import DaemonRuntime

__all__ = ["INTERRUPTED_NOTE", "STOPPED_NOTE", "BotMetrics", "EntityBot", "StreamState"]

logger = get_logger(__name__)

HOOK_SEND_WINDOW_S = 10.0
HOOK_SEND_LIMIT = 20
STOPPED_NOTE = "(stopped)"
INTERRUPTED_NOTE = "(interrupted: the agent is shutting down)"
INTERRUPT_GRACE_S = 5.0


@dataclass(slots=True)
class StreamState:
    """A streaming answer in flight: its Matrix event id, and whether (and why) a stop was asked for."""

    event_id: str | None = None
    stop_requested: bool = False
    stop_note: str = STOPPED_NOTE
    stopped: asyncio.Event = field(default_factory=asyncio.Event)

    def stop(self, note: str) -> None:
        """End the answer now; its text keeps what arrived so far, followed by `note`."""
        if not self.stop_requested:
            self.stop_requested = True
            self.stop_note = note
        self.stopped.set()


@dataclass(slots=True)
class BotMetrics:
    """Counters one bot keeps for operators."""

    messages_handled: int = 0
    answers: int = 0
    answer_latency_s: deque[float] = field(default_factory=lambda: deque(maxlen=1024))

    def record_answer(self, seconds: float) -> None:
        """Count one answer and its latency."""
        self.answers += 1
        self.answer_latency_s.append(seconds)


class EntityBot:
    """An agent or the router: its Matrix client, rooms, in-flight turns and hook bindings."""

    def __init__(self, name: str, runtime: DaemonRuntime, client: MatrixBotClient) -> None:
        self.name = name
        self.runtime = runtime
        self.client = client
        self.is_router = name == ROUTER_AGENT_NAME
        self.joined_rooms: set[str] = set()
        self.metrics = BotMetrics()
        self._tasks: set[asyncio.Task[None]] = set()
        self._sync_task: asyncio.Task[None] | None = None
        self._thread_locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}
        self._slots = FairSlots(runtime.config.defaults.max_concurrent_turns_per_agent)
        self._streams: list[StreamState] = []
        self._accepting = True
        self._hook_sends: dict[tuple[str, str], deque[float]] = {}
        self._tools: tuple[tuple[Any, ...], tuple[Any, ...]] | None = None

    # -- lifecycle ---------------------------------------------------------------------------------
    @property
    def entity_type(self) -> str:
        """`router` or `agent`."""
        return "router" if self.is_router else "agent"

    @property
    def display_name(self) -> str:
        """The name shown in Matrix."""
        if self.is_router:
            return self.runtime.config.router.display_name
        return self.runtime.config.agents[self.name].display_name

    async def start(self) -> str:
        """Log in, set the display name, and fire `agent:started`; returns the Matrix user id."""
        user_id = await self.client.login()
        self.runtime.bot_user_ids[self.name] = user_id
        await self.client.ensure_display_name(self.display_name)
        await self._lifecycle(EVENT_AGENT_STARTED)
        return user_id

    def start_sync(self) -> None:
        """Start the sync loop (owned by this bot)."""
        self._sync_task = asyncio.create_task(
            self.client.run_sync(self._on_event, on_invite=self._on_invite), name=f"sync-{self.name}"
        )

    async def wait_ready(self, timeout_s: float = 60.0) -> None:
        """Wait for the first sync, then fire `bot:ready`."""
        waiter = asyncio.ensure_future(self.client.first_sync_done())
        assert self._sync_task is not None
        done, _ = await asyncio.wait({waiter, self._sync_task}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        if waiter not in done:
            waiter.cancel()
            if self._sync_task in done:
                self._sync_task.result()  # surfaces the sync loop's error
            msg = f"bot {self.name!r}: first sync did not finish within {timeout_s:.0f} s"
            raise TimeoutError(msg)
        await self._lifecycle(EVENT_BOT_READY)

    async def stop(self, reason: str = "shutdown", grace_s: float = 10.0, *, leave_rooms: bool = False) -> None:
        """Stop syncing, let in-flight turns finish within `grace_s`, fire `agent:stopped`, close.

        The sync loop stops first, so no event is fetched (and its sync token stored) that nobody will
        handle: what arrives from now on is delivered after the next start. Streaming answers still
        running at the deadline end with a note; what is left after `INTERRUPT_GRACE_S` more is cancelled.
        """
        await self.stop_sync()
        await self._drain(grace_s)
        if leave_rooms:
            for room_id in sorted(self.joined_rooms):
                try:
                    await self.leave(room_id)
                except Exception as exc:  # leaving is best effort: the account stops either way
                    logger.warning("leaving a room failed", bot=self.name, room_id=room_id, error=str(exc))
        with contextlib.suppress(Exception):
            await self._lifecycle(EVENT_AGENT_STOPPED, stop_reason=reason)
        await self.client.close()
        logger.info("bot stopped", bot=self.name, reason=reason)

    async def stop_sync(self) -> None:
        """Stop the sync loop (its latest token is stored), so nothing new is taken; in-flight turns go on."""
        self._accepting = False
        task, self._sync_task = self._sync_task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _drain(self, grace_s: float) -> None:
        if not self._tasks:
            return
        _, pending = await asyncio.wait(set(self._tasks), timeout=grace_s)
        if pending and self._streams:
            for state in self._streams:
                state.stop(INTERRUPTED_NOTE)
            _, pending = await asyncio.wait(pending, timeout=INTERRUPT_GRACE_S)
        for task in pending:
            task.cancel()
        if pending:
            logger.warning("turns cancelled at shutdown", bot=self.name, count=len(pending))
            await asyncio.gather(*pending, return_exceptions=True)

    async def _lifecycle(self, event_name: str, *, stop_reason: str | None = None) -> None:
        ctx = AgentLifecycleContext(
            event_name=event_name,
            entity_name=self.name,
            entity_type=self.entity_type,
            rooms=tuple(sorted(self.joined_rooms)),
            matrix_user_id=self.runtime.bot_user_ids.get(self.name),
            stop_reason=stop_reason,
            **self.hook_bindings(),
        )
        await emit(self.runtime.registry, event_name, ctx)

    # -- rooms ---------------------------------------------------------------------------------------
    async def join(self, room_key_or_id: str) -> str:
        """Join a room by key, alias or id; returns its id."""
        room_id = await self.client.ensure_room(room_key_or_id)
        self.joined_rooms.add(room_id)
        return room_id

    async def leave(self, room_id: str) -> None:
        """Leave a room."""
        await self.client.leave(room_id)
        self.joined_rooms.discard(room_id)

    async def _on_invite(self, room_id: str, inviter: str) -> bool:
        runtime = self.runtime
        allowed = may_invite(
            runtime.config, inviter, runtime.room_keys(room_id), bot_user_ids=runtime.bot_user_ids.values()
        )
        if allowed:
            self.joined_rooms.add(room_id)
            logger.info("invite accepted", bot=self.name, room_id=room_id, inviter=inviter)
        else:
            logger.info("invite declined", bot=self.name, room_id=room_id, inviter=inviter)
        return allowed

    # -- events ---------------------------------------------------------------------------------------
    async def _on_event(self, event: MatrixEvent) -> None:
        if not self._accepting:
            return
        kind = event.kind
        if kind is MatrixEventKind.MESSAGE:
            from mindroom.bots.turn import handle_message_event

            self.metrics.messages_handled += 1
            self._spawn(handle_message_event(self, event), "message")
        elif kind is MatrixEventKind.REACTION:
            from mindroom.bots.reactions import handle_reaction_event

            self._spawn(handle_reaction_event(self, event), "reaction")
        elif kind is MatrixEventKind.MEMBER and event.state_key == self.runtime.bot_user_ids.get(self.name):
            if event.membership == "join":
                self.joined_rooms.add(event.room_id)
            elif event.membership in ("leave", "ban"):
                self.joined_rooms.discard(event.room_id)

    def spawn(self, work: Awaitable[None], what: str) -> None:
        """Run `work` as a task this bot owns (cancelled on stop); its errors are logged, never raised."""
        self._spawn(work, what)

    def _spawn(self, work: Awaitable[None], what: str) -> None:
        task = asyncio.ensure_future(self._guarded(work, what))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _guarded(self, work: Awaitable[None], what: str) -> None:
        try:
            await work
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("event handling failed", bot=self.name, what=what)

    @property
    def in_flight(self) -> int:
        """Events being handled right now."""
        return len(self._tasks)

    # -- turn support ---------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def turn_slot(self, room_id: str, thread_key: str) -> AsyncIterator[None]:
        """One turn at a time per thread (in order), a bounded number per agent, rooms served fairly."""
        entry = self._thread_locks.get(thread_key)
        if entry is None:
            entry = self._thread_locks[thread_key] = (asyncio.Lock(), [0])
        lock, users = entry
        users[0] += 1
        try:
            async with lock, self._slots.slot(room_id):
                yield
        finally:
            users[0] -= 1
            if users[0] == 0:
                del self._thread_locks[thread_key]

    @contextlib.contextmanager
    def track_stream(self) -> Iterator[StreamState]:
        """Register a streaming answer so a stop reaction can reach it."""
        state = StreamState()
        self._streams.append(state)
        try:
            yield state
        finally:
            self._streams.remove(state)

    def request_stop(self, response_event_id: str) -> bool:
        """Ask the streaming answer shown as `response_event_id` to stop; True if one was found."""
        for state in self._streams:
            if state.event_id == response_event_id:
                state.stop(STOPPED_NOTE)
                return True
        return False

    def tools(self, registry: HookRegistry, envelope: MessageEnvelope) -> tuple[Any, ...]:
        """The tools this agent may use (its `tools:` list), as agno Functions running through the tool hooks.

        Built once per tool catalogue, `tools:` list and tool settings, then reused, so the cached agno Agent
        stays valid; the turn's registry, room and thread reach the tools through the runtime context that
        `respond()` binds, not through these objects.
        """
        runtime = self.runtime
        agent = runtime.config.agents.get(self.name)
        if agent is None or not agent.tools:
            return ()
        key = (runtime.tools, tuple(agent.tools), runtime.config.tools)
        cached = self._tools
        if cached is not None and cached[0] == key:
            return cached[1]

        async def send(room_id: str, text: str, thread_id: str | None) -> str:
            return await self.client.send_message(room_id, text, thread_root=thread_id)

        env = AgentToolEnvironment(
            agent_name=self.name,
            workspace=workspace_dir(runtime.runtime_paths.storage_root, self.name),
            settings=runtime.config.tools,
            send_message=send,
            joined_rooms=lambda: self.joined_rooms,
            room_aliases=lambda: runtime.room_ids,
        )
        functions: tuple[Any, ...] = agno_tools(runtime.tools.tools_for(agent.tools, env), self.name)
        self._tools = (key, functions)
        return functions

    # -- hook capabilities ----------------------------------------------------------------------------
    def hook_bindings(self) -> dict[str, Any]:
        """What every hook context of this bot gets: config, paths, and the Matrix helpers."""
        return {
            "config": self.runtime.config,
            "runtime_paths": self.runtime.runtime_paths,
            "message_sender": self._hook_send,
            "room_state_querier": self._query_state,
            "room_state_putter": self._put_state,
        }

    def _hook_send_allowed(self, source: str, room_id: str) -> bool:
        now = time.monotonic()
        window = self._hook_sends.setdefault((source, room_id), deque())
        while window and now - window[0] > HOOK_SEND_WINDOW_S:
            window.popleft()
        if len(window) >= HOOK_SEND_LIMIT:
            return False
        window.append(now)
        return True

    async def _hook_send(
        self, room_id: str, text: str, thread_id: str | None = None, extra_content: dict[str, Any] | None = None
    ) -> str | None:
        """Send a hook-originated message through the router (the relay), rate limited per plugin and room."""
        source = str((extra_content or {}).get(HOOK_SOURCE_KEY, "")).split(":", 1)[0]
        if not self._hook_send_allowed(source, room_id):
            logger.warning("hook message rate limited", bot=self.name, plugin=source, room_id=room_id)
            return None
        relay = self.runtime.bots.get(ROUTER_AGENT_NAME, self)
        return await relay.client.send_message(room_id, text, thread_root=thread_id, extra_content=extra_content)

    def _fallbacks(self) -> list[MatrixBotClient]:
        clients = [self.client]
        router = self.runtime.bots.get(ROUTER_AGENT_NAME)
        if router is not None and router is not self:
            clients.append(router.client)
        return clients

    async def _query_state(self, room_id: str, event_type: str, state_key: str | None) -> dict[str, Any] | None:
        for client in self._fallbacks():
            result = await client.get_room_state(room_id, event_type, state_key)
            if result is not None:
                return result
        return None

    async def _put_state(self, room_id: str, event_type: str, state_key: str, content: dict[str, Any]) -> bool:
        for client in self._fallbacks():
            if await client.put_room_state(room_id, event_type, state_key, content):
                return True
        return False
