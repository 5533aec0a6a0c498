"""An agent's own tasks on the daemon's schedules: what the `scheduler` tool schedules, lists, edits and cancels.

A task the tool makes is a schedule like one `!schedule` makes, addressed to the calling agent and made on
behalf of the person the turn speaks for (`created_by`): at its time the message is posted in the room (by
the router when it is in the room, else by the agent itself, as a plain reminder), mentioning the agent,
which answers it as if that person had asked. An agent sees and changes only the tasks addressed to it in
the room of the turn; the person and the room come from the turn, never from the model's arguments.
"""

from __future__ import annotations

from mindroom.bots.directory import Directory
from mindroom.constants import ROUTER_AGENT_NAME
from mindroom.daemon.scheduling.command import describe_task
from mindroom.daemon.scheduling.parse import ScheduleParseError, ScheduleSpec, parse_schedule
from mindroom.daemon.scheduling.scheduler import Scheduler
from mindroom.logging_config import get_logger
from mindroom.state.schedules import ScheduledTask
from mindroom.tool_system.builtin.parts import ToolCaller
from mindroom.tool_system.spec import ToolError

__all__ = ["AgentSchedules"]

logger = get_logger(__name__)


class AgentSchedules:
    """The `scheduler` tool's desk (`ScheduleDesk`) over the run's scheduler."""

    def __init__(self, scheduler: Scheduler, directory: Directory) -> None:
        self._scheduler = scheduler
        self._directory = directory

    def _spec(self, request: str) -> ScheduleSpec:
        try:
            return parse_schedule(request, self._scheduler.now())
        except ScheduleParseError as exc:
            raise ToolError(f"could not schedule that: {exc}") from None

    def _own(self, caller: ToolCaller, task_id: str) -> ScheduledTask:
        task = self._scheduler.store.get(task_id)
        if task is None or task.room_id != caller.room_id or task.agent_name != caller.agent_name:
            raise ToolError(f"you have no task {task_id!r} in this room; list_schedules shows yours")
        return task

    def _poster(self, room_id: str, agent: str) -> str:
        return ROUTER_AGENT_NAME if self._directory.router_in_room(room_id) else agent

    def _store(self, caller: ToolCaller, spec: ScheduleSpec, thread_id: str | None, task_id: str | None) -> str:
        task = self._scheduler.create(
            spec,
            room_id=caller.room_id,
            thread_id=thread_id,
            created_by=caller.requester_id,
            poster=self._poster(caller.room_id, caller.agent_name),
            agent=caller.agent_name,
            task_id=task_id,
        )
        if task.next_run is None:
            self._scheduler.cancel(task.task_id, caller.room_id)
            raise ToolError("that time has already passed")
        logger.info("task scheduled by an agent", agent=caller.agent_name, task_id=task.task_id, by=caller.requester_id)
        return describe_task(task, self._scheduler.timezone)

    async def schedule(self, caller: ToolCaller, request: str, *, new_thread: bool) -> str:
        """Store a task for the caller's agent, in this conversation's thread unless `new_thread`."""
        spec = self._spec(request)
        return "Scheduled " + self._store(caller, spec, None if new_thread else caller.thread_id, None)

    async def edit(self, caller: ToolCaller, task_id: str, request: str) -> str:
        """Replace one of the agent's tasks in this room with a new timing and message (same id and thread)."""
        task = self._own(caller, task_id)
        spec = self._spec(request)
        self._scheduler.cancel(task.task_id, task.room_id)
        return "Updated " + self._store(caller, spec, task.thread_id, task.task_id)

    async def listing(self, caller: ToolCaller) -> str:
        """The agent's pending tasks in this room."""
        zone = self._scheduler.timezone
        tasks = [task for task in self._scheduler.store.in_room(caller.room_id) if task.agent_name == caller.agent_name]
        if not tasks:
            return "You have no scheduled tasks in this room."
        return "Your scheduled tasks here:\n" + "\n".join(f"- {describe_task(task, zone)}" for task in tasks)

    async def cancel(self, caller: ToolCaller, task_id: str) -> str:
        """Cancel one of the agent's tasks in this room."""
        task = self._own(caller, task_id)
        self._scheduler.cancel(task.task_id, task.room_id)
        return f"Cancelled task `{task.task_id}`."
