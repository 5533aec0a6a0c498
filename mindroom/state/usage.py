"""What turns spent: one row per turn (who asked, which agent, where, which model, tokens, tool calls, cost), and
one row per day and (person, agent, room, model) for turns older than the retention window.

`sqlite.usage.SqliteUsageStore` keeps them in a file under the data directory, `postgres.usage.PostgresUsageStore`
in the state's database. Both answer the same `UsageQuery` with the same sums (`UsageTotals`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "CAP_COLUMNS",
    "GROUPS",
    "USAGE_COLUMNS",
    "BudgetCap",
    "UsageQuery",
    "UsageRecord",
    "UsageStore",
    "UsageTotals",
    "day_of",
    "month_start",
    "next_month_start",
    "query_sql",
    "rollup_key",
    "rollup_rows",
    "rollup_sql",
    "rollup_upsert",
    "totals_of",
]

USAGE_COLUMNS = (
    "record_id",
    "day",
    "at",
    "requester",
    "agent",
    "room_id",
    "thread_id",
    "model",
    "turns",
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "tool_calls",
    "cost_usd",
    "unpriced_turns",
    "rolled",
)
"""The usage table's columns, in the order `UsageRecord.row` gives them (both backends and `state migrate`)."""

CAP_COLUMNS = ("requester", "limit_usd", "set_by", "set_at")
"""The budget caps table's columns, in `BudgetCap`'s order."""

GROUPS = ("requester", "agent", "room_id", "thread_id", "model", "day")
"""What usage can be summed by."""

_SUMS = ("turns", "input_tokens", "output_tokens", "cached_tokens", "tool_calls", "cost_usd", "unpriced_turns")


def day_of(at: float) -> str:
    """The UTC day (`YYYY-MM-DD`) of a moment."""
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%d")


def month_start(at: float) -> float:
    """The first moment (UTC) of the month holding `at`."""
    moment = dt.datetime.fromtimestamp(at, dt.UTC)
    return moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp()


def next_month_start(at: float) -> float:
    """The first moment (UTC) of the month after the one holding `at`: when a monthly budget starts again."""
    moment = dt.datetime.fromtimestamp(at, dt.UTC)
    year, month = (moment.year + 1, 1) if moment.month == 12 else (moment.year, moment.month + 1)
    return dt.datetime(year, month, 1, tzinfo=dt.UTC).timestamp()


def rollup_key(day: str, requester: str, agent: str, room_id: str, model: str) -> str:
    """The id of the row a day's turns of one person, agent, room and model are rolled into."""
    return "\x1f".join(("day", day, requester, agent, room_id, model))


@dataclass(frozen=True, slots=True)
class UsageRecord:
    """One turn's usage. `cost_usd` is None for a model without `pricing` (its tokens are counted all the same)."""

    record_id: str
    at: float
    requester: str
    agent: str
    room_id: str
    thread_id: str
    model: str
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    tool_calls: int
    cost_usd: float | None

    def row(self) -> tuple[object, ...]:
        """The record as a row of `USAGE_COLUMNS`."""
        unpriced = 1 if self.cost_usd is None else 0
        return (
            self.record_id,
            day_of(self.at),
            self.at,
            self.requester,
            self.agent,
            self.room_id,
            self.thread_id,
            self.model,
            1,
            self.input_tokens,
            self.output_tokens,
            self.cached_tokens,
            self.tool_calls,
            self.cost_usd or 0.0,
            unpriced,
            0,
        )


@dataclass(frozen=True, slots=True)
class BudgetCap:
    """One person's own monthly limit in USD (over `budgets.monthly_limit_usd`), who set it and when."""

    requester: str
    limit_usd: float
    set_by: str
    set_at: float


@dataclass(frozen=True, slots=True)
class UsageQuery:
    """Which turns to sum (a period `[since, until)` and exact matches), and what to sum them by."""

    since: float | None = None
    until: float | None = None
    requester: str | None = None
    agent: str | None = None
    room_id: str | None = None
    model: str | None = None
    group_by: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = [name for name in self.group_by if name not in GROUPS]
        if unknown:
            msg = f"usage cannot be grouped by {', '.join(unknown)} (use {', '.join(GROUPS)})"
            raise ValueError(msg)


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """The sums of one group: `key` holds its values in `UsageQuery.group_by` order."""

    key: tuple[str, ...]
    turns: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    tool_calls: int
    cost_usd: float
    unpriced_turns: int

    def as_dict(self, group_by: Sequence[str]) -> dict[str, object]:
        """The group's values and sums by name (for JSON)."""
        sums = (self.turns, self.input_tokens, self.output_tokens, self.cached_tokens, self.tool_calls)
        return {
            **dict(zip(group_by, self.key, strict=True)),
            **dict(zip(_SUMS[:5], sums, strict=True)),
            "cost_usd": round(self.cost_usd, 6),
            "unpriced_turns": self.unpriced_turns,
        }


def query_sql(query: UsageQuery, table: str, mark: str) -> tuple[str, list[object]]:
    """The SELECT answering `query` on `table`, with `mark` as the parameter placeholder (`?` or `%s`)."""
    where: list[str] = []
    params: list[object] = []
    if query.since is not None:
        where.append(f"at >= {mark}")
        params.append(query.since)
    if query.until is not None:
        where.append(f"at < {mark}")
        params.append(query.until)
    for column in ("requester", "agent", "room_id", "model"):
        value = getattr(query, column)
        if value is not None:
            where.append(f"{column} = {mark}")
            params.append(value)
    groups = list(query.group_by)  # checked against GROUPS: only known column names reach the text
    sums = ", ".join(f"COALESCE(SUM({name}), 0)" for name in _SUMS)
    sql = f"SELECT {', '.join([*groups, sums])} FROM {table}"  # noqa: S608 - fixed names only
    if where:
        sql += " WHERE " + " AND ".join(where)
    if groups:
        sql += f" GROUP BY {', '.join(groups)} ORDER BY {', '.join(groups)}"
    return sql, params


def totals_of(rows: Sequence[Sequence[object]], width: int) -> list[UsageTotals]:
    """`UsageTotals` of the rows `query_sql` selected (`width` group columns first)."""
    found = []
    for row in rows:
        sums = row[width:]
        if width == 0 and not sums[0]:
            continue  # no turns at all: no group
        found.append(
            UsageTotals(
                tuple(str(value) for value in row[:width]),
                int(sums[0]),  # type: ignore[call-overload]
                int(sums[1]),  # type: ignore[call-overload]
                int(sums[2]),  # type: ignore[call-overload]
                int(sums[3]),  # type: ignore[call-overload]
                int(sums[4]),  # type: ignore[call-overload]
                float(sums[5]),  # type: ignore[arg-type]
                int(sums[6]),  # type: ignore[call-overload]
            )
        )
    return found


_ROLLUP_GROUPS = ("day", "requester", "agent", "room_id", "model")


def rollup_sql(table: str, mark: str) -> str:
    """The SELECT of the per-turn rows before a moment (`mark` its placeholder), summed per rolled-up row."""
    sums = ", ".join(f"SUM({name})" for name in _SUMS)
    return (
        f"SELECT {', '.join(_ROLLUP_GROUPS)}, MIN(at), {sums} FROM {table}"  # noqa: S608 - fixed names only
        f" WHERE rolled = 0 AND at < {mark} GROUP BY {', '.join(_ROLLUP_GROUPS)}"
    )


def rollup_rows(selected: Sequence[Sequence[object]]) -> list[tuple[object, ...]]:
    """The rolled-up rows (in `USAGE_COLUMNS` order, `rolled` = 1) of what `rollup_sql` selected."""
    rows = []
    for day, requester, agent, room_id, model, first_at, *sums in selected:
        key = rollup_key(str(day), str(requester), str(agent), str(room_id), str(model))
        start = dt.datetime.strptime(str(day), "%Y-%m-%d").replace(tzinfo=dt.UTC).timestamp()
        del first_at  # the day's row sits at the day's start, so periods cut at days count it whole
        rows.append((key, day, start, requester, agent, room_id, "", model, *sums, 1))
    return rows


def rollup_upsert(table: str, mark: str, alias: str) -> str:
    """The INSERT that adds a rolled-up row to the one of its key, if there is one already."""
    marks = ", ".join([mark] * len(USAGE_COLUMNS))
    adds = ", ".join(f"{name} = {alias}.{name} + excluded.{name}" for name in _SUMS)
    return (
        f"INSERT INTO {table} ({', '.join(USAGE_COLUMNS)}) VALUES ({marks})"  # noqa: S608 - fixed names only
        f" ON CONFLICT (record_id) DO UPDATE SET {adds}"
    )


class UsageStore(Protocol):
    """Every turn's usage, per turn within the retention window and per day before it."""

    def add(self, records: Sequence[UsageRecord]) -> None:
        """Keep a batch of turns (a record already kept is left as it is)."""

    def query(self, query: UsageQuery) -> list[UsageTotals]:
        """The sums of the turns `query` selects, one per group (blocks: call it off the event loop)."""

    def roll_up(self, before: float) -> int:
        """Fold the turns before `before` into one row per day, person, agent, room and model; how many were folded."""

    def caps(self) -> dict[str, BudgetCap]:
        """Every person's own monthly limit (blocks: call it off the event loop)."""

    def set_cap(self, cap: BudgetCap) -> None:
        """Keep one person's own monthly limit (it replaces the one they had)."""

    def remove_cap(self, requester: str) -> None:
        """Drop one person's own monthly limit (they are back under `budgets.monthly_limit_usd`)."""

    def close(self) -> None:
        """Release what the store holds of its own (the backend closes shared connections)."""
