"""A human Matrix user for end-to-end tests: a real nio client that sends and watches messages."""

from __future__ import annotations

import asyncio
import contextlib
import io
import time
from collections.abc import Callable
from typing import Any

import nio

Predicate = Callable[[dict[str, Any]], bool]


class HumanClient:
    """Logs in as a registered user, joins rooms, sends messages, and records every timeline event it sees."""

    def __init__(self, homeserver_url: str, user_id: str, password: str) -> None:
        self.user_id = user_id
        self.password = password
        self.client = nio.AsyncClient(homeserver_url, user_id)
        self.events: list[dict[str, Any]] = []
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._next_batch: str | None = None

    async def start(self) -> None:
        response = await self.client.login(self.password)
        assert isinstance(response, nio.LoginResponse), response
        first = await self.client.sync(timeout=0)
        assert isinstance(first, nio.SyncResponse), first
        self._next_batch = first.next_batch
        for room_id in first.rooms.invite:
            await self.client.join(room_id)
        self._task = asyncio.create_task(self._sync_loop())

    async def _sync_loop(self) -> None:
        while True:
            response = await self.client.sync(timeout=1000, since=self._next_batch)
            if not isinstance(response, nio.SyncResponse):
                await asyncio.sleep(0.2)
                continue
            self._next_batch = response.next_batch
            for room_id in response.rooms.invite:
                await self.client.join(room_id)
            fresh = []
            for room_id, room in response.rooms.join.items():
                for event in room.timeline.events:
                    source = dict(event.source)
                    source["room_id"] = room_id
                    fresh.append(source)
            if fresh:
                async with self._changed:
                    self.events.extend(fresh)
                    self._changed.notify_all()

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
        response = await self.client.room_send(room_id, "m.room.message", content)
        assert isinstance(response, nio.RoomSendResponse), response
        return str(response.event_id)

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
        response = await self.client.room_send(room_id, "m.reaction", content)
        assert isinstance(response, nio.RoomSendResponse), response
        return str(response.event_id)

    async def wait_for(self, predicate: Predicate, timeout: float = 20.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        async with self._changed:
            while True:
                for event in self.events:
                    if predicate(event):
                        return event
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("no matching event arrived")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), remaining)

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

    async def wait(self, since: float, timeout_s: float) -> Any:
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
