"""Ingress: from a raw Matrix message event to a `MessageEnvelope`, or a reason to drop it.

Pure functions over plain data: what the event says, who the bots are, and the config.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mindroom.constants import (
    HOOK_DISPATCH_KEY,
    HOOK_ORIGIN_EVENT_KEY,
    HOOK_SOURCE_KEY,
    ORIGINAL_SENDER_KEY,
    SCHEDULE_ID_KEY,
    SYNTHETIC_DEPTH_KEY,
    VOICE_PREFIX,
)
from mindroom.hooks.context import MessageEnvelope

__all__ = ["MAX_BODY_CHARS", "InboundMessage", "IngressDrop", "classify_message"]

MAX_BODY_CHARS = 64_000
_SOURCE_KINDS = {"m.audio": "voice", "m.image": "image", "m.file": "file", "m.video": "video"}


@dataclass(frozen=True, slots=True)
class IngressDrop:
    """Why an event goes no further (logged at debug, or info for authorization)."""

    reason: str


@dataclass(frozen=True, slots=True)
class InboundMessage:
    """An accepted message: its envelope plus facts the pipeline needs that hooks do not see."""

    envelope: MessageEnvelope
    from_bot: bool
    synthetic_depth: int
    hook_dispatch: bool
    hook_origin_event: str | None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def classify_message(
    *,
    entity: str,
    event_id: str,
    room_id: str,
    sender: str,
    content: Mapping[str, Any],
    thread_root: str | None,
    is_edit: bool,
    bot_user_ids: Mapping[str, str],
    mentioned: tuple[str, ...],
) -> InboundMessage | IngressDrop:
    """Accept or drop one message for `entity` (authorization and dedup are the caller's next steps)."""
    own_user_id = bot_user_ids.get(entity)
    from_bot = sender in bot_user_ids.values()
    depth = _int(content.get(SYNTHETIC_DEPTH_KEY)) if from_bot else 0
    hook_dispatch = from_bot and content.get(HOOK_DISPATCH_KEY) is True
    if sender == own_user_id and not (hook_dispatch and depth == 1):
        return IngressDrop("own message")
    if is_edit:
        return IngressDrop("edit")
    body = content.get("body")
    if not isinstance(body, str) or not body.strip():
        return IngressDrop("no text body")
    if len(body) > MAX_BODY_CHARS:
        body = body[:MAX_BODY_CHARS]
    if from_bot:
        if depth >= 2:
            return IngressDrop("deep synthetic hop")
        if not (hook_dispatch and depth == 1) and entity not in mentioned:
            return IngressDrop("other bot, not mentioning this entity")
    original = content.get(ORIGINAL_SENDER_KEY)
    requester = original if from_bot and isinstance(original, str) and original.startswith("@") else sender
    msgtype = content.get("msgtype")
    if depth >= 1:
        source_kind = "hook_dispatch" if hook_dispatch else "hook"
    elif from_bot and isinstance(content.get(SCHEDULE_ID_KEY), str):
        source_kind = "scheduled"
    else:
        source_kind = _SOURCE_KINDS.get(msgtype, "message") if isinstance(msgtype, str) else "message"
        if source_kind == "message" and body.startswith(VOICE_PREFIX):
            source_kind = "voice"
    hook_source = content.get(HOOK_SOURCE_KEY) if isinstance(content.get(HOOK_SOURCE_KEY), str) else None
    origin_event = content.get(HOOK_ORIGIN_EVENT_KEY) if isinstance(content.get(HOOK_ORIGIN_EVENT_KEY), str) else None
    envelope = MessageEnvelope(
        source_event_id=event_id,
        room_id=room_id,
        thread_id=thread_root,
        resolved_thread_id=thread_root or event_id,
        requester_id=requester,
        sender_id=sender,
        body=body,
        attachment_ids=(),
        mentioned_agents=mentioned,
        agent_name=entity,
        source_kind=source_kind,
        hook_source=hook_source,
        message_received_depth=depth,
    )
    return InboundMessage(envelope, from_bot, depth, hook_dispatch, origin_event)
