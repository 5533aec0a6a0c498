"""Routing: who answers a message. Pure: envelope facts and config in, a decision out."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["RouteDecision", "RouteKind", "decide_route", "mentioned_agents"]

RouteKind = Literal["mentioned", "single", "router"]

_PILL = re.compile(r"https://matrix\.to/#/(@[^\"'<>\s/?]+)")
_PILL_LINK = re.compile(r"<a\s[^>]*href=[\"']https://matrix\.to/#/(@[^\"'<>\s/?]+)[^>]*>(.*?)</a>", re.DOTALL)
_TAG = re.compile(r"<[^>]+>")
_NAME_CHARS = "_-"
_NOT_IN_BODY = 10_000_000  # sorts after every position a real body can have


@dataclass(frozen=True, slots=True)
class RouteDecision:
    """`mentioned`: these agents answer, in order; `single`: the room's only agent; `router`: the router picks one."""

    kind: RouteKind
    agents: tuple[str, ...]


def _pill_positions(formatted: str, body: str) -> dict[str, int]:
    """Each pilled user's position, read in `body` (where its link text appears), so that pills and `@names`
    share one ruler; a pill whose text is not in the body keeps its order after those that are."""
    positions: dict[str, int] = {}
    for index, match in enumerate(_PILL_LINK.finditer(formatted)):
        text = _TAG.sub("", match.group(2)).strip()
        found = body.find(text) if text else -1
        positions.setdefault(match.group(1), found if found >= 0 else _NOT_IN_BODY + index)
    for index, match in enumerate(_PILL.finditer(formatted)):  # pills without a readable link
        positions.setdefault(match.group(1), _NOT_IN_BODY + 1000 + index)
    return positions


def _starts_word(text: str, start: int) -> bool:
    return start == 0 or not (text[start - 1].isalnum() or text[start - 1] in _NAME_CHARS + ".@")


def _ends_word(text: str, end: int) -> bool:
    return end == len(text) or not (text[end].isalnum() or text[end] in _NAME_CHARS)


def mentioned_agents(
    content: Mapping[str, Any], agent_user_ids: Mapping[str, str], display_names: Mapping[str, str]
) -> tuple[str, ...]:
    """Agents a message mentions, in the order they appear: `m.mentions`, pills, or `@name` in the text.

    `@name` counts only as a word of its own (not `ops@helper`, not `@helpers`).
    """
    by_user = {user_id: name for name, user_id in agent_user_ids.items()}
    found: dict[str, int] = {}
    body = content.get("body") if isinstance(content.get("body"), str) else ""
    formatted = content.get("formatted_body") if isinstance(content.get("formatted_body"), str) else ""
    for user_id, position in _pill_positions(formatted or "", body or "").items():
        name = by_user.get(user_id)
        if name is not None:
            found[name] = min(position, found.get(name, position))
    mentions = content.get("m.mentions")
    user_ids = mentions.get("user_ids") if isinstance(mentions, dict) else None
    if isinstance(user_ids, list):
        for user_id in user_ids:
            name = by_user.get(user_id) if isinstance(user_id, str) else None
            if name is not None and name not in found:
                position = (body or "").find(user_id)
                found[name] = position if position >= 0 else _NOT_IN_BODY + len(found)
    lowered = (body or "").lower()
    for name, user_id in agent_user_ids.items():
        if name in found:
            continue
        candidates = [user_id.lower(), f"@{name.lower()}"]
        display = display_names.get(name)
        if display:
            candidates.append(f"@{display.lower()}")
        for candidate in candidates:
            # Plain substring search (as a regex of the escaped name would find, left to right without overlap):
            # every bot reads every message for all of the room's agents, so this runs agents² times an event.
            start = lowered.find(candidate)
            while start >= 0:
                end = start + len(candidate)
                if _starts_word(lowered, start) and _ends_word(lowered, end):
                    found[name] = start
                    break
                start = lowered.find(candidate, end)
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
