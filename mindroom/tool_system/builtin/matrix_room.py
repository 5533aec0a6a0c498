"""The built-in `matrix_room` tool (MindRoom's name): what a room the agent is in looks like.

`room-info` (name, topic, encryption, and the turn's thread and requester), `members` (display names and power
levels), `agents` (the agents and teams of the room, to address with `matrix_message(recipient=...)`),
`threads` (thread roots, newest first, paged with `page_token`) and `state` (one state event, or a summary of
all without member events). Only rooms the agent is in; reading only. Thread summaries are not offered here.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import quote, urlencode

from mindroom.tool_system.builtin.matrix_access import AgentRoom, RateWindow, agent_room
from mindroom.tool_system.builtin.parts import tool_payload
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = ["matrix_room", "matrix_room_tools"]

_TOOL = "matrix_room"
_RATE = RateWindow(30, 30.0)
_ROOMS = "/_matrix/client/v3/rooms/"
_PREVIEW = 200


async def _get(where: AgentRoom, path: str) -> Any:
    reply = await where.client.api("GET", path)
    if not reply.ok:
        raise ToolError(f"the homeserver refused the request ({reply.error or reply.status})")
    return reply.body


async def _info(where: AgentRoom) -> dict[str, Any]:
    name = await where.client.get_room_state(where.room_id, "m.room.name", "") or {}
    topic = await where.client.get_room_state(where.room_id, "m.room.topic", "") or {}
    encryption = await where.client.get_room_state(where.room_id, "m.room.encryption", "")
    caller = where.caller
    return {
        "name": name.get("name"),
        "topic": topic.get("topic"),
        "encrypted": bool(encryption),
        "thread_id": caller.thread_id if where.is_current else None,
        "requester_id": caller.requester_id,
        "agent_name": caller.agent_name,
    }


async def _members(where: AgentRoom) -> list[dict[str, Any]]:
    joined = await _get(where, f"{_ROOMS}{quote(where.room_id, safe='')}/joined_members")
    power = await where.client.get_room_state(where.room_id, "m.room.power_levels", "") or {}
    listed = power.get("users")
    users: dict[str, Any] = listed if isinstance(listed, dict) else {}
    default = power.get("users_default", 0)
    members = joined.get("joined", {}) if isinstance(joined, dict) else {}
    return [
        {"user_id": user, "display_name": (info or {}).get("display_name"), "power_level": users.get(user, default)}
        for user, info in sorted(members.items())
    ]


def _agents(where: AgentRoom) -> list[dict[str, Any]]:
    config = where.caller.config
    responders = config.responders() if config is not None else {}
    ids = where.desk.user_ids()
    rows = []
    for name in where.desk.agents_in_room(where.room_id):
        entity = responders.get(name)
        rows.append(
            {
                "name": name,
                "matrix_user_id": ids.get(name),
                "description": getattr(entity, "role", "") or "",
                "display_name": getattr(entity, "display_name", name),
            }
        )
    return rows


async def _threads(where: AgentRoom, limit: int, page_token: str | None) -> dict[str, Any]:
    query = {"limit": str(limit), **({"from": page_token} if page_token else {})}
    body = await _get(where, f"/_matrix/client/v1/rooms/{quote(where.room_id, safe='')}/threads?{urlencode(query)}")
    threads = []
    for root in body.get("chunk", []) if isinstance(body, dict) else []:
        if root.get("type") == "m.room.encrypted":
            opened = await where.client.get_event(where.room_id, str(root.get("event_id")))
            content = opened.content if opened is not None else {}
        else:
            content = root.get("content") or {}
        summary = ((root.get("unsigned") or {}).get("m.relations") or {}).get("m.thread") or {}
        latest = summary.get("latest_event") or {}
        threads.append(
            {
                "thread_id": root.get("event_id"),
                "sender": root.get("sender"),
                "timestamp": root.get("origin_server_ts"),
                "preview": str(content.get("body", ""))[:_PREVIEW],
                "reply_count": summary.get("count"),
                "latest_activity": latest.get("origin_server_ts"),
            }
        )
    return {"threads": threads, "next_token": body.get("next_batch") if isinstance(body, dict) else None}


async def _state(where: AgentRoom, event_type: str | None, state_key: str | None) -> dict[str, Any]:
    if event_type:
        content = await where.client.get_room_state(where.room_id, event_type, state_key or "")
        if content is None:
            raise ToolError(f"no {event_type} state event with state key {state_key or ''!r}")
        return {"event_type": event_type, "state_key": state_key or "", "content": content}
    events = await _get(where, f"{_ROOMS}{quote(where.room_id, safe='')}/state")
    kept = [
        {"type": e.get("type"), "state_key": e.get("state_key"), "content": e.get("content")}
        for e in events
        if isinstance(e, dict) and e.get("type") != "m.room.member"
    ]
    return {"events": kept}


async def matrix_room(
    action: Literal["room-info", "members", "agents", "threads", "state"] = "room-info",
    room_id: str | None = None,
    limit: int | None = None,
    event_type: str | None = None,
    state_key: str | None = None,
    page_token: str | None = None,
    include_summaries: bool = False,
) -> str:
    """Inspect a Matrix room you are in: its metadata, members, agents, threads, or state.

    Actions: room-info (name, topic, encryption, current thread_id, requester_id, agent_name); members (joined
    members with display names and power levels); agents (agents and teams to address with
    matrix_message(recipient=...)); threads (thread roots with a preview, newest first; page with page_token
    from next_token); state (one state event by event_type and state_key, or a summary of all).

    Args:
        action: room-info, members, agents, threads, or state.
        room_id: Room ID or configured room name; the current room by default.
        limit: For threads: how many, 1-50 (default 20).
        event_type: For state: the event type to read.
        state_key: For state: the state key (default "").
        page_token: For threads: next_token from the previous page.
        include_summaries: Not offered here.
    """
    act = str(action).strip().lower()
    try:
        where = agent_room(room_id)
        _RATE.take(where)
        if act == "room-info":
            fields: dict[str, Any] = await _info(where)
        elif act == "members":
            fields = {"members": await _members(where)}
        elif act == "agents":
            fields = {"agents": _agents(where)}
        elif act == "threads":
            fields = await _threads(where, max(1, min(int(limit or 20), 50)), page_token)
        elif act == "state":
            fields = await _state(where, event_type, state_key)
        else:
            raise ToolError("Unsupported action. Use room-info, members, agents, threads, or state.")
    except ToolError as error:
        return tool_payload(_TOOL, "error", action=act, message=str(error))
    note = {"note": "include_summaries is not offered here"} if include_summaries else {}
    return tool_payload(_TOOL, "ok", action=act, room_id=where.room_id, **fields, **note)


def matrix_room_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `matrix_room` group: `matrix_room(action, ...)`."""
    return (ToolSpec(name="matrix_room", function=matrix_room),)
