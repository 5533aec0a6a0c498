"""`RoomAccount`: what a Matrix account does in its rooms (messages, reactions, redactions, events, room state).

The bots' client (`mindroom.bots.bot_client.BotClient`) is one, with its sign-in, sync and media on top; the
built-in room tools take an agent's account as this, so they reach no more of it than a room needs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from mindroom.matrix.events import MatrixEvent
from mindroom.matrix.transport import JsonReply

__all__ = ["RoomAccount"]


class RoomAccount(Protocol):
    """An account's messages and room state, as a structural protocol."""

    @property
    def user_id(self) -> str:
        """The account's Matrix user id."""

    async def room_members(self, room_id: str) -> list[str]:
        """The joined members of a room."""

    async def send_message(
        self,
        room_id: str,
        body: str,
        *,
        thread_root: str | None = None,
        reply_to: str | None = None,
        extra_content: Mapping[str, Any] | None = None,
        mentions: Sequence[str] | None = None,
        formatted_body: str | None = None,
        msgtype: str = "m.text",
        txn_id: str | None = None,
    ) -> str:
        """Send a message (in a thread when `thread_root` is given); returns its event id."""

    async def edit_message(
        self,
        room_id: str,
        event_id: str,
        new_body: str,
        *,
        thread_root: str | None = None,
        extra_content: Mapping[str, Any] | None = None,
        mentions: Sequence[str] | None = None,
        formatted_body: str | None = None,
        msgtype: str = "m.text",
        txn_id: str | None = None,
    ) -> str:
        """Replace the text of `event_id`; returns the edit's event id."""

    async def react(self, room_id: str, event_id: str, key: str) -> str:
        """Annotate `event_id` with `key`; returns the reaction's event id."""

    async def redact(self, room_id: str, event_id: str, reason: str | None = None) -> str:
        """Redact an event; returns the redaction's event id."""

    async def get_event(self, room_id: str, event_id: str) -> MatrixEvent | None:
        """One event (decrypted when the account can); None when unknown or not visible."""

    async def get_room_state(
        self, room_id: str, event_type: str, state_key: str | None = None
    ) -> dict[str, Any] | None:
        """A state event's content (or every one of the type by state key); None on error."""

    async def put_room_state(self, room_id: str, event_type: str, state_key: str, content: Mapping[str, Any]) -> bool:
        """Set a state event; False when the homeserver refuses."""

    async def api(self, method: str, path: str, body: Any = None) -> JsonReply:
        """One client-API request as this account; the reply, whatever its status."""
