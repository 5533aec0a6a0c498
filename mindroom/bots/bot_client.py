"""`BotClient`: the Matrix client a bot and its pipeline use, as a structural protocol.

`mindroom.matrix.MatrixBotClient` is the real one; `mindroom.testing.recording_client.RecordingClient`
records instead of sending, for unit tests of the pipeline. Both satisfy this protocol (mypy checks it),
so a method the pipeline starts to call is added here, and then to both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from mindroom.matrix import EventHandler, InviteHandler, MatrixEvent
from mindroom.matrix.crypto.undecrypted import SenderCheck
from mindroom.matrix.media import MediaFile
from mindroom.matrix.transport import JsonReply

__all__ = ["BotClient"]


class BotClient(Protocol):
    """One bot's Matrix account as the bots package calls it: account, rooms, messages, room state, media, sync."""

    @property
    def user_id(self) -> str:
        """The logged-in Matrix user id."""

    @property
    def server_name(self) -> str:
        """The Matrix server name of the bot's account."""

    @property
    def account_prefix(self) -> str:
        """The localpart prefix every bot account of this daemon has."""

    @property
    def has_synced(self) -> bool:
        """True once the first sync has been handled."""

    async def login(self) -> str:
        """Sign in (or register); returns the user id."""

    async def close(self) -> None:
        """Close the connection; the stored session stays valid."""

    async def ensure_display_name(self, name: str) -> None:
        """Set the display name unless it already is `name`."""

    async def joined_rooms(self) -> list[str]:
        """The ids of the rooms the account has joined."""

    async def ensure_room(
        self, key: str, *, name: str | None = None, topic: str | None = None, invite: Sequence[str] = ()
    ) -> str:
        """Join (or create) the room behind `key`; returns its id."""

    async def resolve_room(self, key_or_id: str) -> str | None:
        """The room id of an id, alias or bare key; None if unknown."""

    async def leave(self, room_id: str) -> None:
        """Leave a room, or reject an invite to it."""

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

    async def set_typing(self, room_id: str, on: bool, timeout_ms: int = ...) -> None:
        """Show (or stop showing) the typing notice."""

    async def get_event(self, room_id: str, event_id: str) -> MatrixEvent | None:
        """One event as the server stores it; None when unknown or not visible."""

    async def get_room_state(
        self, room_id: str, event_type: str, state_key: str | None = None
    ) -> dict[str, Any] | None:
        """A state event's content (or every one of the type by state key); None on error."""

    async def put_room_state(self, room_id: str, event_type: str, state_key: str, content: Mapping[str, Any]) -> bool:
        """Set a state event; False when the homeserver refuses."""

    async def download_media(self, content: Mapping[str, Any], max_bytes: int) -> MediaFile:
        """Download a message's attachment (`MediaTooLargeError` past `max_bytes`)."""

    async def send_file(
        self,
        room_id: str,
        data: bytes,
        name: str,
        mimetype: str,
        *,
        thread_root: str | None = None,
        reply_to: str | None = None,
        txn_id: str | None = None,
    ) -> str:
        """Upload a file (encrypted in an encrypted room) and post it as `m.image` or `m.file`."""

    async def api(self, method: str, path: str, body: Any = None) -> JsonReply:
        """One client-API request as this account; the reply, whatever its status."""

    async def run_sync(
        self,
        handler: EventHandler,
        *,
        on_invite: InviteHandler,
        settle_s: float = 0.0,
        authorized: SenderCheck | None = None,
    ) -> None:
        """Deliver new events to `handler` and invites to `on_invite` until cancelled; only senders `authorized`
        in a room get key requests and notices for the events the account cannot read."""

    async def first_sync_done(self) -> None:
        """Wait until the first sync has been handled."""
