"""Parsing `!schedule` requests into when-and-what, and computing a schedule's next run. Pure functions.

Accepted forms (times are in the config's `timezone`):

    in 10 minutes <message>            once, after a delay (seconds, minutes, hours, days, weeks)
    at 9:00 <message>                  once, the next time the clock shows 9:00 (also `9am`, `21:30`)
    tomorrow at 9:00 <message>         once, tomorrow
    every day at 9:00 <message>        daily (also `daily at`, `every weekday at`, `every monday at`)
    every 15 minutes <message>         a fixed interval (also `every hour <message>`)
    cron */5 * * * * <message>         a 5-field cron expression (the word `cron` is optional)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from mindroom.errors import MindroomError

__all__ = ["ScheduleKind", "ScheduleParseError", "ScheduleSpec", "next_run_after", "parse_schedule"]

ScheduleKind = Literal["once", "cron", "interval"]

_UNITS = {
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hr": 3600,
    "hrs": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
    "w": 604800,
    "week": 604800,
    "weeks": 604800,
}
_WEEKDAYS = {
    "monday": "1",
    "tuesday": "2",
    "wednesday": "3",
    "thursday": "4",
    "friday": "5",
    "saturday": "6",
    "sunday": "0",
}
_AMOUNT = r"(?P<amount>\d+|an?|one)"
_UNIT = r"(?P<unit>[a-z]+)"
_CLOCK = r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<ampm>am|pm)?"
_IN = re.compile(rf"^in\s+{_AMOUNT}\s*{_UNIT}\b\s*(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)
_AT = re.compile(rf"^(?P<tomorrow>tomorrow\s+)?at\s+{_CLOCK}\b\s*(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)
_EVERY_AT = re.compile(
    rf"^(?:every\s+(?P<which>day|weekday|{'|'.join(_WEEKDAYS)})|daily)\s+at\s+{_CLOCK}\b\s*(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL,
)
_EVERY_INTERVAL = re.compile(rf"^every\s+(?:{_AMOUNT}\s*)?{_UNIT}\b\s*(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)
_CRON_FIELD = re.compile(r"^[0-9*/,\-A-Za-z?LW#]+$")


class ScheduleParseError(MindroomError, ValueError):
    """The request is not one of the accepted forms; the message says what was expected."""


@dataclass(frozen=True, slots=True)
class ScheduleSpec:
    """When a schedule runs and what it posts: `once` at an ISO time, a `cron` expression, or an `interval` in s."""

    kind: ScheduleKind
    expression: str
    message: str
    description: str


def _message(rest: str) -> str:
    text = rest.strip()
    for lead in (":", "-", "to "):
        if text.lower().startswith(lead):
            text = text[len(lead) :].strip()
    if not text:
        raise ScheduleParseError("say what to post, e.g. `!schedule in 10 minutes stand-up time`")
    return text


def _amount(raw: str | None) -> int:
    if raw is None or raw.lower() in ("a", "an", "one"):
        return 1
    return int(raw)


def _clock(hour_raw: str, minute_raw: str | None, ampm: str | None) -> tuple[int, int]:
    hour, minute = int(hour_raw), int(minute_raw or 0)
    if ampm:
        if not 1 <= hour <= 12:
            raise ScheduleParseError(f"{hour}{ampm} is not a time")
        hour = hour % 12 + (12 if ampm.lower() == "pm" else 0)
    if hour > 23 or minute > 59:
        raise ScheduleParseError(f"{hour_raw}:{minute_raw or '00'} is not a time")
    return hour, minute


def _split_cron(text: str) -> tuple[str, str] | None:
    body = text[5:].strip() if text.lower().startswith("cron ") else text
    parts = body.split(None, 5)
    if len(parts) < 5 or not all(_CRON_FIELD.match(p) for p in parts[:5]):
        return None
    expression = " ".join(parts[:5])
    from croniter import croniter  # on first use: it costs the daemon's start ~50 ms, and most never need it

    if not croniter.is_valid(expression):
        return None
    return expression, parts[5] if len(parts) > 5 else ""


def parse_schedule(text: str, now: datetime) -> ScheduleSpec:
    """Parse the arguments of `!schedule` relative to `now` (an aware datetime in the config's timezone)."""
    text = text.strip()
    if (match := _IN.match(text)) is not None:
        unit = _UNITS.get(match["unit"].lower())
        if unit is None:
            raise ScheduleParseError(f"unknown unit {match['unit']!r} (use seconds, minutes, hours, days or weeks)")
        seconds = _amount(match["amount"]) * unit
        if seconds <= 0:
            raise ScheduleParseError("the delay must be longer than zero")
        when = now + timedelta(seconds=seconds)
        return ScheduleSpec("once", when.isoformat(), _message(match["rest"]), f"in {match['amount']} {match['unit']}")
    if (match := _EVERY_AT.match(text)) is not None:
        hour, minute = _clock(match["hour"], match["minute"], match["ampm"])
        which = (match["which"] or "day").lower()
        dow = {"day": "*", "weekday": "1-5"}.get(which) or _WEEKDAYS[which]
        label = "day" if which == "day" else which
        return ScheduleSpec(
            "cron", f"{minute} {hour} * * {dow}", _message(match["rest"]), f"every {label} at {hour:02d}:{minute:02d}"
        )
    if (match := _AT.match(text)) is not None:
        hour, minute = _clock(match["hour"], match["minute"], match["ampm"])
        when = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
        if match["tomorrow"] or when <= now:
            when += timedelta(days=1)
        return ScheduleSpec("once", when.isoformat(), _message(match["rest"]), f"at {when:%Y-%m-%d %H:%M}")
    if (match := _EVERY_INTERVAL.match(text)) is not None and match["unit"].lower() in _UNITS:
        seconds = _amount(match["amount"]) * _UNITS[match["unit"].lower()]
        if seconds <= 0:
            raise ScheduleParseError("the interval must be longer than zero")
        label = f"every {match['amount']} {match['unit']}" if match["amount"] else f"every {match['unit']}"
        return ScheduleSpec("interval", str(seconds), _message(match["rest"]), label)
    if (cron := _split_cron(text)) is not None:
        expression, rest = cron
        return ScheduleSpec("cron", expression, _message(rest), f"cron {expression}")
    raise ScheduleParseError(
        "when? Try `in 10 minutes ...`, `at 9:00 ...`, `every day at 9:00 ...`, `every 2 hours ...`"
        " or a cron expression like `0 9 * * 1-5 ...`"
    )


def next_run_after(kind: str, expression: str, anchor: datetime, after: datetime) -> datetime | None:
    """The first run strictly after `after` (None when a one-off already ran); `anchor` is when it was created.

    `after` carries the timezone cron fields are read in. Runs missed while the daemon was down are
    not replayed: the next run is always after `after`, so a missed slot fires once, then the schedule
    resumes its rhythm.
    """
    if kind == "once":
        when = datetime.fromisoformat(expression)
        return when if when > after else None
    if kind == "interval":
        step = timedelta(seconds=int(expression))
        return anchor + max(1, (after - anchor) // step + 1) * step
    if kind == "cron":
        from croniter import croniter

        result: datetime = croniter(expression, after).get_next(datetime)
        return result
    msg = f"unknown schedule kind {kind!r}"
    raise ValueError(msg)
