"""The scheduler: one owned task fires due schedules through `schedule:fired`, then posts them.

A fired task posts its message through the entity that took the command (the router in managed rooms)
into the room, or into the thread the command was sent in. The post carries the human who scheduled it
in `com.mindroom.original_sender`, and mentions the agent it is addressed to (an agent the command
mentioned, else the room's only agent), so that agent answers it as if that human had asked; with
several agents and no mention it is a plain reminder nobody answers.

Delivery is at most once: the next run is stored before the message posts. A run missed while the
daemon was down fires once on start, then the schedule resumes its rhythm.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mindroom.bots.directory import Directory
from mindroom.bots.runtime import LiveCell
from mindroom.constants import ORIGINAL_SENDER_KEY, ROUTER_AGENT_NAME, SCHEDULE_ID_KEY
from mindroom.daemon.scheduling.parse import ScheduleSpec, next_run_after
from mindroom.hooks.context import ScheduleFiredContext, new_correlation_id
from mindroom.hooks.execution import emit
from mindroom.hooks.types import EVENT_SCHEDULE_FIRED
from mindroom.logging_config import get_logger
from mindroom.state.schedules import ScheduledTask, ScheduleStore

__all__ = ["Scheduler"]

logger = get_logger(__name__)

_MAX_SLEEP_S = 60.0  # re-check now and then, so a changed wall clock is noticed


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        logger.warning("unknown timezone; using UTC", timezone=name)
        return ZoneInfo("UTC")


class Scheduler:
    """Owns the task that fires due schedules; `start()` after the bots are ready, `await stop()` before they stop."""

    def __init__(self, cell: LiveCell, directory: Directory, store: ScheduleStore) -> None:
        self.cell = cell
        self.directory = directory
        self.store = store
        self._wake = asyncio.Event()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self.fired = 0

    @property
    def timezone(self) -> ZoneInfo:
        """The config's timezone, in which schedules are read and shown."""
        return _zone(self.cell.live.config.timezone)

    def now(self) -> datetime:
        """The current time in the config's timezone."""
        return datetime.now(self.timezone)

    def start(self) -> None:
        """Start the firing loop; runs missed while the daemon was down fire once, right away."""
        self._stopping = False
        self._task = asyncio.create_task(self._run(), name="scheduler")

    async def stop(self, timeout_s: float = 5.0) -> None:
        """Let a firing in progress finish (within `timeout_s`), then stop the loop."""
        self._stopping = True
        self._wake.set()
        task, self._task = self._task, None
        if task is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait({task}, timeout=timeout_s)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    def create(
        self,
        spec: ScheduleSpec,
        *,
        room_id: str,
        thread_id: str | None,
        created_by: str,
        poster: str,
        agent: str | None,
        task_id: str | None = None,
    ) -> ScheduledTask:
        """Store a new schedule and wake the loop; returns it with its first run (`task_id`: keep an edited one's)."""
        now = self.now()
        first = next_run_after(spec.kind, spec.expression, now, now)
        task = ScheduledTask(
            task_id=task_id or secrets.token_hex(3),
            room_id=room_id,
            thread_id=thread_id,
            agent_name=agent,
            created_by=created_by,
            poster=poster,
            kind=spec.kind,
            expression=spec.expression,
            message=spec.message,
            description=spec.description,
            created_at=now.timestamp(),
            next_run=first.timestamp() if first is not None else None,
        )
        self.store.add(task)
        self._wake.set()
        logger.info("schedule created", task_id=task.task_id, room_id=room_id, kind=spec.kind, next_run=task.next_run)
        return task

    def cancel(self, task_id: str, room_id: str) -> bool:
        """Cancel a schedule of this room; False when the room has none with this id."""
        task = self.store.get(task_id)
        if task is None or task.room_id != room_id:
            return False
        self.store.remove(task_id)
        self._wake.set()
        logger.info("schedule cancelled", task_id=task_id, room_id=room_id)
        return True

    async def _run(self) -> None:
        while not self._stopping:
            self._wake.clear()
            now = time.time()
            for task in self.store.pending():
                if self._stopping or task.next_run is None or task.next_run > now:
                    break
                await self._fire_due(task, now)
            upcoming = self.store.pending()
            delay = _MAX_SLEEP_S
            if upcoming and upcoming[0].next_run is not None:
                delay = max(0.0, min(_MAX_SLEEP_S, upcoming[0].next_run - time.time()))
            if delay == 0.0:
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    async def _fire_due(self, task: ScheduledTask, now: float) -> None:
        zone = self.timezone
        following = next_run_after(
            task.kind, task.expression, datetime.fromtimestamp(task.created_at, zone), datetime.fromtimestamp(now, zone)
        )
        self.store.set_next_run(task.task_id, following.timestamp() if following is not None else None)
        try:
            await self.fire(task)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("scheduled message failed", task_id=task.task_id, room_id=task.room_id)

    async def fire(self, task: ScheduledTask) -> str | None:
        """Run `schedule:fired`, then post the (possibly rewritten) message unless a hook suppressed it."""
        live = self.cell.live
        entities = self.directory.entities
        poster = entities.get(task.poster) or entities.get(ROUTER_AGENT_NAME)
        if poster is None:
            logger.warning("no entity can post this schedule", task_id=task.task_id, poster=task.poster)
            return None
        ctx = ScheduleFiredContext(
            task_id=task.task_id,
            room_id=task.room_id,
            thread_id=task.thread_id,
            agent_name=task.agent_name,
            created_by=task.created_by,
            schedule=task.description,
            message_text=task.message,
            correlation_id=new_correlation_id(),
            **poster.bindings(live).fields(),
        )
        await emit(live.registry, EVENT_SCHEDULE_FIRED, ctx)
        self.fired += 1
        if ctx.suppress or not ctx.message_text.strip():
            logger.info("scheduled message suppressed", task_id=task.task_id, room_id=task.room_id)
            return None
        agent_user = self.directory.bot_user_ids.get(task.agent_name) if task.agent_name else None
        event_id = await poster.client.send_message(
            task.room_id,
            ctx.message_text,
            thread_root=task.thread_id,
            mentions=[agent_user] if agent_user else None,
            extra_content={ORIGINAL_SENDER_KEY: task.created_by, SCHEDULE_ID_KEY: task.task_id},
        )
        logger.info("scheduled message posted", task_id=task.task_id, room_id=task.room_id, event_id=event_id)
        return event_id
