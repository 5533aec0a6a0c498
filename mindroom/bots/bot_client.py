"""`BotClient`: the Matrix client a bot and its pipeline use, as a structural protocol.

`mindroom.matrix.MatrixBotClient` is the real one; `mindroom.testing.recording_client.RecordingClient`
records instead of sending, for unit tests of the pipeline. Both satisfy this protocol (mypy checks it),
so a method the pipeline starts to call is added here, and then to both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from mindroom.matrix import EventHandler, InviteHandler
from mindroom.matrix.crypto.undecrypted import SenderCheck
from mindroom.matrix.media import MediaFile
from mindroom.matrix.room_account import RoomAccount
from mindroom.matrix.voice import VoiceAudio

__all__ = ["BotClient"]


class BotClient(RoomAccount, Protocol):
    """One bot's Matrix account as the bots package calls it: account, rooms, messages, room state (those of
    `RoomAccount`), media, sync."""

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

    async def set_typing(self, room_id: str, on: bool, timeout_ms: int = ...) -> None:
        """Show (or stop showing) the typing notice."""

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

    async def send_voice(
        self,
        room_id: str,
        audio: VoiceAudio,
        body: str,
        *,
        thread_root: str | None = None,
        reply_to: str | None = None,
        txn_id: str | None = None,
    ) -> str:
        """Upload an Ogg/Opus recording (encrypted in an encrypted room) and post it as a voice message."""

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
