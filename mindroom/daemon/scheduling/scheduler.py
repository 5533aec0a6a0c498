"""Schedules: `!schedule` tasks stored in SQLite under the data dir, fired by one owned task -> `schedule:fired`.

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
import threading
import time
from dataclasses import astuple, dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mindroom.bots.routing import mentioned_agents
from mindroom.constants import ORIGINAL_SENDER_KEY, ROUTER_AGENT_NAME, SCHEDULE_ID_KEY
from mindroom.daemon.scheduling.parse import ScheduleParseError, ScheduleSpec, next_run_after, parse_schedule
from mindroom.hooks.context import ScheduleFiredContext, new_correlation_id
from mindroom.hooks.execution import emit
from mindroom.hooks.types import EVENT_SCHEDULE_FIRED
from mindroom.logging_config import get_logger
from mindroom.private_files import open_private_database

if TYPE_CHECKING:
    from mindroom.bots.bot import EntityBot
    from mindroom.bots.runtime import DaemonRuntime
    from mindroom.hooks.context import MessageEnvelope

__all__ = ["SCHEDULE_ID_KEY", "ScheduleStore", "ScheduledTask", "Scheduler", "schedule_command"]

logger = get_logger(__name__)

_MAX_SLEEP_S = 60.0  # re-check now and then, so a changed wall clock is noticed

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schedules (
    task_id TEXT PRIMARY KEY,
    room_id TEXT NOT NULL,
    thread_id TEXT,
    agent_name TEXT,
    created_by TEXT NOT NULL,
    poster TEXT NOT NULL,
    kind TEXT NOT NULL,
    expression TEXT NOT NULL,
    message TEXT NOT NULL,
    description TEXT NOT NULL,
    created_at REAL NOT NULL,
    next_run REAL
);
CREATE INDEX IF NOT EXISTS schedules_next_run ON schedules (next_run);
"""


@dataclass(frozen=True, slots=True)
class ScheduledTask:
    """One schedule: where it posts, who asked, for which agent, when, and what."""

    task_id: str
    room_id: str
    thread_id: str | None
    agent_name: str | None
    created_by: str
    poster: str
    kind: str
    expression: str
    message: str
    description: str
    created_at: float
    next_run: float | None


_COLUMNS = ", ".join(f.name for f in fields(ScheduledTask))


class ScheduleStore:
    """Schedules in one SQLite file; every change is committed at once, so a crash loses nothing stored."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = open_private_database(path)
        self._db.executescript(_SCHEMA)

    def _rows(self, sql: str, params: tuple[object, ...] = ()) -> list[ScheduledTask]:
        with self._lock:
            return [ScheduledTask(*row) for row in self._db.execute(sql, params).fetchall()]

    def add(self, task: ScheduledTask) -> None:
        """Store a new schedule."""
        marks = ", ".join("?" * len(fields(ScheduledTask)))
        with self._lock:
            self._db.execute(f"INSERT INTO schedules ({_COLUMNS}) VALUES ({marks})", astuple(task))  # noqa: S608

    def get(self, task_id: str) -> ScheduledTask | None:
        """One schedule by id."""
        rows = self._rows(f"SELECT {_COLUMNS} FROM schedules WHERE task_id = ?", (task_id,))  # noqa: S608
        return rows[0] if rows else None

    def in_room(self, room_id: str) -> list[ScheduledTask]:
        """The pending schedules of a room, soonest first."""
        sql = f"SELECT {_COLUMNS} FROM schedules WHERE room_id = ? AND next_run IS NOT NULL ORDER BY next_run"  # noqa: S608
        return self._rows(sql, (room_id,))

    def pending(self) -> list[ScheduledTask]:
        """Every schedule that will run again, soonest first."""
        return self._rows(f"SELECT {_COLUMNS} FROM schedules WHERE next_run IS NOT NULL ORDER BY next_run")  # noqa: S608

    def set_next_run(self, task_id: str, next_run: float | None) -> None:
        """Move a schedule to its next run; None deletes it (a one-off that ran)."""
        with self._lock:
            if next_run is None:
                self._db.execute("DELETE FROM schedules WHERE task_id = ?", (task_id,))
            else:
                self._db.execute("UPDATE schedules SET next_run = ? WHERE task_id = ?", (next_run, task_id))

    def remove(self, task_id: str) -> bool:
        """Delete a schedule; False if there was none with this id."""
        with self._lock:
            return self._db.execute("DELETE FROM schedules WHERE task_id = ?", (task_id,)).rowcount == 1

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        logger.warning("unknown timezone; using UTC", timezone=name)
        return ZoneInfo("UTC")


class Scheduler:
    """Owns the task that fires due schedules; `start()` after the bots are ready, `await stop()` before they stop."""

    def __init__(self, runtime: DaemonRuntime, store: ScheduleStore) -> None:
        self.runtime = runtime
        self.store = store
        self._wake = asyncio.Event()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self.fired = 0

    @property
    def timezone(self) -> ZoneInfo:
        """The config's timezone, in which schedules are read and shown."""
        return _zone(self.runtime.config.timezone)

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
    ) -> ScheduledTask:
        """Store a new schedule and wake the loop; returns it with its first run."""
        now = self.now()
        first = next_run_after(spec.kind, spec.expression, now, now)
        task = ScheduledTask(
            task_id=secrets.token_hex(3),
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
        runtime = self.runtime
        poster = runtime.bots.get(task.poster) or runtime.bots.get(ROUTER_AGENT_NAME)
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
            **poster.hook_bindings(),
        )
        await emit(runtime.registry, EVENT_SCHEDULE_FIRED, ctx)
        self.fired += 1
        if ctx.suppress or not ctx.message_text.strip():
            logger.info("scheduled message suppressed", task_id=task.task_id, room_id=task.room_id)
            return None
        agent_user = runtime.bot_user_ids.get(task.agent_name) if task.agent_name else None
        event_id = await poster.client.send_message(
            task.room_id,
            ctx.message_text,
            thread_root=task.thread_id,
            mentions=[agent_user] if agent_user else None,
            extra_content={ORIGINAL_SENDER_KEY: task.created_by, SCHEDULE_ID_KEY: task.task_id},
        )
        logger.info("scheduled message posted", task_id=task.task_id, room_id=task.room_id, event_id=event_id)
        return event_id


_USAGE = (
    "Usage: `!schedule in 10 minutes <message>`, `!schedule at 9:00 <message>`,"
    " `!schedule every day at 9:00 <message>`, `!schedule every 2 hours <message>`,"
    " `!schedule 0 9 * * 1-5 <message>` (cron), `!schedule list`, `!schedule cancel <id>`."
)


def _describe(task: ScheduledTask, zone: ZoneInfo) -> str:
    when = (
        "done" if task.next_run is None else datetime.fromtimestamp(task.next_run, zone).strftime("%Y-%m-%d %H:%M:%S")
    )
    to = f" -> {task.agent_name}" if task.agent_name else ""
    preview = task.message if len(task.message) <= 80 else task.message[:77] + "..."
    return f"`{task.task_id}` {task.description}, next {when} {zone.key}{to}: {preview}"


def _addressee(bot: EntityBot, envelope: MessageEnvelope, message: str) -> str | None:
    runtime = bot.runtime
    present = runtime.agents_in_room(envelope.room_id)
    text_mentions = mentioned_agents({"body": message}, runtime.agent_user_ids, runtime.display_names)
    for name in (*envelope.mentioned_agents, *text_mentions):
        if name in present:
            return name
    return present[0] if len(present) == 1 else None


async def schedule_command(bot: EntityBot, envelope: MessageEnvelope, args: str) -> str:
    """`!schedule ...`: create, list or cancel this room's schedules."""
    scheduler = bot.runtime.scheduler
    if scheduler is None:
        return "Schedules are not available in this daemon."
    verb, _, rest = args.partition(" ")
    zone = scheduler.timezone
    if not args or verb.lower() == "help":
        return _USAGE
    if verb.lower() == "list" and not rest.strip():
        tasks = scheduler.store.in_room(envelope.room_id)
        if not tasks:
            return "No schedules in this room."
        return "Schedules here:\n" + "\n".join(f"- {_describe(task, zone)}" for task in tasks)
    if verb.lower() == "cancel":
        task_id = rest.strip().strip("`")
        if scheduler.cancel(task_id, envelope.room_id):
            return f"Cancelled schedule `{task_id}`."
        return f"No schedule `{task_id}` in this room. `!schedule list` shows them."
    try:
        spec = parse_schedule(args, scheduler.now())
    except ScheduleParseError as exc:
        return f"Could not schedule that: {exc}"
    task = scheduler.create(
        spec,
        room_id=envelope.room_id,
        thread_id=envelope.thread_id,
        created_by=envelope.requester_id,
        poster=bot.name,
        agent=_addressee(bot, envelope, spec.message),
    )
    if task.next_run is None:
        scheduler.cancel(task.task_id, envelope.room_id)
        return "That time has already passed."
    return f"Scheduled {_describe(task, zone)}"
