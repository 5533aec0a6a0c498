"""One Matrix account (an agent or the router): login, rooms, sync, and dispatch to injected handlers.

The bot does not know the pipeline: the orchestrator gives it one handler per event kind, and the few
capabilities the account itself reads (the live cell, who is where, the recent messages, the run's start,
the paths and attachments its tools use). It owns every task it starts (the sync loop, one task per
inbound event) and cancels and awaits them on stop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from mindroom.bots.access import invite_accepted, membership_in_use, responder_admits
from mindroom.bots.authorization import may_invite
from mindroom.bots.bindings import BotBindings
from mindroom.bots.bot_client import BotClient
from mindroom.bots.directory import Directory
from mindroom.bots.fairness import FairSlots
from mindroom.bots.pipeline_capabilities import RunClock
from mindroom.bots.recent import RecentMessages
from mindroom.bots.room_hook_policy import note_state_event, read_room_policies
from mindroom.bots.runtime import (
    HANDLED,
    INTERRUPTED_NOTE,
    STOPPED_NOTE,
    BotMetrics,
    EventHandler,
    LiveCell,
    LiveState,
    StreamState,
)
from mindroom.constants import ROUTER_AGENT_NAME, RuntimePaths
from mindroom.hooks.context import AgentLifecycleContext, HookBindings
from mindroom.hooks.execution import emit
from mindroom.hooks.types import EVENT_AGENT_STARTED, EVENT_AGENT_STOPPED, EVENT_BOT_READY
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixEvent, MatrixEventKind
from mindroom.state.attachments import AttachmentStore
from mindroom.state.private_roots import requester_workspace
from mindroom.tasks import TaskOwner
from mindroom.tool_system.builtin.deferral import visible_tool_names
from mindroom.tool_system.spec import AgentToolEnvironment, workspace_dir

__all__ = ["INTERRUPTED_NOTE", "INTERRUPT_GRACE_S", "ROUTER_SYNC_SETTLE_S", "ClientT", "EntityBot"]

logger = get_logger(__name__)
_PRIVATE_TOOLS_KEPT = 64

INTERRUPT_GRACE_S = 5.0
ROUTER_SYNC_SETTLE_S = 0.25
"""The router's pause before its next long-poll after a sync that brought room events.

The router sits in every room, so every message, answer and edit of a streamed answer wakes its sync
too, and each sync that delivers an event costs Synapse 5-7 ms of CPU. Gathering what arrives within
a quarter second into one reply raised the daemon's throughput in `benchmarks/e2e_latency.py`'s
burst, where Synapse is the bottleneck. A message the router has to route waits at most that long,
and only when it comes right after other traffic. Agents, which answer, never wait.
"""

ClientT = TypeVar("ClientT", bound=BotClient)
"""The bot's Matrix client: `MatrixBotClient` in the daemon, a recording one in unit tests."""


@dataclass(slots=True)
class _ThreadLock:
    lock: asyncio.Lock
    users: int = 0


class EntityBot(Generic[ClientT]):
    """An agent or the router: its Matrix client, rooms, in-flight turns and hook capabilities."""

    def __init__(
        self,
        name: str,
        client: ClientT,
        handlers: Mapping[MatrixEventKind, EventHandler],
        *,
        cell: LiveCell,
        directory: Directory,
        recent: RecentMessages,
        clock: RunClock,
        paths: RuntimePaths,
        attachments: AttachmentStore,
    ) -> None:
        self.name = name
        self.client = client
        self.is_router = name == ROUTER_AGENT_NAME
        self.joined_rooms: set[str] = set()
        self.metrics = BotMetrics()
        self.tasks = TaskOwner(name)
        self._handlers = dict(handlers)
        self._cell = cell
        self._directory = directory
        self._recent = recent
        self._paths = paths
        self._attachments = attachments
        self._bindings = BotBindings(name, client, directory=directory, paths=paths, clock=clock, recent=recent)
        self._sync_task: asyncio.Task[None] | None = None
        self._thread_locks: dict[str, _ThreadLock] = {}
        self._slots = FairSlots(cell.live.config.defaults.max_concurrent_turns_per_agent)
        self._streams: list[StreamState] = []
        self._accepting = True
        self._tools: dict[str | None, tuple[tuple[Any, ...], tuple[Any, ...]]] = {}  # by requester, private only

    # -- lifecycle ---------------------------------------------------------------------------------
    @property
    def handlers(self) -> Mapping[MatrixEventKind, EventHandler]:
        """The pipeline's handlers this bot was given, by event kind (recovery replays through them too)."""
        return self._handlers

    @property
    def entity_type(self) -> str:
        """`router`, `team` or `agent`."""
        if self.is_router:
            return "router"
        return "team" if self.name in self._cell.live.config.teams else "agent"

    def display_name(self, live: LiveState) -> str:
        """The name shown in Matrix under `live`'s config."""
        config = live.config
        return config.router.display_name if self.is_router else config.responders()[self.name].display_name

    async def start(self) -> str:
        """Log in, set the display name, and fire `agent:started`; returns the Matrix user id."""
        live = self._cell.live
        user_id = await self.client.login()
        self._directory.signed_in(self.name, user_id)
        # The homeserver knows every room this account is in, DMs and rooms it was invited into included.
        self.joined_rooms |= set(await self.client.joined_rooms())
        await self.client.ensure_display_name(self.display_name(live))
        try:
            await self._lifecycle(live, EVENT_AGENT_STARTED)
        except RuntimeError:
            # A plugin's `required=True` startup hook failed: this bot does not start.
            await self.client.close()
            raise
        return user_id

    def start_sync(self) -> None:
        """Start the sync loop (owned by this bot)."""
        settle_s = ROUTER_SYNC_SETTLE_S if self.is_router else 0.0
        sync = self.client.run_sync(
            self._on_event, on_invite=self._on_invite, settle_s=settle_s, authorized=self._may_reach
        )
        self._sync_task = asyncio.create_task(sync, name=f"sync-{self.name}")

    def _may_reach(self, room_id: str, sender: str) -> bool:
        """The sync's check of whose unreadable events are worth a key request and a notice: the pipeline's."""
        return self._directory.may_reach(self._cell.live.config, sender, room_id, self.name)

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
        if membership_in_use(self._cell.live.config):
            # Access by membership: who is in this bot's rooms, read once the sync runs (a join before its first
            # batch reaches no bot as an event, and the first sync skips the backlog); later joins are noted.
            for room_id in sorted(self.joined_rooms):
                await self._directory.members.read(self.client, room_id)
        await read_room_policies(self.client, self._cell.live.registry.room_policies, sorted(self.joined_rooms))
        await self._lifecycle(self._cell.live, EVENT_BOT_READY)

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
                    logger.warning("leaving a room failed", agent=self.name, room_id=room_id, error=str(exc))
        with contextlib.suppress(Exception):
            await self._lifecycle(self._cell.live, EVENT_AGENT_STOPPED, stop_reason=reason)
        await self.client.close()
        logger.info("bot stopped", agent=self.name, reason=reason)

    async def stop_sync(self) -> None:
        """Stop the sync loop (its latest token is stored), so nothing new is taken; in-flight turns go on."""
        self._accepting = False
        task, self._sync_task = self._sync_task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _drain(self, grace_s: float) -> None:
        running = self.tasks.running
        if not running:
            return
        _, pending = await asyncio.wait(running, timeout=grace_s)
        if pending and self._streams:
            for state in self._streams:
                state.stop(INTERRUPTED_NOTE)
            _, pending = await asyncio.wait(pending, timeout=INTERRUPT_GRACE_S)
        for task in pending:
            task.cancel()
        if pending:
            logger.warning("turns cancelled at shutdown", agent=self.name, count=len(pending))
            await asyncio.gather(*pending, return_exceptions=True)

    async def _lifecycle(self, live: LiveState, event_name: str, *, stop_reason: str | None = None) -> None:
        ctx = AgentLifecycleContext(
            event_name=event_name,
            entity_name=self.name,
            entity_type=self.entity_type,
            rooms=tuple(sorted(self.joined_rooms)),
            joined_room_ids=tuple(sorted(self.joined_rooms)),
            matrix_user_id=self._directory.bot_user_ids.get(self.name),
            stop_reason=stop_reason,
            **self.bindings(live).fields(),
        )
        await emit(live.registry, event_name, ctx)

    # -- rooms ---------------------------------------------------------------------------------------
    async def join(self, room_key_or_id: str) -> str:
        """Join a room by key, alias or id; returns its id."""
        room_id = await self.client.ensure_room(room_key_or_id)
        self.joined_rooms.add(room_id)
        return room_id

    async def leave(self, room_id: str) -> None:
        """Leave a room (and forget it, if it was one this bot was invited into)."""
        await self.client.leave(room_id)
        self.joined_rooms.discard(room_id)
        self._directory.forget_room(self.name, room_id)

    async def _on_invite(self, room_id: str, inviter: str) -> bool:
        directory = self._directory
        config = self._cell.live.config
        person = config.authorization.person(inviter)
        authorized = may_invite(
            config,
            person,
            directory.room_keys(room_id),
            bot_user_ids=directory.bot_user_ids.values(),
            home_keys=directory.home_keys(self.name, config),
        )
        admitted = not authorized and responder_admits(
            config, self.name, person, "", members=directory.members, room_ids=directory.room_ids
        )
        allowed = invite_accepted(config, self.name, inviter, authorized=authorized, admitted=admitted)
        if allowed:
            self.joined_rooms.add(room_id)
            directory.keep_room(self.name, room_id, "invited")
            logger.info("invite accepted", agent=self.name, room_id=room_id, inviter=inviter)
        else:
            logger.info("invite declined", agent=self.name, room_id=room_id, inviter=inviter)
        return allowed

    # -- events ---------------------------------------------------------------------------------------
    async def _on_event(self, event: MatrixEvent) -> None:
        if not self._accepting:
            return
        kind = event.kind
        if event.state_key is not None:
            own_id = self._directory.bot_user_ids.get(self.name)
            note_state_event(self.client, self._cell.live.registry.room_policies, event, own_id, self.spawn)
        if kind is MatrixEventKind.MEMBER:
            self._directory.members.note(event)
        if kind is MatrixEventKind.MEMBER and event.state_key == self._directory.bot_user_ids.get(self.name):
            if event.membership == "join":
                self.joined_rooms.add(event.room_id)
                if membership_in_use(self._cell.live.config) and not self._directory.members.known(event.room_id):
                    self.tasks.spawn(self._directory.members.read(self.client, event.room_id), "room members")
            elif event.membership in ("leave", "ban"):
                if event.room_id in self.joined_rooms and event.sender != event.state_key:
                    logger.info(
                        "removed from a room",
                        agent=self.name,
                        room_id=event.room_id,
                        by=event.sender,
                        membership=event.membership,
                    )
                self.joined_rooms.discard(event.room_id)
        handler = self._handlers.get(kind)
        if handler is None:
            return
        if kind is MatrixEventKind.MESSAGE:
            self.metrics.messages_handled += 1
            self._recent.note(event)
        try:
            work = handler(self, event)
        except Exception:  # the handler's first, synchronous part: logged like a task's error, never raised
            logger.exception("event handler failed", agent=self.name, event_id=event.event_id, kind=kind.value)
            return
        if work is not HANDLED:
            self.tasks.spawn(work, kind.value)

    def spawn(self, work: Awaitable[None], what: str) -> None:
        """Run `work` as a task this bot owns (cancelled on stop); its errors are logged, never raised."""
        self.tasks.spawn(work, what)

    @property
    def in_flight(self) -> int:
        """Events being handled right now."""
        return len(self.tasks)

    @property
    def waiting_turns(self) -> int:
        """Turns waiting for a free slot of this agent."""
        return self._slots.waiting()

    # -- turn support ---------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def turn_slot(self, room_id: str, thread_key: str) -> AsyncIterator[None]:
        """One turn at a time per thread (in order), a bounded number per agent, rooms served fairly."""
        entry = self._thread_locks.get(thread_key)
        if entry is None:
            entry = self._thread_locks[thread_key] = _ThreadLock(asyncio.Lock())
        entry.users += 1
        try:
            async with entry.lock, self._slots.slot(room_id):
                yield
        finally:
            entry.users -= 1
            if entry.users == 0:
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

    def tools(self, live: LiveState, requester: str | None = None) -> tuple[Any, ...]:
        """The tools this agent may use under `live` (its `tools:` list), as agno Functions behind the tool hooks;
        a private agent's work in `requester`'s copy of its workspace (none without a requester).

        Built once per tool catalogue, `tools:` list and tool settings, then reused, so the cached agno Agent
        stays valid; the turn's registry, room and thread reach the tools through the runtime context that
        the turn binds, not through these objects.
        """
        agent = live.config.agents.get(self.name)
        if agent is None or not agent.tools or (agent.private is not None and not requester):
            return ()
        wanted = visible_tool_names(agent)  # a deferred tool is reached through `dynamic_tools` only
        # The revision moves when an MCP server lists new tools: the agent then gets them.
        key = (live.tools, wanted, live.config.tools, live.tools.revision(), agent.private)
        owner = requester if agent.private is not None else None
        cached = self._tools.get(owner)
        if cached is not None and cached[0] == key:
            return cached[1]

        async def send(room_id: str, text: str, thread_id: str | None) -> str:
            return await self.client.send_message(room_id, text, thread_root=thread_id)

        directory = self._directory
        env = AgentToolEnvironment(
            agent_name=self.name,
            workspace=workspace_dir(self._paths.storage_root, self.name)
            if owner is None or agent.private is None
            else requester_workspace(self._paths.storage_root, self.name, agent.private, owner),
            settings=live.config.tools,
            send_message=send,
            joined_rooms=lambda: self.joined_rooms,
            room_aliases=lambda: directory.room_ids,
            attachments=self._attachments,
        )
        from mindroom.ai.tools import agno_tools  # agno loads with the first turn, not with the daemon

        functions: tuple[Any, ...] = agno_tools(live.tools.tools_for(wanted, env), self.name)
        if owner not in self._tools and len(self._tools) >= _PRIVATE_TOOLS_KEPT:  # the oldest's: built again if needed
            self._tools.pop(next(iter(self._tools)))
        self._tools[owner] = (key, functions)
        return functions

    # -- hook capabilities ----------------------------------------------------------------------------
    def bindings(self, live: LiveState, turn: str | None = None) -> HookBindings:
        """What every hook context of this bot gets under `live`: config, paths, and the Matrix helpers."""
        return self._bindings.for_live(live, turn)
