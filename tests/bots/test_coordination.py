"""TurnCoordinator: the router's assignment and the order of several answers to one event."""

import asyncio
import time
from types import SimpleNamespace

import pytest

from mindroom.bots import coordination
from mindroom.bots.coordination import TurnCoordinator

pytestmark = pytest.mark.asyncio

LONG_S = 3600.0
"""A timeout no passing test waits for: a coordinator that missed a wake-up would wait that long."""
GUARD_S = 60.0
"""Fails such a wait instead of hanging the suite (far past any wake-up; not a speed check)."""
SHORT_S = 0.05


async def settle() -> None:
    """Let every ready task run until it blocks again."""
    for _ in range(5):
        await asyncio.sleep(0)


# -- assignment ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", [pytest.param("helper", id="agent"), pytest.param(None, id="nobody")])
async def test_turn_coordinator_assignment_made_before_waiting(agent: str | None) -> None:
    coordinator = TurnCoordinator()
    coordinator.assign("$e", agent)
    assert await asyncio.wait_for(coordinator.assignment("$e", LONG_S), GUARD_S) == agent


@pytest.mark.parametrize("agent", [pytest.param("helper", id="agent"), pytest.param(None, id="nobody")])
async def test_turn_coordinator_assignment_made_while_waiting(agent: str | None) -> None:
    coordinator = TurnCoordinator()
    waiter = asyncio.create_task(coordinator.assignment("$e", LONG_S))
    await settle()
    assert not waiter.done()
    coordinator.assign("$e", agent)
    assert await asyncio.wait_for(waiter, GUARD_S) == agent


async def test_turn_coordinator_assignment_timeout_returns_none() -> None:
    coordinator = TurnCoordinator()
    started = time.monotonic()
    assert await coordinator.assignment("$e", SHORT_S) is None
    assert time.monotonic() - started >= SHORT_S * 0.5


async def test_turn_coordinator_assignment_after_a_timeout_still_reaches_later_waiters() -> None:
    coordinator = TurnCoordinator()
    assert await coordinator.assignment("$e", SHORT_S) is None
    coordinator.assign("$e", "helper")
    assert await asyncio.wait_for(coordinator.assignment("$e", LONG_S), GUARD_S) == "helper"


async def test_turn_coordinator_first_assignment_wins() -> None:
    coordinator = TurnCoordinator()
    coordinator.assign("$e", "helper")
    coordinator.assign("$e", "coder")
    coordinator.assign("$e", None)
    assert await asyncio.wait_for(coordinator.assignment("$e", LONG_S), GUARD_S) == "helper"


async def test_turn_coordinator_assignment_reaches_every_waiter() -> None:
    coordinator = TurnCoordinator()
    waiters = [asyncio.create_task(coordinator.assignment("$e", LONG_S)) for _ in range(3)]
    await settle()
    coordinator.assign("$e", "coder")
    assert await asyncio.wait_for(asyncio.gather(*waiters), GUARD_S) == ["coder", "coder", "coder"]


async def test_turn_coordinator_assignments_are_per_event() -> None:
    coordinator = TurnCoordinator()
    coordinator.assign("$one", "helper")
    assert await coordinator.assignment("$two", SHORT_S) is None
    assert await asyncio.wait_for(coordinator.assignment("$one", LONG_S), GUARD_S) == "helper"


# -- wait_for -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mentioned",
    [
        pytest.param(("helper", "coder"), id="two"),
        pytest.param(("research", "helper", "coder"), id="three"),
        pytest.param(("coder", "research", "helper", "scribe"), id="four"),
    ],
)
async def test_turn_coordinator_wait_for_orders_answers(mentioned: tuple[str, ...]) -> None:
    coordinator = TurnCoordinator()
    answered: list[str] = []

    async def answer(name: str) -> None:
        earlier = mentioned[: mentioned.index(name)]
        if earlier:
            await coordinator.wait_for("$e", earlier, LONG_S)
        await asyncio.sleep(0)
        answered.append(name)
        coordinator.finish("$e", name)

    # Started last-first, so only the coordinator can put them in order.
    tasks = [asyncio.create_task(answer(name)) for name in reversed(mentioned)]
    await asyncio.wait_for(asyncio.gather(*tasks), GUARD_S)
    assert answered == list(mentioned)


@pytest.mark.parametrize(
    ("finished", "agents"),
    [
        pytest.param((), (), id="nobody-to-wait-for"),
        pytest.param(("helper",), ("helper",), id="already-finished"),
        pytest.param(("helper", "coder"), ("coder", "helper"), id="all-already-finished"),
        pytest.param(("helper", "coder", "research"), ("coder",), id="more-than-needed"),
    ],
)
async def test_turn_coordinator_wait_for_returns_at_once(finished: tuple[str, ...], agents: tuple[str, ...]) -> None:
    coordinator = TurnCoordinator()
    for name in finished:
        coordinator.finish("$e", name)
    await asyncio.wait_for(coordinator.wait_for("$e", agents, LONG_S), GUARD_S)


async def test_turn_coordinator_wait_for_needs_every_agent() -> None:
    coordinator = TurnCoordinator()
    waiter = asyncio.create_task(coordinator.wait_for("$e", ("helper", "coder"), LONG_S))
    await settle()
    coordinator.finish("$e", "helper")
    await settle()
    assert not waiter.done()
    coordinator.finish("$e", "coder")
    await asyncio.wait_for(waiter, GUARD_S)


async def test_turn_coordinator_wait_for_ignores_other_events() -> None:
    coordinator = TurnCoordinator()
    waiter = asyncio.create_task(coordinator.wait_for("$e", ("helper",), LONG_S))
    await settle()
    coordinator.finish("$other", "helper")
    await settle()
    assert not waiter.done()
    coordinator.finish("$e", "helper")
    await asyncio.wait_for(waiter, GUARD_S)


async def test_turn_coordinator_wait_for_releases_several_waiters() -> None:
    coordinator = TurnCoordinator()
    second = asyncio.create_task(coordinator.wait_for("$e", ("helper",), LONG_S))
    third = asyncio.create_task(coordinator.wait_for("$e", ("helper", "coder"), LONG_S))
    await settle()
    coordinator.finish("$e", "helper")
    await asyncio.wait_for(second, GUARD_S)
    await settle()
    assert not third.done()
    coordinator.finish("$e", "coder")
    await asyncio.wait_for(third, GUARD_S)


async def test_turn_coordinator_wait_for_timeout_returns_quietly() -> None:
    coordinator = TurnCoordinator()
    coordinator.finish("$e", "helper")
    started = time.monotonic()
    assert await coordinator.wait_for("$e", ("helper", "coder"), SHORT_S) is None
    assert time.monotonic() - started >= SHORT_S * 0.5


async def test_turn_coordinator_wait_for_zero_timeout_returns_at_once() -> None:
    coordinator = TurnCoordinator()
    await asyncio.wait_for(coordinator.wait_for("$e", ("helper",), 0), GUARD_S)


# -- pruning ------------------------------------------------------------------------------------------


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """A settable monotonic clock, seen by the coordination module only (the event loop keeps real time)."""
    now = [1_000.0]
    monkeypatch.setattr(coordination, "time", SimpleNamespace(monotonic=lambda: now[0]))
    return now


@pytest.mark.parametrize(
    ("age_s", "kept"),
    [
        pytest.param(1.0, True, id="fresh"),
        pytest.param(599.0, True, id="just-inside"),
        pytest.param(600.0, True, id="at-the-limit"),
        pytest.param(600.5, False, id="just-outside"),
        pytest.param(86_400.0, False, id="a-day-old"),
    ],
)
async def test_turn_coordinator_prunes_old_events(clock: list[float], age_s: float, kept: bool) -> None:
    coordinator = TurnCoordinator()
    coordinator.assign("$old", "helper")
    clock[0] += age_s
    coordinator.assign("$new", "coder")  # a new event is what prunes
    assert await coordinator.assignment("$old", SHORT_S) == ("helper" if kept else None)
    assert await asyncio.wait_for(coordinator.assignment("$new", LONG_S), GUARD_S) == "coder"


async def test_turn_coordinator_prune_releases_a_waiting_assignment(clock: list[float]) -> None:
    coordinator = TurnCoordinator()
    waiter = asyncio.create_task(coordinator.assignment("$old", LONG_S))
    await settle()
    clock[0] += 601
    coordinator.finish("$new", "helper")
    assert await asyncio.wait_for(waiter, GUARD_S) is None


async def test_turn_coordinator_prune_forgets_finished_agents(clock: list[float]) -> None:
    coordinator = TurnCoordinator()
    coordinator.finish("$old", "helper")
    clock[0] += 601
    coordinator.assign("$new", None)
    waiter = asyncio.create_task(coordinator.wait_for("$old", ("helper",), LONG_S))
    await settle()
    assert not waiter.done()
    coordinator.finish("$old", "helper")
    await asyncio.wait_for(waiter, GUARD_S)
