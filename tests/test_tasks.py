"""`TaskOwner`: owned tasks are guarded (a failure is logged with its owner), waited for, and ended on request."""

from __future__ import annotations

import asyncio

import pytest
from structlog.testing import capture_logs

from mindroom.tasks import TaskOwner

pytestmark = pytest.mark.asyncio


async def test_task_owner_logs_a_failure_with_owner_and_what_and_forgets_the_task():
    owner = TaskOwner("inbox")

    async def fails() -> None:
        raise RuntimeError("homeserver said no")

    with capture_logs() as logs:
        task = owner.spawn(fails(), "answering an invite", name="invite-helper")
        await owner.settled()

    assert task.get_name() == "invite-helper"
    assert not task.cancelled() and task.exception() is None  # the error is logged, not left in the task
    failed = [entry for entry in logs if entry["event"] == "background task failed"]
    assert [(entry["owner"], entry["what"], entry["log_level"]) for entry in failed] == [
        ("inbox", "answering an invite", "error")
    ]
    assert len(owner) == 0


async def test_task_owner_settled_waits_for_tasks_spawned_meanwhile_and_cancels_none():
    owner = TaskOwner("memory")
    finished: list[str] = []
    second_may_end = asyncio.Event()

    async def second() -> None:
        await second_may_end.wait()
        finished.append("second")

    async def first() -> None:
        owner.spawn(second(), "second")  # spawned while `settled` already waits
        finished.append("first")

    owner.spawn(first(), "first")
    waiting = asyncio.ensure_future(owner.settled())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert not waiting.done()  # the second one still runs
    second_may_end.set()
    await asyncio.wait_for(waiting, 5)

    assert finished == ["first", "second"]


async def test_task_owner_cancel_all_lets_quick_tasks_finish_within_the_grace_and_cancels_the_rest():
    owner = TaskOwner("memory")
    quick_may_end = asyncio.Event()
    ended: list[str] = []

    async def quick() -> None:
        await quick_may_end.wait()
        ended.append("quick")

    async def slow() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            ended.append("slow cancelled")
            raise

    quick_task = owner.spawn(quick(), "quick")
    slow_task = owner.spawn(slow(), "slow")
    asyncio.get_running_loop().call_soon(quick_may_end.set)

    await owner.cancel_all(grace_s=0.2)  # the quick one ends at once; the slow one would never end

    assert sorted(ended) == ["quick", "slow cancelled"]
    assert quick_task.done() and not quick_task.cancelled()
    assert slow_task.cancelled()
    assert len(owner) == 0


async def test_task_owner_cancel_all_without_grace_cancels_at_once():
    owner = TaskOwner("notices")
    task = owner.spawn(asyncio.Event().wait(), "waits forever")  # type: ignore[arg-type]

    await asyncio.wait_for(owner.cancel_all(), 5)

    assert task.cancelled()
