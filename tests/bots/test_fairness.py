"""FairSlots: bounded concurrency per agent with rooms served round-robin."""

import asyncio

import pytest

from mindroom.bots.fairness import FairSlots, QueueFullError

pytestmark = pytest.mark.asyncio


async def _run(slots: FairSlots, room: str, order: list[str], label: str, hold: asyncio.Event, peak: list[int]):
    async with slots.slot(room):
        order.append(label)
        peak[0] = max(peak[0], slots.running)
        await hold.wait()


async def test_fairness_flooded_room_does_not_starve_another_room():
    slots = FairSlots(limit=1)
    order: list[str] = []
    peak = [0]
    release = asyncio.Event()
    tasks = [asyncio.create_task(_run(slots, "flood", order, f"flood{i}", release, peak)) for i in range(20)]
    await asyncio.sleep(0)
    tasks.append(asyncio.create_task(_run(slots, "quiet", order, "quiet", release, peak)))
    await asyncio.sleep(0)
    release.set()
    await asyncio.gather(*tasks)
    assert order.index("quiet") <= 2
    assert peak[0] == 1


async def test_fairness_never_more_than_limit_and_all_complete():
    slots = FairSlots(limit=3)
    running = [0]
    peak = [0]

    async def body(room: str):
        async with slots.slot(room):
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            await asyncio.sleep(0.001)
            running[0] -= 1

    await asyncio.gather(*(body(f"room{i % 4}") for i in range(60)))
    assert peak[0] == 3
    assert slots.running == 0
    assert slots.waiting() == 0


async def test_fairness_room_queue_is_bounded():
    slots = FairSlots(limit=1, max_waiting_per_room=2)
    hold = asyncio.Event()
    order: list[str] = []
    peak = [0]
    first = asyncio.create_task(_run(slots, "a", order, "a0", hold, peak))
    waiters = [asyncio.create_task(_run(slots, "a", order, f"a{i}", hold, peak)) for i in (1, 2)]
    await asyncio.sleep(0)
    with pytest.raises(QueueFullError):
        async with slots.slot("a"):
            pass
    hold.set()
    await asyncio.gather(first, *waiters)
    assert order == ["a0", "a1", "a2"]


async def test_fairness_cancelled_waiter_frees_its_place():
    slots = FairSlots(limit=1)
    hold = asyncio.Event()
    order: list[str] = []
    peak = [0]
    first = asyncio.create_task(_run(slots, "a", order, "first", hold, peak))
    await asyncio.sleep(0)
    cancelled = asyncio.create_task(_run(slots, "b", order, "cancelled", hold, peak))
    last = asyncio.create_task(_run(slots, "c", order, "last", hold, peak))
    await asyncio.sleep(0)
    cancelled.cancel()
    hold.set()
    await asyncio.gather(first, last)
    assert order == ["first", "last"]
    assert slots.running == 0
