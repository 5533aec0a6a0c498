"""`RecentMessages`: the last messages of each conversation the bots saw, for hooks' snapshot reads.

`ctx.get_latest_agent_message_snapshot(room, sender, thread_id=...)` reads this, not the homeserver:
the newest visible message of a sender among the last 50 of one conversation (`thread_id=None` is the
room's main timeline). Edits update the message they replace.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Any

from mindroom.hooks.capabilities import AgentMessageSnapshot
from mindroom.matrix import MatrixEvent

__all__ = ["PER_CONVERSATION", "RecentMessages"]

PER_CONVERSATION = 50
_MAX_CONVERSATIONS = 2000

_Entry = tuple[str, str, dict[str, Any], int]  # event id, sender, content, server time (ms)


class RecentMessages:
    """The last `PER_CONVERSATION` messages per (room, thread), fed by every bot's sync."""

    def __init__(self) -> None:
        self._conversations: OrderedDict[tuple[str, str | None], deque[_Entry]] = OrderedDict()
        self._where: dict[str, tuple[str, str | None]] = {}

    def note(self, event: MatrixEvent) -> None:
        """Record a message event (each bot of the room sees it; it is kept once)."""
        content = event.content
        if event.relation_type == "m.replace":
            self._apply_edit(event)
            return
        if event.event_id in self._where:
            return
        key = (event.room_id, event.thread_root)
        conversation = self._conversations.get(key)
        if conversation is None:
            conversation = self._conversations[key] = deque(maxlen=PER_CONVERSATION)
            if len(self._conversations) > _MAX_CONVERSATIONS:
                _, dropped = self._conversations.popitem(last=False)
                for entry in dropped:
                    self._where.pop(entry[0], None)
        else:
            self._conversations.move_to_end(key)
        if len(conversation) == conversation.maxlen:
            self._where.pop(conversation[0][0], None)
        conversation.append((event.event_id, event.sender, dict(content), event.origin_server_ts))
        self._where[event.event_id] = key

    def _apply_edit(self, event: MatrixEvent) -> None:
        target = event.related_event_id
        new_content = event.content.get("m.new_content")
        key = self._where.get(target or "")
        if key is None or not isinstance(new_content, dict):
            return
        conversation = self._conversations[key]
        for index, (event_id, sender, _content, ts) in enumerate(conversation):
            if event_id == target:
                conversation[index] = (event_id, sender, dict(new_content), ts)
                return

    async def latest(self, room_id: str, sender: str, thread_id: str | None) -> AgentMessageSnapshot | None:
        """The newest message of `sender` in one conversation, or None."""
        for _event_id, who, content, ts in reversed(self._conversations.get((room_id, thread_id), ())):
            if who == sender:
                return AgentMessageSnapshot(content, ts)
        return None
