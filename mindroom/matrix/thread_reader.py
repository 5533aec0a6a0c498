"""A thread's messages read from the homeserver: its root, then its replies in order, decrypted where they can be.

The replies come from the thread relations endpoint, page by page; an encrypted one is fetched again through
the account's `get_event`, which decrypts it with the account's keys (one that cannot be read stays encrypted
and is left out of the messages). Edits replace the text of the message they edit.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

from mindroom.matrix.events import MatrixEvent, event_from_raw
from mindroom.matrix.transport import JsonReply, quote_path

__all__ = ["MAX_THREAD_EVENTS", "ThreadReadingClient", "room_thread_roots", "thread_messages"]

MAX_THREAD_EVENTS = 1000
_PAGE = 100


class ThreadReadingClient(Protocol):
    """What reading a thread needs of an account."""

    async def get_event(self, room_id: str, event_id: str) -> MatrixEvent | None:
        """One event, decrypted when the account can."""

    async def api(self, method: str, path: str, body: Any = None) -> JsonReply:
        """One client-API request as this account."""


async def _replies(client: ThreadReadingClient, room_id: str, root: str, limit: int) -> list[dict[str, Any]]:
    base = f"/_matrix/client/v1/rooms/{quote_path(room_id)}/relations/{quote_path(root)}/m.thread?dir=f&limit={_PAGE}"
    raw: list[dict[str, Any]] = []
    token: str | None = None
    while len(raw) < limit:
        reply = await client.api("GET", base + (f"&from={quote_path(token)}" if token else ""))
        body = reply.body if reply.ok and isinstance(reply.body, dict) else {}
        raw.extend(event for event in body.get("chunk") or [] if isinstance(event, dict))
        token = body.get("next_batch") if isinstance(body.get("next_batch"), str) else None
        if token is None:
            break
    return raw[:limit]


async def thread_messages(
    client: ThreadReadingClient, room_id: str, root: str, limit: int = MAX_THREAD_EVENTS
) -> list[MatrixEvent]:
    """The thread's messages (root first, oldest to newest), edits applied, unreadable ones left out."""
    first = await client.get_event(room_id, root)
    events = [first] if first is not None else []
    for raw in await _replies(client, room_id, root, limit):
        event = event_from_raw(room_id, raw)
        if event is not None and event.type == "m.room.encrypted":
            event = await client.get_event(room_id, event.event_id)
        if event is not None:
            events.append(event)
    events.sort(key=lambda event: (event.event_id != root, event.origin_server_ts))
    by_id: dict[str, MatrixEvent] = {}
    for event in events:
        if event.type != "m.room.message":
            continue
        if event.relation_type == "m.replace" and event.related_event_id in by_id:
            new = event.content.get("m.new_content")
            if isinstance(new, dict):
                edited = by_id[event.related_event_id]
                by_id[edited.event_id] = replace(edited, content={**edited.content, **new})
            continue
        by_id[event.event_id] = event
    return list(by_id.values())


async def room_thread_roots(client: ThreadReadingClient, room_id: str, limit: int) -> list[str]:
    """The room's latest thread roots (at most `limit`), newest first: the homeserver's thread list, page by page."""
    base = f"/_matrix/client/v1/rooms/{quote_path(room_id)}/threads?limit={min(limit, _PAGE)}"
    roots: list[str] = []
    token: str | None = None
    while len(roots) < limit:
        reply = await client.api("GET", base + (f"&from={quote_path(token)}" if token else ""))
        body = reply.body if reply.ok and isinstance(reply.body, dict) else {}
        chunk = body.get("chunk") or []
        roots += [str(event["event_id"]) for event in chunk if isinstance(event, dict) and "event_id" in event]
        token = body.get("next_batch") if isinstance(body.get("next_batch"), str) else None
        if token is None:
            break
    return roots[:limit]
