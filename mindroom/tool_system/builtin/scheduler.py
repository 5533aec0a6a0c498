"""The built-in `scheduler` tool (MindRoom's name): an agent schedules, lists, edits and cancels its own tasks.

A task is one of the daemon's schedules (what `!schedule` makes): at its time the message is posted in the
room, for this agent, on behalf of the person who asked, and the agent answers it as if that person had.
The functions and arguments are MindRoom's; `history_limit`, `silent` and `model` are accepted and reported
as not offered here. MindRoom's approval-gated scheduled tool calls (`schedule_tool_call`,
`run_scheduled_call`) are not offered.
"""

from __future__ import annotations

from mindroom.tool_system.builtin.parts import ScheduleDesk, daemon_parts, tool_caller
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = ["cancel_schedule", "edit_schedule", "list_schedules", "schedule", "scheduler_tools"]


def _desk() -> ScheduleDesk:
    desk = daemon_parts().schedules
    if desk is None:
        raise ToolError("schedules are not available in this daemon")
    return desk


def _not_offered(**given: object) -> str:
    names = [name for name, value in given.items() if value not in (None, "")]
    return f"\n(Not offered here, so ignored: {', '.join(names)}.)" if names else ""


async def schedule(
    request: str,
    new_thread: bool,
    history_limit: int | None = None,
    silent: bool | None = None,
    model: str | None = None,
) -> str:
    """Schedule a task using natural language: at its time the message is posted here and you answer it.

    Args:
        request: When and what, e.g. "in 5 minutes remind me to check logs", "every day at 9:00 post the
            stand-up agenda", "every 2 hours check the queue", or a cron line "0 9 * * 1-5 weekly report".
        new_thread: False posts in the current conversation (its thread); True posts at room level, so each
            run starts a new thread.
        history_limit: Not offered here (accepted for compatibility).
        silent: Not offered here (accepted for compatibility).
        model: Not offered here (accepted for compatibility).
    """
    result = await _desk().schedule(tool_caller(), request, new_thread=bool(new_thread))
    return result + _not_offered(history_limit=history_limit, silent=silent, model=model)


async def edit_schedule(
    task_id: str,
    request: str,
    history_limit: int | None = None,
    silent: bool | None = None,
    model: str | None = None,
) -> str:
    """Edit one of your scheduled tasks by replacing its timing and content.

    Args:
        task_id: The ID of the task to edit (from list_schedules).
        request: The new scheduling request, e.g. "tomorrow at 9am check deployment".
        history_limit: Not offered here (accepted for compatibility).
        silent: Not offered here (accepted for compatibility).
        model: Not offered here (accepted for compatibility).
    """
    result = await _desk().edit(tool_caller(), task_id.strip().strip("`"), request)
    return result + _not_offered(history_limit=history_limit, silent=silent, model=model)


async def list_schedules() -> str:
    """List your pending scheduled tasks in the current room, with their IDs."""
    return await _desk().listing(tool_caller())


async def cancel_schedule(task_id: str) -> str:
    """Cancel one of your scheduled tasks.

    Args:
        task_id: The ID of the task to cancel (from list_schedules).
    """
    return await _desk().cancel(tool_caller(), task_id.strip().strip("`"))


def scheduler_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `scheduler` group: `schedule`, `edit_schedule`, `list_schedules`, `cancel_schedule`."""
    return (
        ToolSpec(name="schedule", function=schedule),
        ToolSpec(name="edit_schedule", function=edit_schedule),
        ToolSpec(name="list_schedules", function=list_schedules),
        ToolSpec(name="cancel_schedule", function=cancel_schedule),
    )
