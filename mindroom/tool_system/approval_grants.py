"""Timed approval in MindRoom's terms: what a card's auto-approval covers, and for how long it may be given.

A card asked by the `tool_approval` rules may offer its requester to approve the tool for a while
(`AUTO_APPROVE_OPTIONS`, in seconds). The grant then covers that call, the requester's other cards
waiting for the same tool in the same thread, and later calls of it with any arguments, for the same
agent, until it expires or is stopped from its card. It is bound to the operation (`grant_operation`):
the tool's function name, fenced by the whole config's digest (`approval_binding`), so any config
change ends every grant. Every MCP tool is a function of its own name here (`<prefix>_<remote name>`),
so the function name alone names the remote tool as well.

`!auto_approve` opens a window instead: every call that would ask that person in that conversation
runs without a card, whatever the tool, for 1 minute to 24 hours (`AUTO_APPROVE_MAX_S`).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

__all__ = [
    "AUTO_APPROVE_MAX_S",
    "AUTO_APPROVE_MIN_S",
    "AUTO_APPROVE_OPTIONS",
    "approval_binding",
    "grant_operation",
    "parse_auto_approve_duration",
    "valid_auto_approve_seconds",
]

AUTO_APPROVE_OPTIONS = (300, 600, 1800)
"""The durations a card offers, in seconds: 5, 10 and 30 minutes."""
AUTO_APPROVE_MIN_S = 60
AUTO_APPROVE_MAX_S = 24 * 3600
"""The shortest and longest `!auto_approve` window."""
# A bare number counts minutes; five digits already exceed the longest window.
_DURATION = re.compile(r"^(\d{1,5})\s*(m|min|mins|minutes?|h|hr|hrs|hours?)?$")


def valid_auto_approve_seconds(value: object) -> bool:
    """Only an `int` that is one of the offered durations (not a bool, not a float)."""
    return type(value) is int and value in AUTO_APPROVE_OPTIONS


def approval_binding(config: Any) -> str:
    """The digest of the whole config (a pydantic model): a grant holds only under the config it was given in."""
    return hashlib.sha256(config.model_dump_json().encode()).hexdigest()


def grant_operation(config: Any, tool_name: str) -> str:
    """What a grant for calls of `tool_name` is bound to under `config` (opaque: compared, never shown)."""
    return approval_binding(config) + ":" + json.dumps([tool_name], separators=(",", ":"))


def parse_auto_approve_duration(text: str) -> int | None:
    """Seconds of an `!auto_approve` duration: `30` or `30m` (minutes), `2h` (hours); None when unreadable
    or outside 1 minute to 24 hours."""
    match = _DURATION.match(text.strip().lower())
    if match is None:
        return None
    amount = int(match.group(1))
    seconds = amount * 3600 if (match.group(2) or "").startswith("h") else amount * 60
    return seconds if AUTO_APPROVE_MIN_S <= seconds <= AUTO_APPROVE_MAX_S else None
