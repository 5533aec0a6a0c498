"""The built-in `matrix_api` tool (MindRoom's name): a small, bounded part of the Matrix client API.

`send_event`, `get_state`, `put_state`, `redact`, `get_event` and `search`, each in a room the agent is in
(`matrix_access`), as the agent's account. Bounds: no event type or content key in the daemon's own
namespaces (`com.mindroom.*`, `io.mindroom.*`); `send_event` sends message-like events only (not state,
redactions or encrypted envelopes; it encrypts in an encrypted room itself); `put_state` never writes the
room's security and membership (`m.room.create`, power levels, encryption, join rules, history visibility,
guest access, members, ACLs, aliases, tombstones, invites): those stay the operator's, `allow_dangerous`
or not; `redact` removes only the agent's own events. `dry_run` says what a write would do. Writes are rate
limited per agent and room.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from mindroom.tool_system.builtin.matrix_access import RateWindow, agent_room, reserved_key
from mindroom.tool_system.builtin.parts import tool_payload
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = ["PROTECTED_STATE_TYPES", "matrix_api", "matrix_api_tools"]

PROTECTED_STATE_TYPES = frozenset(
    {
        "m.room.create",
        "m.room.power_levels",
        "m.room.encryption",
        "m.room.server_acl",
        "m.room.join_rules",
        "m.room.history_visibility",
        "m.room.guest_access",
        "m.room.member",
        "m.room.canonical_alias",
        "m.room.aliases",
        "m.room.tombstone",
        "m.room.third_party_invite",
    }
)
_NOT_SENT = frozenset({"m.room.redaction", "m.room.encrypted", *PROTECTED_STATE_TYPES})
_SEARCH_KEYS = ("content.body", "content.name", "content.topic")
_TOOL = "matrix_api"
_RATE = RateWindow(8, 60.0)
_WEIGHTS = {"send_event": 1, "put_state": 2, "redact": 2}


def _checked_type(event_type: str | None) -> str:
    if not event_type or not event_type.strip():
        raise ToolError("event_type is required")
    if event_type.startswith(("com.mindroom.", "io.mindroom.")):
        raise ToolError(f"{event_type} is in the daemon's own namespace")
    return event_type.strip()


def _checked_content(content: dict[str, Any] | None) -> dict[str, Any]:
    if not isinstance(content, dict):
        raise ToolError("content must be a JSON object")
    reserved = reserved_key(content)
    if reserved is not None:
        raise ToolError(f"content may not set {reserved!r}: that namespace is the daemon's own")
    return content


async def _redact(
    where: Any, event_id: str | None, reason: str | None, dry_run: bool, writing: Callable[[], None]
) -> dict[str, Any]:
    if not event_id:
        raise ToolError("event_id is required")
    event = await where.client.get_event(where.room_id, event_id)
    if event is None:
        raise ToolError(f"no event {event_id} visible in this room")
    if event.sender != where.client.user_id:
        raise ToolError("you may redact only your own events")
    if event.state_key is not None and event.type in PROTECTED_STATE_TYPES:
        raise ToolError(f"{event.type} is the operator's")
    if dry_run:
        return {"dry_run": True, "would_redact": event_id}
    writing()
    return {"event_id": await where.client.redact(where.room_id, event_id, reason), "redacted": event_id}


async def _search(
    where: Any, term: str | None, keys: list[str] | None, order_by: str, limit: int, since: str | None
) -> dict[str, Any]:
    if not term or not term.strip():
        raise ToolError("search_term is required")
    chosen = keys or list(_SEARCH_KEYS)
    if any(key not in _SEARCH_KEYS for key in chosen) or order_by not in ("rank", "recent"):
        raise ToolError(f"keys must be among {list(_SEARCH_KEYS)} and order_by rank or recent")
    body = {
        "search_categories": {
            "room_events": {
                "search_term": term,
                "keys": chosen,
                "order_by": order_by,
                "filter": {"rooms": [where.room_id], "limit": max(1, min(limit, 50))},
            }
        }
    }
    path = "/_matrix/client/v3/search" + (f"?next_batch={quote(since, safe='')}" if since else "")
    reply = await where.client.api("POST", path, body)
    if not reply.ok or not isinstance(reply.body, dict):
        raise ToolError(f"the homeserver refused the search ({reply.error})")
    events = reply.body.get("search_categories", {}).get("room_events", {})
    results = [
        {
            "event_id": r["result"].get("event_id"),
            "sender": r["result"].get("sender"),
            "body": str((r["result"].get("content") or {}).get("body", ""))[:200],
        }
        for r in events.get("results", [])
        if isinstance(r, dict) and isinstance(r.get("result"), dict)
    ]
    return {"count": events.get("count"), "results": results, "next_batch": events.get("next_batch")}


async def matrix_api(
    action: str = "send_event",
    room_id: str | None = None,
    event_type: str | None = None,
    content: dict[str, Any] | None = None,
    state_key: str | None = None,
    event_id: str | None = None,
    reason: str | None = None,
    search_term: str | None = None,
    keys: list[str] | None = None,
    order_by: str = "rank",
    limit: int = 10,
    next_batch: str | None = None,
    filter: dict[str, Any] | None = None,
    event_context: dict[str, Any] | None = None,
    dry_run: bool = False,
    allow_dangerous: bool = False,
) -> str:
    """Use a small part of the Matrix API in a room you are in (the current room by default).

    Actions: send_event (a message-like event with event_type and content); get_state (one state event by
    event_type and state_key); put_state (write one state event; the room's security and membership are
    never written); redact (one of your own events by event_id); get_event (one event by event_id); search
    (full-text search of this room with search_term, optional keys, order_by, limit, next_batch).
    `com.mindroom.*` and `io.mindroom.*` are reserved. dry_run works for send_event, put_state and redact.

    Args:
        action: send_event, get_state, put_state, redact, get_event, or search.
        room_id: Room ID or configured room name.
        event_type: The event type (send_event, get_state, put_state).
        content: The event content (send_event, put_state).
        state_key: The state key (get_state, put_state; default "").
        event_id: The event (redact, get_event).
        reason: Why (redact).
        search_term: What to search for (search).
        keys: Fields to search: content.body, content.name, content.topic.
        order_by: rank or recent (search).
        limit: Results, 1-50 (search).
        next_batch: The next page's token (search).
        filter: Not offered here (the room is the filter).
        event_context: Not offered here.
        dry_run: Say what a write would do, without doing it.
        allow_dangerous: Not offered here (the room's security settings are the operator's).
    """
    act = str(action).strip().lower()
    try:
        if filter or event_context or allow_dangerous:
            raise ToolError("filter, event_context and allow_dangerous are not offered here")
        where = agent_room(room_id)

        def writing() -> None:
            if not dry_run:
                _RATE.take(where, _WEIGHTS[act])

        if act == "send_event":
            kind, body = _checked_type(event_type), _checked_content(content)
            if kind in _NOT_SENT:
                raise ToolError(f"send_event does not send {kind}")
            writing()
            sent = None if dry_run else await where.desk.send_event(where.caller.agent_name, where.room_id, kind, body)
            fields: dict[str, Any] = {"event_type": kind, "event_id": sent, "dry_run": dry_run}
        elif act in ("get_state", "put_state"):
            kind, key = _checked_type(event_type), state_key or ""
            if act == "get_state":
                fields = {
                    "event_type": kind,
                    "state_key": key,
                    "content": await where.client.get_room_state(where.room_id, kind, key),
                }
            else:
                body = _checked_content(content)
                if kind in PROTECTED_STATE_TYPES:
                    raise ToolError(f"{kind} is the operator's: the room's security and membership are not written")
                writing()
                done = dry_run or await where.client.put_room_state(where.room_id, kind, key, body)
                if not done:
                    raise ToolError("the homeserver refused the state event")
                fields = {"event_type": kind, "state_key": key, "dry_run": dry_run}
        elif act == "redact":
            fields = await _redact(where, event_id, reason, dry_run, writing)
        elif act == "get_event":
            event = await where.client.get_event(where.room_id, event_id or "")
            if event is None:
                raise ToolError(f"no event {event_id} visible in this room")
            fields = {
                "event": {
                    "event_id": event.event_id,
                    "sender": event.sender,
                    "type": event.type,
                    "content": event.content,
                    "origin_server_ts": event.origin_server_ts,
                }
            }
        elif act == "search":
            fields = await _search(where, search_term, keys, order_by, int(limit), next_batch)
        else:
            raise ToolError("Unsupported action: use send_event, get_state, put_state, redact, get_event or search")
    except ToolError as error:
        return tool_payload(_TOOL, "error", action=act, message=str(error))
    return tool_payload(_TOOL, "ok", action=act, room_id=where.room_id, **fields)


def matrix_api_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `matrix_api` group: `matrix_api(action, ...)`."""
    return (ToolSpec(name="matrix_api", function=matrix_api),)
