"""A recording Matrix client for unit tests of the pipeline: nothing is sent, everything is recorded.

`RecordingHomeserver` is what the clients of one test share: the events they sent or the test fed, room
state, media, and the counter behind deterministic event ids (`$ev1`, `$ev2`, ...). A send repeated with
the same transaction id returns the first event id and records nothing, as a homeserver does. Each
`RecordingClient` satisfies `mindroom.bots.bot_client.BotClient`, so a real `EntityBot` runs on it:

    server = RecordingHomeserver()
    client = server.client("helper")
    ...  # EntityBot("helper", client, handlers, ...); await bot.start(); bot.start_sync()
    await client.deliver(server.message("!room:localhost", "@alice:localhost", "hi"))
    assert [m.body for m in client.messages] == [...]

Integration tests keep the real Synapse; this is for the fast layer under them.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mindroom.matrix import (
    DEFAULT_ACCOUNT_PREFIX,
    EventHandler,
    InviteHandler,
    MatrixEvent,
    MatrixRequestError,
    bot_user_id,
)
from mindroom.matrix.content import edit_content, message_content, reaction_content
from mindroom.matrix.crypto.undecrypted import SenderCheck
from mindroom.matrix.media import MediaFile, MediaTooLargeError, media_source
from mindroom.matrix.transport import JsonReply
from mindroom.matrix.voice import VOICE_MIMETYPE, VoiceAudio, voice_content
from mindroom.testing.recorded import (
    ApiRequest,
    Record,
    RecordedSends,
    RoomChange,
    SentEdit,
    SentMessage,
    SentReaction,
    SentRedaction,
    StateWrite,
    TypingNotice,
)

if TYPE_CHECKING:
    from mindroom.bots.bot_client import BotClient

__all__ = ["RecordingClient", "RecordingHomeserver"]


class RecordingHomeserver:
    """What the recording clients of one test share: events by id, room state, media, and the id counter."""

    def __init__(self, server_name: str = "localhost", account_prefix: str = DEFAULT_ACCOUNT_PREFIX) -> None:
        self.server_name = server_name
        self.account_prefix = account_prefix
        self.events: dict[str, MatrixEvent] = {}
        self.state: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.media: dict[str, MediaFile] = {}
        self.api_reply = JsonReply(200, {})
        """What every `api` request answers."""
        self._ids = itertools.count(1)
        self._txns: dict[tuple[str, str], str] = {}

    def client(self, bot_name: str) -> RecordingClient:
        """A client for the bot `bot_name` (its user id as the daemon's accounts have it)."""
        return RecordingClient(self, bot_name)

    def next_event_id(self) -> str:
        """The next deterministic event id."""
        return f"$ev{next(self._ids)}"

    def add(
        self, room_id: str, sender: str, event_type: str, content: dict[str, Any], at_ms: int | None = None
    ) -> MatrixEvent:
        """Store a new event (as the server would) and return it."""
        ts = int(time.time() * 1000) if at_ms is None else at_ms
        event = MatrixEvent(room_id, self.next_event_id(), sender, event_type, content, ts)
        self.events[event.event_id] = event
        return event

    def message(
        self,
        room_id: str,
        sender: str,
        body: str,
        *,
        thread_root: str | None = None,
        reply_to: str | None = None,
        extra_content: Mapping[str, Any] | None = None,
        at_ms: int | None = None,
    ) -> MatrixEvent:
        """A message from `sender` (a person, usually), for a test to deliver."""
        content = message_content(body, thread_root=thread_root, reply_to=reply_to, extra_content=extra_content)
        return self.add(room_id, sender, "m.room.message", content, at_ms)

    def edit(
        self, room_id: str, sender: str, target_event_id: str, new_body: str, *, at_ms: int | None = None
    ) -> MatrixEvent:
        """An edit of `target_event_id` by `sender`."""
        target = self.events.get(target_event_id)
        thread_root = target.thread_root if target is not None else None
        content = edit_content(target_event_id, new_body, thread_root=thread_root)
        return self.add(room_id, sender, "m.room.message", content, at_ms)

    def reaction(
        self, room_id: str, sender: str, target_event_id: str, key: str, *, at_ms: int | None = None
    ) -> MatrixEvent:
        """A reaction of `sender` to `target_event_id`."""
        return self.add(room_id, sender, "m.reaction", reaction_content(target_event_id, key), at_ms)

    def upload(self, data: bytes, name: str, mimetype: str | None = None) -> str:
        """Keep a file for `download_media`; returns its `mxc://` URL."""
        url = f"mxc://{self.server_name}/media{len(self.media) + 1}"
        self.media[url] = MediaFile(data, name, mimetype)
        return url

    def send_event_id(self, sender: str, txn_id: str | None) -> tuple[str, bool]:
        """The event id of a send (an earlier one's for a repeated transaction id), and whether it is new."""
        if txn_id is not None and (sender, txn_id) in self._txns:
            return self._txns[(sender, txn_id)], False
        event_id = self.next_event_id()
        if txn_id is not None:
            self._txns[(sender, txn_id)] = event_id
        return event_id, True


class RecordingClient(RecordedSends):
    """A bot's Matrix client that records what it would send; `deliver` and `receive_invite` feed its sync."""

    def __init__(self, server: RecordingHomeserver, bot_name: str) -> None:
        self.server = server
        self.bot_name = bot_name
        self.records: list[Record] = []
        self.rooms: set[str] = set()
        self.display_name: str | None = None
        self.closed = False
        self._user_id = bot_user_id(bot_name, server.server_name, server.account_prefix)
        self._first_sync = asyncio.Event()
        self._handler: EventHandler | None = None
        self._on_invite: InviteHandler | None = None
        self.sender_check: SenderCheck | None = None
        """What the bot's sync was given to decide whose unreadable events get key requests and notices."""

    # -- what a test feeds -----------------------------------------------------------------------------
    async def deliver(self, event: MatrixEvent) -> None:
        """Hand `event` to the running sync's handler, as a sync batch would (the bot must be syncing)."""
        if self._handler is None:
            msg = f"{self.bot_name!r} is not syncing: start the bot's sync first"
            raise RuntimeError(msg)
        self.server.events.setdefault(event.event_id, event)
        await self._handler(event)

    async def receive_invite(self, room_id: str, inviter: str) -> bool:
        """An invite into `room_id` from `inviter`, answered as the sync loop does: joined or rejected."""
        if self._on_invite is None:
            msg = f"{self.bot_name!r} is not syncing: start the bot's sync first"
            raise RuntimeError(msg)
        accepted = await self._on_invite(room_id, inviter)
        await (self.join(room_id) if accepted else self.leave(room_id))
        return accepted

    # -- account ---------------------------------------------------------------------------------------
    @property
    def user_id(self) -> str:
        """The bot's user id (`@<prefix><bot>:<server>`)."""
        return self._user_id

    @property
    def server_name(self) -> str:
        """The shared server's name."""
        return self.server.server_name

    @property
    def account_prefix(self) -> str:
        """The shared server's account prefix."""
        return self.server.account_prefix

    @property
    def has_synced(self) -> bool:
        """True once `run_sync` started."""
        return self._first_sync.is_set()

    async def login(self) -> str:
        """Nothing to sign in to; returns the user id."""
        return self._user_id

    async def close(self) -> None:
        """Mark the client closed."""
        self.closed = True

    async def ensure_display_name(self, name: str) -> None:
        """Keep the display name."""
        self.display_name = name

    # -- rooms -----------------------------------------------------------------------------------------
    async def joined_rooms(self) -> list[str]:
        """The rooms joined so far."""
        return sorted(self.rooms)

    async def join(self, room_id: str) -> str:
        """Join a room by id."""
        self.rooms.add(room_id)
        self.records.append(RoomChange(room_id, "joined"))
        return room_id

    async def ensure_room(
        self, key: str, *, name: str | None = None, topic: str | None = None, invite: Sequence[str] = ()
    ) -> str:
        """Join the room behind `key` (`!id`, or a bare key made into `!key:<server>`)."""
        return await self.join(key if key.startswith("!") else f"!{key.lstrip('#').split(':')[0]}:{self.server_name}")

    async def resolve_room(self, key_or_id: str) -> str | None:
        """Ids pass through; aliases are unknown."""
        return key_or_id if key_or_id.startswith("!") else None

    async def leave(self, room_id: str) -> None:
        """Leave (or reject) a room."""
        self.rooms.discard(room_id)
        self.records.append(RoomChange(room_id, "left"))

    async def room_members(self, room_id: str) -> list[str]:
        """Only this bot is known to be in its rooms."""
        return [self._user_id] if room_id in self.rooms else []

    # -- messages --------------------------------------------------------------------------------------
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
        """Record a message; returns its event id (the earlier one for a repeated `txn_id`)."""
        event_id, new = self.server.send_event_id(self._user_id, txn_id)
        if not new:
            return event_id
        content = message_content(
            body,
            msgtype=msgtype,
            thread_root=thread_root,
            reply_to=reply_to,
            mentions=mentions,
            formatted_body=formatted_body,
            extra_content=extra_content,
        )
        self._store(room_id, event_id, "m.room.message", content)
        self.records.append(SentMessage(room_id, event_id, body, content, thread_root, reply_to, txn_id))
        return event_id

    async def send_file(self, room_id: str, data: bytes, name: str, mimetype: str, **where: Any) -> str:
        """Record a file message (`m.image`, `m.file`) whose file the server keeps; `where`: thread, reply, txn id."""
        info = {"mimetype": mimetype, "size": len(data)}
        extra = {"url": self.server.upload(data, name, mimetype), "info": info, "filename": name}
        kind = "m.image" if mimetype.startswith("image/") else "m.file"
        return await self.send_message(room_id, name, msgtype=kind, extra_content=extra, **where)

    async def send_voice(self, room_id: str, audio: VoiceAudio, body: str, **where: Any) -> str:
        """Record a voice message whose recording the server keeps; `where`: thread, reply, txn id."""
        media = {"url": self.server.upload(audio.data, "voice-message.ogg", VOICE_MIMETYPE)}
        extra = voice_content(audio, body, media)
        return await self.send_message(room_id, body, msgtype="m.audio", extra_content=extra, **where)

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
        """Record an edit of `event_id`; returns the edit's event id."""
        edit_id, new = self.server.send_event_id(self._user_id, txn_id)
        if not new:
            return edit_id
        content = edit_content(
            event_id,
            new_body,
            msgtype=msgtype,
            thread_root=thread_root,
            mentions=mentions,
            formatted_body=formatted_body,
            extra_content=extra_content,
        )
        self._store(room_id, edit_id, "m.room.message", content)
        self.records.append(SentEdit(room_id, edit_id, event_id, new_body, content, thread_root, txn_id))
        return edit_id

    async def react(self, room_id: str, event_id: str, key: str) -> str:
        """Record a reaction; returns its event id."""
        reaction_id = self.server.next_event_id()
        self._store(room_id, reaction_id, "m.reaction", reaction_content(event_id, key))
        self.records.append(SentReaction(room_id, reaction_id, event_id, key))
        return reaction_id

    async def redact(self, room_id: str, event_id: str, reason: str | None = None) -> str:
        """Record a redaction; returns its event id."""
        redaction_id = self.server.next_event_id()
        self.records.append(SentRedaction(room_id, redaction_id, event_id, reason))
        return redaction_id

    async def set_typing(self, room_id: str, on: bool, timeout_ms: int = 30_000) -> None:
        """Record a typing notice."""
        self.records.append(TypingNotice(room_id, on))

    async def get_event(self, room_id: str, event_id: str) -> MatrixEvent | None:
        """An event sent or fed in this test, if it is in `room_id`."""
        event = self.server.events.get(event_id)
        return event if event is not None and event.room_id == room_id else None

    def _store(self, room_id: str, event_id: str, event_type: str, content: dict[str, Any]) -> None:
        ts = int(time.time() * 1000)
        self.server.events[event_id] = MatrixEvent(room_id, event_id, self._user_id, event_type, content, ts)

    # -- room state, media, raw requests ---------------------------------------------------------------
    async def get_room_state(
        self, room_id: str, event_type: str, state_key: str | None = None
    ) -> dict[str, Any] | None:
        """What was set (by any client of the server); every state key of the type without `state_key`."""
        state = self.server.state
        if state_key is not None:
            return state.get((room_id, event_type, state_key))
        return {key: content for (room, kind, key), content in state.items() if room == room_id and kind == event_type}

    async def put_room_state(self, room_id: str, event_type: str, state_key: str, content: Mapping[str, Any]) -> bool:
        """Record and keep a state event."""
        self.server.state[(room_id, event_type, state_key)] = dict(content)
        self.records.append(StateWrite(room_id, event_type, state_key, dict(content)))
        return True

    async def download_media(self, content: Mapping[str, Any], max_bytes: int) -> MediaFile:
        """A file the test uploaded to the server (`MediaTooLargeError` past `max_bytes`)."""
        source = media_source(content)
        media = self.server.media.get(source[0]) if source is not None else None
        if media is None:
            raise MatrixRequestError("download media", None, "no such media")
        if len(media.data) > max_bytes:
            raise MediaTooLargeError("download media", None, f"larger than {max_bytes} bytes")
        return media

    async def api(self, method: str, path: str, body: Any = None) -> JsonReply:
        """Record the request; answers with the server's `api_reply`."""
        self.records.append(ApiRequest(method, path, body))
        return self.server.api_reply

    # -- sync ------------------------------------------------------------------------------------------
    async def run_sync(
        self,
        handler: EventHandler,
        *,
        on_invite: InviteHandler,
        settle_s: float = 0.0,
        authorized: SenderCheck | None = None,
    ) -> None:
        """Take the handlers, count the first sync as done, and wait (until cancelled) for the test to feed.

        `authorized` is kept as `sender_check`, for a test to ask whose unreadable events would be answered.
        """
        self._handler, self._on_invite = handler, on_invite
        self.sender_check = authorized
        self._first_sync.set()
        try:
            await asyncio.get_running_loop().create_future()
        finally:
            self._handler = self._on_invite = None

    async def first_sync_done(self) -> None:
        """Wait until `run_sync` started."""
        await self._first_sync.wait()


if TYPE_CHECKING:
    _conforms: type[BotClient] = RecordingClient
