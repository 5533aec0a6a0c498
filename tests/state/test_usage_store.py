"""The usage store on both backends: turns kept and summed by person, agent, room, model and day; turns older
than a moment folded into one row per day with the same sums; what one daemon wrote, the next one reads."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest

from mindroom.state.backend import StateBackend
from mindroom.state.usage import (
    BudgetCap,
    UsageQuery,
    UsageRecord,
    UsageStore,
    day_of,
    month_start,
    next_month_start,
)
from mindroom.state.usage_period import period_bounds

Opener = Callable[[], StateBackend]
NOON = dt.datetime(2026, 3, 10, 12, tzinfo=dt.UTC).timestamp()
DAY = 86400.0


def _turn(n: int, at: float, who: str = "@alice:hs", agent: str = "helper", model: str = "big", cost=0.5, **kw):
    fields = {"room_id": "!r:hs", "thread_id": "$t", "input_tokens": 100, "output_tokens": 10, "cached_tokens": 20}
    fields.update(kw)
    return UsageRecord(f"turn-{n}", at, who, agent, model=model, tool_calls=1, cost_usd=cost, **fields)


async def _usage(opener: Opener, opened: list[StateBackend]) -> tuple[StateBackend, UsageStore]:
    backend = opener()
    opened.append(backend)
    await backend.acquire()
    store = (await backend.open_stores()).usage
    assert store is not None
    return backend, store


@pytest.mark.asyncio
async def test_usage_store_sums_by_person_agent_model_and_day_and_survives_a_restart(
    opener: Opener, opened: list[StateBackend]
):
    backend, store = await _usage(opener, opened)
    store.add(
        [
            _turn(1, NOON),
            _turn(2, NOON + 60, who="@bob:hs", agent="team", cost=0.25),
            _turn(3, NOON + DAY, model="local", cost=None),
            _turn(4, NOON - DAY, who="@bob:hs", room_id="!other:hs"),
        ]
    )
    store.add([_turn(1, NOON, cost=9.0)])  # the same turn again (a replayed batch) changes nothing
    await backend.close()
    _second, store = await _usage(opener, opened)

    by_person = store.query(UsageQuery(group_by=("requester",)))
    assert [(t.key, t.turns, t.input_tokens, t.output_tokens, t.cached_tokens, t.tool_calls) for t in by_person] == [
        (("@alice:hs",), 2, 200, 20, 40, 2),
        (("@bob:hs",), 2, 200, 20, 40, 2),
    ]
    assert [(t.cost_usd, t.unpriced_turns) for t in by_person] == [(0.5, 1), (0.75, 0)]
    by_day = store.query(UsageQuery(group_by=("day",)))
    assert [(t.key[0], t.turns) for t in by_day] == [("2026-03-09", 1), ("2026-03-10", 2), ("2026-03-11", 1)]
    today = store.query(UsageQuery(since=NOON - 12 * 3600, until=NOON + 12 * 3600, group_by=("agent", "model")))
    assert [(t.key, t.turns, t.cost_usd) for t in today] == [(("helper", "big"), 1, 0.5), (("team", "big"), 1, 0.25)]
    [bob_elsewhere] = store.query(UsageQuery(requester="@bob:hs", room_id="!other:hs"))
    assert (bob_elsewhere.key, bob_elsewhere.turns) == ((), 1)
    assert store.query(UsageQuery(requester="@bob:hs", model="local")) == []
    assert store.query(UsageQuery(requester="@alice:hs.evil")) == []  # exact matches only


@pytest.mark.asyncio
async def test_usage_store_rolls_older_turns_into_days_with_the_same_sums(opener: Opener, opened: list[StateBackend]):
    backend, store = await _usage(opener, opened)
    store.add([_turn(n, NOON - DAY * (n % 3) + n, who=f"@p{n % 2}:hs") for n in range(12)])
    store.add([_turn(100, NOON + 3600)])
    everything = UsageQuery(group_by=("requester", "day", "model"))
    before = store.query(everything)

    assert store.roll_up(NOON) == 8  # the turns of the two days before; those of NOON's own day stay
    assert store.roll_up(NOON) == 0  # nothing left to fold
    store.add([_turn(200, NOON - DAY, who="@p0:hs")])  # a late turn of a rolled day, folded into the same row
    assert store.roll_up(NOON) == 1
    await backend.close()
    _second, store = await _usage(opener, opened)

    after = store.query(everything)
    late = next(t for t in after if t.key == ("@p0:hs", day_of(NOON - DAY), "big"))
    was = next(t for t in before if t.key == late.key)
    assert (late.turns, late.input_tokens, late.cost_usd) == (was.turns + 1, was.input_tokens + 100, was.cost_usd + 0.5)
    assert [t for t in after if t.key != late.key] == [t for t in before if t.key != late.key]
    # Rolled rows keep no thread; the turn after the cut is still kept as it was.
    assert [t.key for t in store.query(UsageQuery(group_by=("thread_id",)))] == [("",), ("$t",)]


def test_usage_month_bounds_are_utc_months():
    december = dt.datetime(2026, 12, 31, 23, 59, tzinfo=dt.UTC).timestamp()
    assert month_start(december) == dt.datetime(2026, 12, 1, tzinfo=dt.UTC).timestamp()
    assert next_month_start(december) == dt.datetime(2027, 1, 1, tzinfo=dt.UTC).timestamp()
    assert next_month_start(NOON) == dt.datetime(2026, 4, 1, tzinfo=dt.UTC).timestamp()


def test_usage_query_refuses_a_group_it_does_not_know():
    with pytest.raises(ValueError, match="cannot be grouped by requester_id"):
        UsageQuery(group_by=("requester_id",))


def test_usage_periods_by_name_and_a_near_miss_refused():
    day = dt.datetime(2026, 3, 10, tzinfo=dt.UTC).timestamp()
    assert period_bounds("today", NOON) == (day, None)
    assert period_bounds("Month", NOON) == (month_start(NOON), None)
    assert period_bounds("7d", NOON) == (day - 6 * DAY, None)
    assert period_bounds("all", NOON) == (None, None)
    assert period_bounds("2026-02", NOON) == (
        dt.datetime(2026, 2, 1, tzinfo=dt.UTC).timestamp(),
        dt.datetime(2026, 3, 1, tzinfo=dt.UTC).timestamp(),
    )
    assert period_bounds("2026-03-09", NOON) == (day - DAY, day)
    for wrong in ("2026-02-30", "7days", "0d", "month2", "2026-13"):
        with pytest.raises(ValueError, match="unknown period"):
            period_bounds(wrong, NOON)


@pytest.mark.asyncio
async def test_usage_store_keeps_each_persons_own_limit_across_a_restart(opener: Opener, opened: list[StateBackend]):
    backend, store = await _usage(opener, opened)
    store.set_cap(BudgetCap("@alice:hs", 5.0, "operator", 1.0))
    store.set_cap(BudgetCap("@bob:hs", 2.0, "operator", 2.0))
    store.set_cap(BudgetCap("@alice:hs", 7.5, "admin", 3.0))  # replaces hers
    store.remove_cap("@bob:hs")
    store.remove_cap("@nobody:hs")  # nothing to remove: nothing happens
    await backend.close()
    _second, store = await _usage(opener, opened)

    assert store.caps() == {"@alice:hs": BudgetCap("@alice:hs", 7.5, "admin", 3.0)}
