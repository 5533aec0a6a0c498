"""The `scheduler` tool on the daemon's schedules: an agent's own tasks in the turn's room, made for the turn's
person; another agent's task or another room's is out of reach by id."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from mindroom.bots.runtime import LiveCell, LiveState
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.daemon.scheduling.agent_tasks import AgentSchedules
from mindroom.daemon.scheduling.scheduler import Scheduler
from mindroom.hooks import HookRegistry
from mindroom.state.sqlite.schedules import SqliteScheduleStore
from mindroom.tool_system.builtin import scheduler as tool
from mindroom.tool_system.builtin.parts import DaemonParts, provide_daemon_parts
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import ToolError

pytestmark = pytest.mark.asyncio

ROOM = "!room:localhost"


@pytest.fixture
def schedules(tmp_path: Path) -> Iterator[SqliteScheduleStore]:
    store = SqliteScheduleStore(tmp_path / "schedules.db")
    cell = LiveCell(LiveState(config=Config(timezone="Europe/Berlin"), registry=HookRegistry.empty()))
    directory = SimpleNamespace(entities={}, router_in_room=lambda room_id: room_id == ROOM)
    scheduler = Scheduler(cell, directory, store)  # type: ignore[arg-type]
    desk = AgentSchedules(scheduler, directory)  # type: ignore[arg-type]
    withdraw = provide_daemon_parts(tmp_path, DaemonParts(schedules=desk))
    yield store
    withdraw()
    store.close()


def turn(tmp_path: Path, agent: str = "helper", room: str = ROOM, thread: str | None = "$thread"):
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path, {})
    context = ToolRuntimeContext(None, agent, room, thread, "@alice:localhost", runtime_paths=paths)
    return bind_runtime_context(context)


def task_id(answer: str) -> str:
    return answer.split("`")[1]


async def test_scheduler_tool_stores_a_task_for_the_agent_and_the_person(tmp_path: Path, schedules):
    with turn(tmp_path):
        answer = await tool.schedule("in 10 minutes check the deploy", new_thread=False)
        room_level = await tool.schedule("every day at 9:00 post the agenda", new_thread=True, silent=True)

    here, daily = schedules.get(task_id(answer)), schedules.get(task_id(room_level))
    assert answer.startswith("Scheduled `") and "-> helper: check the deploy" in answer
    assert (here.agent_name, here.created_by, here.poster, here.thread_id) == (
        "helper",
        "@alice:localhost",
        "router",
        "$thread",
    )
    assert (daily.kind, daily.expression, daily.thread_id) == ("cron", "0 9 * * *", None)
    assert room_level.endswith("(Not offered here, so ignored: silent.)")


async def test_scheduler_tool_posts_as_the_agent_where_the_router_is_not(tmp_path: Path, schedules):
    with turn(tmp_path, room="!elsewhere:localhost"):
        answer = await tool.schedule("in 1 hour stretch", new_thread=False)

    assert schedules.get(task_id(answer)).poster == "helper"


async def test_scheduler_tool_lists_edits_and_cancels_only_its_own_tasks_here(tmp_path: Path, schedules):
    with turn(tmp_path):
        mine = task_id(await tool.schedule("in 10 minutes mine", new_thread=False))
    with turn(tmp_path, agent="other"):
        theirs = task_id(await tool.schedule("in 10 minutes theirs", new_thread=False))
    with turn(tmp_path, room="!elsewhere:localhost"):
        far = task_id(await tool.schedule("in 10 minutes far", new_thread=False))

    with turn(tmp_path):
        listing = await tool.list_schedules()
        for foreign in (theirs, far, "nope"):
            with pytest.raises(ToolError, match="you have no task"):
                await tool.cancel_schedule(foreign)
            with pytest.raises(ToolError, match="you have no task"):
                await tool.edit_schedule(foreign, "in 5 minutes hijacked")
        edited = await tool.edit_schedule(f"`{mine}`", "every 2 hours still mine")
        cancelled = await tool.cancel_schedule(mine)
        after = await tool.list_schedules()

    assert mine in listing and theirs not in listing and far not in listing
    assert edited.startswith(f"Updated `{mine}` every 2 hours")
    assert cancelled == f"Cancelled task `{mine}`."
    assert after == "You have no scheduled tasks in this room."
    assert schedules.get(theirs).message == "theirs" and schedules.get(far).message == "far"


async def test_scheduler_tool_refuses_what_it_cannot_schedule(tmp_path: Path, schedules):
    with turn(tmp_path), pytest.raises(ToolError, match="could not schedule that"):
        await tool.schedule("whenever you like", new_thread=False)
    with turn(tmp_path, room=""), pytest.raises(ToolError, match="Matrix room"):
        await tool.schedule("in 10 minutes x", new_thread=False)
    assert schedules.pending() == []
