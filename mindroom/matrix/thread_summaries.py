"""Thread summaries as MindRoom represents them: an `m.notice` in the thread whose body is the summary.

The notice carries `io.mindroom.thread_summary`: `{"version": 1, "summary", "message_count", "generated_at",
"model"}` (and `pinned` when a person or tool pinned it, so automatic summaries leave the thread alone).
Element shows the notice as the thread's latest line; MindRoom's clients read the key. Only notices sent by
the daemon's own accounts count as summaries. The notice is sent like any message of the account: encrypted
in an encrypted room, never in plaintext there.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mindroom.matrix.events import MatrixEvent
from mindroom.matrix.room_account import RoomAccount

__all__ = [
    "SUMMARY_KEY",
    "ThreadSummary",
    "is_summary",
    "latest_summary",
    "send_summary",
]

SUMMARY_KEY = "io.mindroom.thread_summary"


@dataclass(frozen=True, slots=True)
class ThreadSummary:
    """One summary notice of a thread."""

    text: str
    message_count: int
    generated_at: str
    model: str
    pinned: bool = False
    event_id: str = ""
    sender: str = ""

    def metadata(self) -> dict[str, Any]:
        """The notice's `io.mindroom.thread_summary` content."""
        data: dict[str, Any] = {
            "version": 1,
            "summary": self.text,
            "message_count": self.message_count,
            "generated_at": self.generated_at,
            "model": self.model,
        }
        if self.pinned:
            data["pinned"] = True
        return data


def is_summary(event: MatrixEvent, trusted: Collection[str]) -> bool:
    """Whether the message is a summary notice of one of the daemon's accounts."""
    return event.sender in trusted and isinstance(event.content.get(SUMMARY_KEY), Mapping)


def latest_summary(events: Sequence[MatrixEvent], trusted: Collection[str]) -> ThreadSummary | None:
    """The newest summary among a thread's messages, None when it has none."""
    for event in reversed(events):
        if not is_summary(event, trusted):
            continue
        data = event.content[SUMMARY_KEY]
        text, count = data.get("summary"), data.get("message_count")
        if isinstance(text, str) and type(count) is int:
            return ThreadSummary(
                text,
                count,
                str(data.get("generated_at") or ""),
                str(data.get("model") or ""),
                data.get("pinned") is True,
                event.event_id,
                event.sender,
            )
    return None


async def send_summary(
    client: RoomAccount,
    room_id: str,
    thread_root: str,
    text: str,
    message_count: int,
    model: str,
    *,
    latest_event_id: str | None = None,
    pinned: bool = False,
) -> ThreadSummary:
    """Send a summary notice into the thread; the summary sent."""
    summary = ThreadSummary(text, message_count, datetime.now(UTC).isoformat(), model, pinned)
    event_id = await client.send_message(
        room_id,
        text,
        thread_root=thread_root,
        reply_to=latest_event_id or thread_root,
        extra_content={SUMMARY_KEY: summary.metadata()},
        msgtype="m.notice",
    )
    return ThreadSummary(text, message_count, summary.generated_at, model, pinned, event_id)
