"""A human Matrix user for end-to-end tests: a real nio client that sends and watches messages.

With a `store_dir` the client is a full encryption device, as Element is: it uploads its keys, encrypts
what it sends into encrypted rooms (reactions too) for every device there, verified or not, and decrypts
what it receives. Recorded events are the decrypted ones, marked with `"decrypted": True`.

Tests run on loaded machines, so nothing here counts on time: waits poll for the state they need with a
long deadline (`PATIENCE_S`, never reached by a passing test), and a check that something did *not*
happen waits for a later marker instead of a quiet spell (`HumanClient.sync_past`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import io
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import nio
from nio.crypto import OutboundGroupSession
from nio.event_builders import ToDeviceMessage
from nio.store import SqliteStore

Predicate = Callable[[dict[str, Any]], bool]
MEGOLM = "m.megolm.v1.aes-sha2"
ENCRYPTION_STATE = {"type": "m.room.encryption", "state_key": "", "content": {"algorithm": MEGOLM}}
MARKER_TYPE = "com.example.test.marker"
"""An event type the daemon ignores (neither message, reaction nor member): a point in a room's timeline."""
PATIENCE_S = 60.0
"""How long a wait for something that must happen lasts: long, for a loaded machine; a passing test never
waits it out."""
# Every event of a sync, however many piled up while a loaded machine kept this client from syncing: the
# homeserver's default would hand over only the last few and skip the rest ("limited" timelines).
_SYNC_FILTER = {"room": {"timeline": {"limit": 1000}}}
_T = TypeVar("_T")


async def eventually(check: Callable[[], _T | Awaitable[_T]], what: str, timeout: float = PATIENCE_S) -> _T:
    """Poll `check` (sync or async) until it returns something truthy, and return that; fail naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result  # type: ignore[return-value]
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s (last seen: {result!r})")
        await asyncio.sleep(0.05)


class WithheldSession:
    """A megolm session kept apart from nio's bookkeeping, so nothing shares it until `hand_over`."""

    def __init__(self) -> None:
        self.session = OutboundGroupSession()
        self.session.shared = True  # nio's session refuses to encrypt before it counts as shared
        self.first_key = self.session.session_key  # exported before any message, so it opens all of them


class HumanClient:
    """Logs in as a registered user, joins rooms, sends messages, and records every timeline event it sees."""

    def __init__(self, homeserver_url: str, user_id: str, password: str, *, store_dir: Path | None = None) -> None:
        self.user_id = user_id
        self.password = password
        self.encrypted = store_dir is not None
        if store_dir is not None:
            store_dir.mkdir(parents=True, exist_ok=True)
            config = nio.AsyncClientConfig(encryption_enabled=True, store=SqliteStore, store_sync_tokens=False)
            self.client = nio.AsyncClient(homeserver_url, user_id, store_path=str(store_dir), config=config)
        else:
            self.client = nio.AsyncClient(homeserver_url, user_id)
        self.events: list[dict[str, Any]] = []
        self.typing: list[tuple[str, tuple[str, ...]]] = []
        """Typing notices seen, as (room id, who is typing)."""
        self.errors: list[str] = []
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._next_batch: str | None = None

    @property
    def device_id(self) -> str:
        return str(self.client.device_id)

    async def start(self) -> None:
        response = await self.client.login(self.password)
        assert isinstance(response, nio.LoginResponse), response
        if self.encrypted:
            await self._crypto_chores()
        first = await self.client.sync(timeout=0, sync_filter=_SYNC_FILTER)
        assert isinstance(first, nio.SyncResponse), first
        self._next_batch = first.next_batch
        for room_id in first.rooms.invite:
            await self.client.join(room_id)
        self._task = asyncio.create_task(self._sync_loop())

    async def _crypto_chores(self) -> None:
        """What nio's own sync_forever does between syncs: keys up, devices queried, to-device messages out."""
        client = self.client
        if client.should_upload_keys:
            await client.keys_upload()
        if client.should_query_keys:
            await client.keys_query()
        if client.should_claim_keys:
            await client.keys_claim(client.get_users_for_key_claiming())
        await client.send_to_device_messages()

    async def _sync_loop(self) -> None:
        while True:
            try:
                await self._sync_once()
            except Exception as exc:  # kept, and shown by the waits that time out, instead of ending the loop
                self.errors.append(f"{type(exc).__name__}: {exc}")
                await asyncio.sleep(0.2)

    async def _sync_once(self) -> None:
        response = await self.client.sync(timeout=1000, sync_filter=_SYNC_FILTER, since=self._next_batch)
        if not isinstance(response, nio.SyncResponse):
            await asyncio.sleep(0.2)
            return
        self._next_batch = response.next_batch
        for room_id in response.rooms.invite:
            await self.client.join(room_id)
        fresh = []
        for room_id, room in response.rooms.join.items():
            if room.timeline.limited:  # events were skipped: shown by the waits that then time out
                self.errors.append(f"timeline gap in {room_id}")
            for notice in room.ephemeral:
                if isinstance(notice, nio.TypingNoticeEvent):
                    self.typing.append((room_id, tuple(notice.users)))
            for event in room.timeline.events:
                source = dict(event.source)
                source["room_id"] = room_id
                if getattr(event, "decrypted", False):
                    source["decrypted"] = True
                fresh.append(source)
        if fresh:
            async with self._changed:
                self.events.extend(fresh)
                self._changed.notify_all()
        if self.encrypted:
            await self._crypto_chores()

    # -- encrypted rooms ------------------------------------------------------------------------------

    async def create_room(self, invite: list[str], *, encrypted: bool = True, direct: bool = False) -> str:
        """A private room (a DM with `direct`) created by this user, encrypted unless told otherwise."""
        preset = nio.RoomPreset.trusted_private_chat if direct else nio.RoomPreset.private_chat
        response = await self.client.room_create(
            is_direct=direct, invite=invite, preset=preset, initial_state=[ENCRYPTION_STATE] if encrypted else []
        )
        assert isinstance(response, nio.RoomCreateResponse), response
        return str(response.room_id)

    async def wait_for_member(self, room_id: str, user_id: str, timeout: float = PATIENCE_S) -> None:
        """Until this client's own sync shows `user_id` joined to `room_id` (so keys will be shared with it)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            room = self.client.rooms.get(room_id)
            if room is not None and user_id in room.users and user_id not in room.invited_users:
                return
            await asyncio.sleep(0.1)
        raise TimeoutError(f"{user_id} did not join {room_id}")

    async def wait_for_device(self, user_id: str, device_id: str, timeout: float = PATIENCE_S) -> None:
        """Until this client knows `device_id` of `user_id`; asks for the user's keys again every 2 s meanwhile.

        A device list change normally reaches the client through its sync; asking again keeps a test from
        depending on how fast a loaded homeserver passes it on.
        """
        deadline = time.monotonic() + timeout
        asked = time.monotonic()
        while time.monotonic() < deadline:
            if any(d.id == device_id for d in self.client.device_store.active_user_devices(user_id)):
                return
            if time.monotonic() - asked > 2.0:
                self.client.olm.users_for_key_query.add(user_id)  # the sync loop's chores query it
                asked = time.monotonic()
            await asyncio.sleep(0.1)
        known = [d.id for d in self.client.device_store.active_user_devices(user_id)]
        raise TimeoutError(
            f"{self.user_id} never learned of {user_id}'s device {device_id} (knows {known}; errors {self.errors})"
        )

    async def _synced_room(self, room_id: str, timeout: float = PATIENCE_S) -> Any:
        deadline = time.monotonic() + timeout
        while room_id not in self.client.rooms:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{room_id} never showed up in {self.user_id}'s sync")
            await asyncio.sleep(0.05)
        return self.client.rooms[room_id]

    async def _room_send(self, room_id: str, event_type: str, content: dict[str, Any]) -> str:
        room = await self._synced_room(room_id) if self.encrypted else None
        if room is None or not room.encrypted:
            response = await self.client.room_send(room_id, event_type, content)
            assert isinstance(response, nio.RoomSendResponse), response
            return str(response.event_id)
        if not room.members_synced:
            await self.client.joined_members(room_id)
        if self.client.should_query_keys:
            await self.client.keys_query()
        if self.client.olm.should_share_group_session(room_id):
            await self.client.share_group_session(room_id, ignore_unverified_devices=True)
        encrypted_type, encrypted = self.client.encrypt(room_id, event_type, content)
        return await self.send_raw(room_id, encrypted_type, encrypted)

    async def send_raw(self, room_id: str, event_type: str, content: dict[str, Any]) -> str:
        """PUT an event exactly as given (nio's room_send would encrypt it again, or not encrypt a reaction)."""
        method, path, data = nio.Api.room_send(self.client.access_token, room_id, event_type, content, uuid.uuid4())
        response = await self.client._send(nio.RoomSendResponse, method, path, data, (room_id,))
        assert isinstance(response, nio.RoomSendResponse), response
        return str(response.event_id)

    async def send_withheld(self, room_id: str, body: str, session: WithheldSession) -> str:
        """A message encrypted with a room session that no other device was given (unreadable to them)."""
        payload = {"type": "m.room.message", "content": {"msgtype": "m.text", "body": body}, "room_id": room_id}
        content = {
            "algorithm": MEGOLM,
            "sender_key": self.client.olm.account.identity_keys["curve25519"],
            "ciphertext": session.session.encrypt(json.dumps(payload)),
            "session_id": session.session.id,
            "device_id": self.device_id,
        }
        return await self.send_raw(room_id, "m.room.encrypted", content)

    async def hand_over(self, room_id: str, session: WithheldSession, user_id: str) -> None:
        """Send a withheld room key to every device of `user_id` (what a client re-sharing a key does)."""
        client, olm = self.client, self.client.olm
        olm.users_for_key_query.add(user_id)
        await client.keys_query()
        missing = olm.get_missing_sessions([user_id])
        if missing:
            await client.keys_claim(missing)
        content = {
            "algorithm": MEGOLM,
            "room_id": room_id,
            "session_id": session.session.id,
            "session_key": session.first_key,
        }
        for device in olm.device_store.active_user_devices(user_id):
            channel = olm.session_store.get(device.curve25519)
            assert channel is not None, f"no olm session with {device.id}"
            payload = olm._olm_encrypt(channel, device, "m.room_key", content)
            response = await client.to_device(ToDeviceMessage("m.room.encrypted", user_id, device.id, payload))
            assert isinstance(response, nio.ToDeviceResponse), response

    async def raw_timeline(self, room_id: str, limit: int = 200) -> list[dict[str, Any]]:
        """The room's events as the homeserver stores them (not decrypted), oldest first."""
        path = f"/_matrix/client/v3/rooms/{quote(room_id, safe='')}/messages?dir=b&limit={limit}"
        headers = {"Authorization": f"Bearer {self.client.access_token}"}
        response = await self.client.send("GET", path, None, headers)
        body = await response.json()
        return list(reversed(body.get("chunk", [])))

    async def join(self, room_id: str) -> None:
        response = await self.client.join(room_id)
        assert isinstance(response, nio.JoinResponse), response

    async def send(
        self,
        room_id: str,
        body: str,
        *,
        mentions: list[str] | None = None,
        thread_root: str | None = None,
        formatted_body: str | None = None,
    ) -> str:
        content: dict[str, Any] = {"msgtype": "m.text", "body": body}
        if mentions is not None:
            content["m.mentions"] = {"user_ids": mentions}
        if formatted_body is not None:
            content["format"] = "org.matrix.custom.html"
            content["formatted_body"] = formatted_body
        if thread_root is not None:
            content["m.relates_to"] = {
                "rel_type": "m.thread",
                "event_id": thread_root,
                "is_falling_back": True,
                "m.in_reply_to": {"event_id": thread_root},
            }
        return await self._room_send(room_id, "m.room.message", content)

    async def send_media(
        self, room_id: str, msgtype: str, data: bytes, *, name: str, mimetype: str, caption: str | None = None
    ) -> str:
        """Upload `data` and post it as an `m.audio`/`m.image`/`m.file` message."""
        uploaded, _ = await self.client.upload(
            io.BytesIO(data), content_type=mimetype, filename=name, filesize=len(data)
        )
        assert isinstance(uploaded, nio.UploadResponse), uploaded
        content: dict[str, Any] = {
            "msgtype": msgtype,
            "body": caption or name,
            "url": uploaded.content_uri,
            "info": {"mimetype": mimetype, "size": len(data)},
        }
        if caption:
            content["filename"] = name
        response = await self.client.room_send(room_id, "m.room.message", content)
        assert isinstance(response, nio.RoomSendResponse), response
        return str(response.event_id)

    async def react(self, room_id: str, event_id: str, key: str) -> str:
        content = {"m.relates_to": {"rel_type": "m.annotation", "event_id": event_id, "key": key}}
        return await self._room_send(room_id, "m.reaction", content)

    async def wait_for(self, predicate: Predicate, timeout: float = PATIENCE_S) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        async with self._changed:
            while True:
                for event in self.events:
                    if predicate(event):
                        return event
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"no matching event arrived (sync errors: {self.errors})")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), remaining)

    async def sync_past(self, room_id: str) -> None:
        """Until this client's sync has shown every event sent to `room_id` before now.

        It posts a marker event (of a type the daemon ignores) and waits for it: a room's events reach a
        client in the order the homeserver took them, so all that came before the marker is here too.
        """
        marker = await self.send_raw(room_id, MARKER_TYPE, {"marker": uuid.uuid4().hex})
        await self.wait_for(lambda event: event.get("event_id") == marker)

    def matching(self, predicate: Predicate) -> list[dict[str, Any]]:
        return [event for event in self.events if predicate(event)]

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        await self.client.close()


def thread_replies(root: str, sender: str | None = None) -> Predicate:
    """Messages in the thread rooted at `root` (not edits), optionally from one sender."""

    def predicate(event: dict[str, Any]) -> bool:
        content = event.get("content", {})
        relates = content.get("m.relates_to", {}) if isinstance(content, dict) else {}
        if not isinstance(relates, dict):
            return False
        return (
            event.get("type") == "m.room.message"
            and relates.get("rel_type") == "m.thread"
            and relates.get("event_id") == root
            and (sender is None or event.get("sender") == sender)
        )

    return predicate


def edits_of(event_id: str) -> Predicate:
    """Edits (m.replace) of one event."""

    def predicate(event: dict[str, Any]) -> bool:
        content = event.get("content", {})
        relates = content.get("m.relates_to", {}) if isinstance(content, dict) else {}
        return (
            isinstance(relates, dict) and relates.get("rel_type") == "m.replace" and relates.get("event_id") == event_id
        )

    return predicate


class ReloadLog:
    """Every reload outcome a daemon reports (its `on_reload`), and a way to wait for the next one."""

    def __init__(self) -> None:
        self.outcomes: list[Any] = []
        self._added = asyncio.Event()

    def add(self, outcome: Any) -> None:
        """The daemon's `on_reload` callback."""
        self.outcomes.append(outcome)
        self._added.set()

    async def wait(self, since: float, timeout_s: float = PATIENCE_S) -> Any:
        """The first reload that started at or after `since`."""
        deadline = time.monotonic() + timeout_s
        while True:
            for outcome in self.outcomes:
                if outcome.started_at >= since:
                    return outcome
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no reload happened in time")
            self._added.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._added.wait(), remaining)
