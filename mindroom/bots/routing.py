"""Routing: who answers a message. Pure: envelope facts and config in, a decision out."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["RouteDecision", "decide_route", "mentioned_agents"]

_PILL = re.compile(r"https://matrix\.to/#/(@[^\"'<>\s/?]+)")


@dataclass(frozen=True, slots=True)
class RouteDecision:
    """`mentioned`: these agents answer, in order; `single`: the room's only agent; `router`: the router picks one."""

    kind: str
    agents: tuple[str, ...]


def mentioned_agents(
    content: Mapping[str, Any], agent_user_ids: Mapping[str, str], display_names: Mapping[str, str]
) -> tuple[str, ...]:
    """Agents a message mentions, in the order they appear: `m.mentions`, pills, or `@name` in the text."""
    by_user = {user_id: name for name, user_id in agent_user_ids.items()}
    found: dict[str, int] = {}
    body = content.get("body") if isinstance(content.get("body"), str) else ""
    formatted = content.get("formatted_body") if isinstance(content.get("formatted_body"), str) else ""
    for match in _PILL.finditer(formatted or ""):
        name = by_user.get(match.group(1))
        if name is not None:
            found.setdefault(name, match.start())
    mentions = content.get("m.mentions")
    user_ids = mentions.get("user_ids") if isinstance(mentions, dict) else None
    if isinstance(user_ids, list):
        for user_id in user_ids:
            name = by_user.get(user_id) if isinstance(user_id, str) else None
            if name is not None and name not in found:
                position = (body or "").find(user_id)
                found[name] = position if position >= 0 else 10_000 + len(found)
    lowered = (body or "").lower()
    for name, user_id in agent_user_ids.items():
        if name in found:
            continue
        candidates = [user_id.lower(), f"@{name.lower()}"]
        display = display_names.get(name)
        if display:
            candidates.append(f"@{display.lower()}")
        for candidate in candidates:
            for match in re.finditer(re.escape(candidate), lowered):
                end = match.end()
                if end == len(lowered) or not (lowered[end].isalnum() or lowered[end] in "_-"):
                    found[name] = match.start()
                    break
            if name in found:
                break
    return tuple(sorted(found, key=lambda n: found[n]))


def decide_route(mentioned: Sequence[str], agents_in_room: Sequence[str]) -> RouteDecision | None:
    """Mentioned agents answer; else the room's only agent; else the router picks; None when no agent is here."""
    present = [name for name in mentioned if name in agents_in_room]
    if present:
        return RouteDecision("mentioned", tuple(present))
    if len(agents_in_room) == 1:
        return RouteDecision("single", (agents_in_room[0],))
    if not agents_in_room:
        return None
    return RouteDecision("router", tuple(agents_in_room))
