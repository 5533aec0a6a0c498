"""`!schedule`: create, list and cancel a room's schedules (registered into the command table by the orchestrator)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from mindroom.bots.commands.table import Command
from mindroom.bots.directory import Directory
from mindroom.bots.routing import mentioned_agents
from mindroom.bots.runtime import Entity, LiveState
from mindroom.daemon.scheduling.parse import ScheduleParseError, parse_schedule
from mindroom.daemon.scheduling.scheduler import Scheduler
from mindroom.hooks.context import MessageEnvelope
from mindroom.state.schedules import ScheduledTask

__all__ = ["SCHEDULE_HELP", "describe_task", "schedule_command"]

SCHEDULE_HELP = "post a message later: `in 10 minutes ...`, `every day at 9:00 ...`, a cron line; `list`, `cancel ID`"

_USAGE = (
    "Usage: `!schedule in 10 minutes <message>`, `!schedule at 9:00 <message>`,"
    " `!schedule every day at 9:00 <message>`, `!schedule every 2 hours <message>`,"
    " `!schedule 0 9 * * 1-5 <message>` (cron), `!schedule list`, `!schedule cancel <id>`."
)


def describe_task(task: ScheduledTask, zone: ZoneInfo) -> str:
    """One line for a schedule: its id, rhythm, next run in `zone`, addressee and message."""
    when = (
        "done" if task.next_run is None else datetime.fromtimestamp(task.next_run, zone).strftime("%Y-%m-%d %H:%M:%S")
    )
    to = f" -> {task.agent_name}" if task.agent_name else ""
    preview = task.message if len(task.message) <= 80 else task.message[:77] + "..."
    return f"`{task.task_id}` {task.description}, next {when} {zone.key}{to}: {preview}"


def _addressee(directory: Directory, live: LiveState, envelope: MessageEnvelope, message: str) -> str | None:
    present = directory.agents_in_room(envelope.room_id, live.config)
    text_mentions = mentioned_agents({"body": message}, directory.agent_user_ids, live.display_names)
    for name in (*envelope.mentioned_agents, *text_mentions):
        if name in present:
            return name
    return present[0] if len(present) == 1 else None


def schedule_command(scheduler: Scheduler, directory: Directory) -> Command:
    """`!schedule`, answered with `scheduler` (and `directory`, for the room's agents), for the orchestrator
    to register into the command table."""

    async def run(entity: Entity, live: LiveState, envelope: MessageEnvelope, args: str) -> str:
        return await _schedule(scheduler, directory, entity, live, envelope, args)

    return Command("schedule", SCHEDULE_HELP, run)


async def _schedule(
    scheduler: Scheduler, directory: Directory, entity: Entity, live: LiveState, envelope: MessageEnvelope, args: str
) -> str:
    """`!schedule ...`: create, list or cancel this room's schedules."""
    verb, _, rest = args.partition(" ")
    zone = scheduler.timezone
    if not args or verb.lower() == "help":
        return _USAGE
    if verb.lower() == "list" and not rest.strip():
        tasks = scheduler.store.in_room(envelope.room_id)
        if not tasks:
            return "No schedules in this room."
        return "Schedules here:\n" + "\n".join(f"- {describe_task(task, zone)}" for task in tasks)
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
        poster=entity.name,
        agent=_addressee(directory, live, envelope, spec.message),
    )
    if task.next_run is None:
        scheduler.cancel(task.task_id, envelope.room_id)
        return "That time has already passed."
    return f"Scheduled {describe_task(task, zone)}"
