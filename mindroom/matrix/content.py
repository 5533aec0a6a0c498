"""Pure builders for the content of messages, threaded replies, edits and reactions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["edit_content", "message_content", "reaction_content", "thread_relation"]

_HTML_FORMAT = "org.matrix.custom.html"


def thread_relation(thread_root: str, reply_to: str | None = None) -> dict[str, Any]:
    """An `m.thread` relation; `m.in_reply_to` is the fallback for clients without thread support."""
    return {
        "rel_type": "m.thread",
        "event_id": thread_root,
        "is_falling_back": True,
        "m.in_reply_to": {"event_id": reply_to or thread_root},
    }


def _text(body: str, msgtype: str, formatted_body: str | None) -> dict[str, Any]:
    content: dict[str, Any] = {"msgtype": msgtype, "body": body}
    if formatted_body is not None:
        content["format"] = _HTML_FORMAT
        content["formatted_body"] = formatted_body
    return content


def message_content(
    body: str,
    *,
    msgtype: str = "m.text",
    thread_root: str | None = None,
    reply_to: str | None = None,
    mentions: Sequence[str] | None = None,
    formatted_body: str | None = None,
    extra_content: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The content of a new message; `extra_content` keys are merged in last."""
    content = _text(body, msgtype, formatted_body)
    if mentions is not None:
        content["m.mentions"] = {"user_ids": list(mentions)}
    if thread_root is not None:
        content["m.relates_to"] = thread_relation(thread_root, reply_to)
    elif reply_to is not None:
        content["m.relates_to"] = {"m.in_reply_to": {"event_id": reply_to}}
    content.update(extra_content or {})
    return content


def edit_content(
    event_id: str,
    new_body: str,
    *,
    msgtype: str = "m.text",
    thread_root: str | None = None,
    mentions: Sequence[str] | None = None,
    formatted_body: str | None = None,
    extra_content: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The content of an `m.replace` edit; the fallback body is prefixed with `* `.

    The thread relation goes into `m.new_content` so clients that apply the new content wholesale keep
    the message in its thread; the edit event itself relates to the original with `m.replace`.
    """
    new_content = _text(new_body, msgtype, formatted_body)
    if mentions is not None:
        new_content["m.mentions"] = {"user_ids": list(mentions)}
    new_content.update(extra_content or {})
    if thread_root is not None:
        new_content["m.relates_to"] = thread_relation(thread_root)
    fallback = _text(f"* {new_body}", msgtype, None if formatted_body is None else f"* {formatted_body}")
    fallback.update(extra_content or {})
    fallback["m.new_content"] = new_content
    fallback["m.relates_to"] = {"rel_type": "m.replace", "event_id": event_id}
    return fallback


def reaction_content(event_id: str, key: str) -> dict[str, Any]:
    """The content of an `m.reaction` annotating `event_id` with `key`."""
    return {"m.relates_to": {"rel_type": "m.annotation", "event_id": event_id, "key": key}}
