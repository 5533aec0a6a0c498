"""Periods of usage reports, by name: `today`, `month` (this calendar month), `7d`, `30d`, `all`, a month
`YYYY-MM` or a day `YYYY-MM-DD`, all in UTC. The chat command, the tool, the API and the CLI read the same names."""

from __future__ import annotations

import datetime as dt
import re

from mindroom.state.usage import month_start, next_month_start

__all__ = ["PERIODS", "period_bounds"]

PERIODS = "today, month, 7d, 30d, all, YYYY-MM or YYYY-MM-DD"
_DAYS = re.compile(r"(\d{1,3})d")
_MONTH = re.compile(r"(\d{4})-(\d{2})")
_DAY = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def _day_start(at: float) -> float:
    moment = dt.datetime.fromtimestamp(at, dt.UTC)
    return moment.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()


def period_bounds(period: str, now: float) -> tuple[float | None, float | None]:
    """`[since, until)` of a period name at `now` (None: open); `ValueError` naming the names for another."""
    name = period.strip().lower()
    if name == "today":
        return _day_start(now), None
    if name in {"month", ""}:
        return month_start(now), None
    if name == "all":
        return None, None
    days = _DAYS.fullmatch(name)
    if days and 1 <= int(days.group(1)) <= 366:
        return _day_start(now) - (int(days.group(1)) - 1) * 86400.0, None
    try:
        day = _DAY.fullmatch(name)
        if day:
            start = dt.datetime(int(day.group(1)), int(day.group(2)), int(day.group(3)), tzinfo=dt.UTC).timestamp()
            return start, start + 86400.0
        month = _MONTH.fullmatch(name)
        if month:
            start = dt.datetime(int(month.group(1)), int(month.group(2)), 1, tzinfo=dt.UTC).timestamp()
            return start, next_month_start(start)
    except ValueError:
        pass  # a date that does not exist: refused below with the names
    msg = f"unknown period {period!r} (use {PERIODS})"
    raise ValueError(msg)
