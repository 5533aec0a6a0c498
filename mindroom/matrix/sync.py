"""The long-polling sync loop of one bot: resume from the stored token, deliver events, persist after handling.

The sync body is read as plain JSON (not through nio's parser) so events with malformed content, unknown
types and every room version reach the caller unchanged.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mindroom.logging_config import get_logger
from mindroom.matrix.crypto.undecrypted import SyncDecryption
from mindroom.matrix.delivery import HOMESERVER_BACKOFF, HomeserverRetries
from mindroom.matrix.errors import MatrixConnectionError, MatrixRequestError
from mindroom.matrix.inbound import EventHandler, InviteHandler, answer_invite, deliver_raw, inviter_of
from mindroom.matrix.transport import JsonReply, JsonTransport, quote_path
from mindroom.state.tokens import SyncTokens

__all__ = ["EventHandler", "InviteHandler", "SyncLoop"]

logger = get_logger(__name__)

_SYNC_PATH = "/_matrix/client/v3/sync"
_TOKEN_SAVE_INTERVAL_S = 2.0
_BACKFILL_PAGE = 100
_BACKFILL_MAX_EVENTS = 2000
_POLL_TIMEOUT_MS = 30_000
_HTTP_MARGIN_S = 15.0
_SESSION_GONE = frozenset({"M_UNKNOWN_TOKEN", "M_MISSING_TOKEN", "M_USER_DEACTIVATED"})


def _sync_filter(timeline_limit: int, *, lazy_load_members: bool) -> str:
    room: dict[str, Any] = {
        "timeline": {"limit": timeline_limit},
        "state": {"lazy_load_members": lazy_load_members},
        "ephemeral": {"types": []},
        "account_data": {"types": []},
    }
    return json.dumps({"presence": {"types": []}, "account_data": {"types": []}, "room": room}, separators=(",", ":"))


_INITIAL_FILTER = _sync_filter(1, lazy_load_members=True)
# Synapse remembers one lazily loaded membership per user, not per room, so a member who writes in another
# room than last time has their membership sent again; it then lists them as a user whose devices changed,
# and every bot would query their keys after each such message. Incremental syncs need no lazy loading:
# their state holds only what changed.
_INCREMENTAL_FILTER = _sync_filter(100, lazy_load_members=False)


def _has_room_events(batch: dict[str, Any]) -> bool:
    """True when the batch brought timeline events in a joined room."""
    joined = _as_dict(_as_dict(batch.get("rooms")).get("join"))
    return any(_as_list(_as_dict(_as_dict(room).get("timeline")).get("events")) for room in joined.values())


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _is_own_membership(raw: Any, user_id: str) -> bool:
    event = _as_dict(raw)
    return event.get("type") == "m.room.member" and event.get("state_key") == user_id


def _events_after_own_join(events: list[Any], user_id: str) -> tuple[list[Any], bool]:
    """Drop history from before the bot was asked in: events before its invite (or, with none in this batch,
    before its join) are not for it. True if it joined in this batch.

    Messages sent between the invite and the join stay: in a new DM people often write before the bot
    has accepted, and those messages are meant for it.
    """
    joined_at: int | None = None
    for index in range(len(events) - 1, -1, -1):
        raw = _as_dict(events[index])
        if raw.get("type") != "m.room.member" or raw.get("state_key") != user_id:
            continue
        membership = _as_dict(raw.get("content")).get("membership")
        previous = _as_dict(_as_dict(raw.get("unsigned")).get("prev_content")).get("membership")
        if joined_at is None and membership == "join" and previous != "join":
            joined_at = index
            if previous == "invite":
                continue  # look further back for the invite itself
            return events[index:], True
        if joined_at is not None and membership == "invite":
            return events[index:], True
    if joined_at is not None:
        return events[joined_at:], True
    return events, False


class _Outage:
    """Backoff with a single log line when the homeserver goes away and one when it is back.

    Failures that reached the homeserver (errors, timeouts, broken connections) back off exponentially;
    while it refuses connections (down or restarting) the loop asks again every `REFUSED_RETRY_S`, so
    syncing resumes within about a second of the homeserver listening again.
    """

    def __init__(self, bot_name: str) -> None:
        self._bot = bot_name
        self._retries = HomeserverRetries()
        self._attempts = 0
        self._since: float | None = None

    def failed(self, error: str, *, refused: bool = False) -> float:
        self._attempts += 1
        if self._since is None:
            self._since = time.monotonic()
            logger.warning("sync connection lost", agent=self._bot, error=error)
        return self._retries.wait(refused=refused)

    def recovered(self) -> None:
        if self._since is not None:
            downtime = round(time.monotonic() - self._since, 1)
            logger.info("sync connection restored", agent=self._bot, downtime_s=downtime, attempts=self._attempts)
        self._retries.reset()
        self._attempts = 0
        self._since = None


class SyncLoop:
    """One bot's sync: call `run()` from a task you own; cancel it to stop."""

    def __init__(
        self,
        *,
        bot_name: str,
        user_id: str,
        transport: JsonTransport,
        tokens: SyncTokens,
        join: Callable[[str], Awaitable[str]],
        leave: Callable[[str], Awaitable[None]],
        first_sync: asyncio.Event,
        poll_timeout_ms: int = _POLL_TIMEOUT_MS,
        decryption: SyncDecryption | None = None,
        settle_s: float = 0.0,
    ) -> None:
        self._bot = bot_name
        self._user_id = user_id
        self._transport = transport
        self._tokens = tokens
        self._join = join
        self._leave = leave
        self._first_sync = first_sync
        self._poll_timeout_ms = poll_timeout_ms
        self._decryption = decryption
        self._settle_s = settle_s
        self._unsaved: str | None = None
        self._saved_at = 0.0

    async def run(self, handler: EventHandler, on_invite: InviteHandler) -> None:
        """Sync forever; connection problems are retried with backoff, a revoked session raises."""
        token = self._tokens.load(self._bot)
        saved = token
        try:
            await self._loop(handler, on_invite, token)
        finally:
            # A cancelled loop still leaves its latest token on disk (see `_remember`).
            if self._unsaved is not None and self._unsaved != saved:
                self._tokens.save(self._bot, self._unsaved)

    def _remember(self, token: str) -> None:
        """Keep the newest token; write it at most every `_TOKEN_SAVE_INTERVAL_S` (and on stop).

        A token lost to a crash only means the batches since the last write are delivered again,
        which the daemon's persisted dedup absorbs; writing after every batch cost a file rename
        on the event loop for each message.
        """
        self._unsaved = token
        now = time.monotonic()
        if now - self._saved_at >= _TOKEN_SAVE_INTERVAL_S:
            self._tokens.save(self._bot, token)
            self._saved_at = now
            self._unsaved = None

    async def _loop(self, handler: EventHandler, on_invite: InviteHandler, token: str | None) -> None:
        outage = _Outage(self._bot)
        while True:
            try:
                reply = await self._fetch(token)
            except MatrixConnectionError as exc:
                await asyncio.sleep(outage.failed(str(exc), refused=exc.refused))
                continue
            if reply.status == 429:
                await asyncio.sleep(min(reply.retry_after_s, HOMESERVER_BACKOFF.max_s))
                continue
            if not reply.ok:
                if self._token_rejected(reply, token):
                    token = None
                    continue
                await asyncio.sleep(outage.failed(f"HTTP {reply.status} {reply.errcode or ''}".strip()))
                continue
            batch = _as_dict(reply.body)
            next_batch = batch.get("next_batch")
            if not isinstance(next_batch, str):
                await asyncio.sleep(outage.failed("sync reply without next_batch"))
                continue
            outage.recovered()
            try:
                if self._decryption is not None:
                    await self._decryption.absorb(batch)
                await self._handle_batch(batch, handler, on_invite, since=token)
            except MatrixConnectionError as exc:
                # The token stays put, so this batch is fetched and handled again once the server is back.
                await asyncio.sleep(outage.failed(str(exc), refused=exc.refused))
                continue
            if next_batch != token:
                self._remember(next_batch)
                token = next_batch
            if self._decryption is not None:
                try:
                    await self._decryption.settle(
                        lambda room_id, raw: self._deliver(room_id, raw, handler, decrypted=True)
                    )
                except MatrixConnectionError as exc:
                    await asyncio.sleep(outage.failed(str(exc), refused=exc.refused))
                    continue
            self._first_sync.set()
            if self._settle_s > 0 and _has_room_events(batch):
                # Busy rooms: let the next events gather for one reply instead of one long-poll each.
                await asyncio.sleep(self._settle_s)

    async def _fetch(self, token: str | None) -> JsonReply:
        if token is None:
            query = {"filter": _INITIAL_FILTER, "timeout": "0"}
            return await self._transport.request("GET", _SYNC_PATH, query=query, timeout=60.0)
        # The first sync of a run catches up without long-polling, so a restarted bot is ready at once.
        poll_ms = self._poll_timeout_ms if self._first_sync.is_set() else 0
        if self._decryption is not None:
            poll_ms = self._decryption.poll_timeout_ms(poll_ms)
        query = {"filter": _INCREMENTAL_FILTER, "since": token, "timeout": str(poll_ms)}
        http_timeout = self._poll_timeout_ms / 1000 + _HTTP_MARGIN_S
        return await self._transport.request("GET", _SYNC_PATH, query=query, timeout=http_timeout)

    def _token_rejected(self, reply: JsonReply, token: str | None) -> bool:
        """True when the server refused our token (start over); raise when the session itself is gone."""
        if reply.errcode in _SESSION_GONE or reply.status == 401:
            raise MatrixRequestError("sync", reply.errcode, reply.error, reply.status)
        if reply.status != 400:
            return False
        if token is None:
            raise MatrixRequestError("sync", reply.errcode, reply.error, reply.status)
        logger.warning(
            "sync token rejected; starting over", agent=self._bot, status=reply.status, errcode=reply.errcode
        )
        self._tokens.clear(self._bot)
        return True

    async def _handle_batch(
        self, batch: dict[str, Any], handler: EventHandler, on_invite: InviteHandler, *, since: str | None
    ) -> None:
        rooms = _as_dict(batch.get("rooms"))
        if since is not None:
            for room_id, joined in _as_dict(rooms.get("join")).items():
                timeline = _as_dict(_as_dict(joined).get("timeline"))
                events, joined_now = _events_after_own_join(_as_list(timeline.get("events")), self._user_id)
                prev_batch = timeline.get("prev_batch")
                if timeline.get("limited") is True and not joined_now and isinstance(prev_batch, str):
                    events = [*await self._backfill(room_id, prev_batch, since), *events]
                for raw in events:
                    await self._deliver(room_id, raw, handler)
            for room_id, left in _as_dict(rooms.get("leave")).items():
                # Kicked or banned: the bot hears of its own removal; the room's other events are not for it.
                for raw in _as_list(_as_dict(_as_dict(left).get("timeline")).get("events")):
                    if _is_own_membership(raw, self._user_id):
                        await self._deliver(room_id, raw, handler)
        for room_id, invited in _as_dict(rooms.get("invite")).items():
            await self._handle_invite(room_id, _as_dict(invited), on_invite)

    async def _backfill(self, room_id: str, prev_batch: str, since: str) -> list[Any]:
        """The events a limited timeline left out (between `since` and `prev_batch`), oldest first, bounded."""
        missing: list[Any] = []
        page_from = prev_batch
        path = f"/_matrix/client/v3/rooms/{quote_path(room_id)}/messages"
        while len(missing) < _BACKFILL_MAX_EVENTS:
            query = {"dir": "b", "from": page_from, "to": since, "limit": str(_BACKFILL_PAGE)}
            reply = await self._transport.request("GET", path, query=query)
            body = _as_dict(reply.body)
            chunk = _as_list(body.get("chunk"))
            if not reply.ok or not chunk:
                break
            missing.extend(chunk)
            end = body.get("end")
            if not isinstance(end, str) or end == page_from:
                break
            page_from = end
        logger.warning("timeline gap backfilled", agent=self._bot, room_id=room_id, events=len(missing))
        missing.reverse()
        return missing

    async def _deliver(self, room_id: str, raw: Any, handler: EventHandler, *, decrypted: bool = False) -> None:
        await deliver_raw(self._bot, self._decryption, room_id, raw, handler, decrypted=decrypted)

    async def _handle_invite(self, room_id: str, invited: dict[str, Any], on_invite: InviteHandler) -> None:
        inviter = inviter_of(_as_list(_as_dict(invited.get("invite_state")).get("events")), self._user_id)
        await answer_invite(self._bot, room_id, inviter, on_invite, self._join, self._leave)
