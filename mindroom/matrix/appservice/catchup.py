"""Catching up after the homeserver came back: the room events no transaction brought, each handed out once.

A homeserver that stops can take events with it that it had accepted but not yet sent the daemon: Synapse
moves its appservice position past an event before the transaction that carries it exists, and a transaction
it was sending when it stopped waits, after its restart, until the service next fails. So when the homeserver
is back, the daemon reads the newest events of each room its bots are in (as one of those bots) and hands out
those no transaction brought: newer than the last transaction before the outage (less `_MARGIN_MS` for the two
clocks), after that bot's own join, and not seen before.

`SeenEvents` remembers the ids of the room events handed out lately, whichever way they came (a transaction, a
retried or renumbered one, or a catch-up), so none is handed out twice. The ingress deduplicates what it claims
as well; this keeps the bots from even seeing an event twice.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from mindroom.matrix.appservice.link import HomeserverLink

__all__ = ["SeenEvents", "missed_events"]

_REMEMBERED_EVENTS = 8192
_ROOM_WINDOW = 50
"""Events read per room: a restart loses the last few moments of a room, not a backlog."""
_MARGIN_MS = 60_000
_MEMBER = "m.room.member"


class SeenEvents:
    """The ids of the room events handed out lately, oldest forgotten first."""

    def __init__(self, limit: int = _REMEMBERED_EVENTS) -> None:
        self._ids: OrderedDict[str, None] = OrderedDict()
        self._limit = limit

    def __contains__(self, event_id: object) -> bool:
        return event_id in self._ids

    def fresh(self, events: list[Any]) -> list[Any]:
        """The events of `events` not seen before, in order (now remembered as seen); those without an id pass."""
        kept = []
        for event in events:
            event_id = event.get("event_id") if isinstance(event, dict) else None
            if isinstance(event_id, str):
                if event_id in self._ids:
                    continue
                self._ids[event_id] = None
            kept.append(event)
        while len(self._ids) > self._limit:
            self._ids.popitem(last=False)
        return kept


def _missed_in_room(latest: list[dict[str, Any]], reader: str, seen: SeenEvents, since_ms: int) -> list[Any]:
    """From a room's newest events (newest first), those not seen, newer than `since_ms` and after the reader's
    join; oldest first."""
    missed = []
    for event in latest:
        timestamp = event.get("origin_server_ts")
        if not isinstance(timestamp, int) or timestamp < since_ms:
            break
        if event.get("type") == _MEMBER and event.get("state_key") == reader:
            break  # what came before the bot's join was not meant for it
        if event.get("event_id") not in seen:
            missed.append(event)
    missed.reverse()
    return missed


async def missed_events(
    link: HomeserverLink, readers: Mapping[str, str], seen: SeenEvents, last_heard_ms: int
) -> list[Any]:
    """The events of the rooms in `readers` (room id → a bot in it, which reads it) that no transaction brought
    since `last_heard_ms`, each room's oldest first. Not remembered as seen: the caller hands them out."""
    since_ms = last_heard_ms - _MARGIN_MS
    missed: list[Any] = []
    for room_id, reader in readers.items():
        latest = await link.latest_events(room_id, reader, _ROOM_WINDOW)
        for event in _missed_in_room(latest, reader, seen, since_ms):
            event.setdefault("room_id", room_id)
            missed.append(event)
    return missed
