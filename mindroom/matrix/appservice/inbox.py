"""`BotInbox`: one bot's receiving end in appservice mode, doing with its part of a transaction what its sync did.

Its crypto takes the part's to-device messages, device lists, key count and room state first; then each event
is opened with the bot's own keys (or parked until they come) and handed to the bot's handler, and invites are
answered. After a join that followed an invite it first fetches what people wrote between the two: the
homeserver sent that to nobody when no bot of the daemon was in the room yet (a new DM). Notices for events
that stay unreadable go out on a timer, since there is no long-poll to cut short.

At the start of a run, `catch_up` asks the homeserver (a sync without room events) for invites made before the
bot could receive any, its one-time key count, and the to-device messages its device's inbox kept: the
homeserver leaves those out of every transaction while it counts the service as down (after a failed one,
until its retries got through), so the room keys of that time come from there. It leaves a sync position for
the bot's next run. The same look into the device's inbox is taken again when an event arrives whose room key
the bot lacks: the key may be one of those the homeserver left out. At most every `_INBOX_RECHECK_S`: an
event that comes sooner after the last look gets one as soon as that pause is over (not only with the next
such event, or `tidy`). And every `TIDY_INTERVAL_S` (`tidy`), so the homeserver can drop what the bot has
taken. A message is taken once, whichever way it came first: decrypting one twice fails, and nio then starts
a new Olm session with its sender.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import replace
from typing import Any

from mindroom.logging_config import get_logger
from mindroom.matrix.appservice.transactions import InboxPart
from mindroom.matrix.crypto.undecrypted import SyncDecryption, is_encrypted
from mindroom.matrix.delivery import REFUSED_RETRY_S, HomeserverRetries
from mindroom.matrix.errors import MatrixConnectionError, MatrixRequestError
from mindroom.matrix.inbound import EventHandler, InviteHandler, answer_invite, deliver_raw, inviter_of
from mindroom.matrix.transport import JsonTransport, quote_path
from mindroom.state.tokens import SyncTokens
from mindroom.tasks import TaskOwner

__all__ = ["TIDY_INTERVAL_S", "BotInbox"]

logger = get_logger(__name__)

_SYNC_PATH = "/_matrix/client/v3/sync"
_WINDOW_LIMIT = 100
_CATCH_UP_PAGES = 20
_INBOX_RECHECK_S = 2.0
_DEVICE_KEYS = ("to_device", "device_lists", "device_one_time_keys_count")
_REMEMBERED_MESSAGES = 4096
TIDY_INTERVAL_S = 300.0
"""How often a receiving bot reads its device's inbox, so the homeserver can drop what came in transactions."""
"""At most this many catch-up syncs per run (the homeserver gives at most 100 to-device messages in each)."""
# Invites, the key count and a position; no room events, state, receipts or typing.
_CATCH_UP_FILTER = json.dumps(
    {
        "presence": {"types": []},
        "account_data": {"types": []},
        "room": {
            "timeline": {"limit": 0},
            "state": {"types": []},
            "ephemeral": {"types": []},
            "account_data": {"types": []},
        },
    },
    separators=(",", ":"),
)
_SESSION_GONE = frozenset({"M_UNKNOWN_TOKEN", "M_MISSING_TOKEN", "M_USER_DEACTIVATED"})


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _message_key(message: Any) -> str:
    """The same to-device message, whether a transaction or the device's inbox brought it."""
    fields = _as_dict(message)
    parts = [fields.get("sender"), fields.get("type"), fields.get("content")]
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


class BotInbox:
    """One bot's deliveries from appservice transactions; `close()` ends the tasks it owns."""

    def __init__(
        self,
        *,
        bot_name: str,
        user_id: str,
        device_id: str,
        transport: JsonTransport,
        decryption: SyncDecryption,
        handler: EventHandler,
        on_invite: InviteHandler,
        join: Callable[[str], Awaitable[str]],
        leave: Callable[[str], Awaitable[None]],
    ) -> None:
        self._bot = bot_name
        self._user_id = user_id
        self._device_id = device_id
        self._transport = transport
        self._decryption = decryption
        self._handler = handler
        self._on_invite = on_invite
        self._join = join
        self._leave = leave
        self._lock = asyncio.Lock()
        self._tasks = TaskOwner(bot_name)
        self._notice_timer: asyncio.Task[None] | None = None
        self._recheck: asyncio.Task[None] | None = None
        self._answered: set[str] = set()
        self._tokens: SyncTokens | None = None
        self._inbox_checked_at = -_INBOX_RECHECK_S
        self._seen: OrderedDict[str, None] = OrderedDict()
        """The to-device messages taken lately, so the device's inbox does not bring them a second time."""
        """Rooms whose invite the catch-up answered: the same invite in a transaction is not answered twice."""

    @property
    def user_id(self) -> str:
        """The bot's Matrix user id."""
        return self._user_id

    @property
    def device_id(self) -> str:
        """The bot's device: the to-device messages and key count of this device are its."""
        return self._device_id

    async def receive(self, part: InboxPart) -> None:
        """Take one transaction's part: crypto first, then the events in order, then invites (answered aside)."""
        async with self._lock:
            if part.to_device:
                part = replace(part, to_device=self._new_messages(part.to_device))
            view = part.crypto_view()
            if view is not None:
                await self._decryption.absorb(view)
            waiting = self._decryption.waiting
            parked = len(waiting)
            encrypted = False
            for room_id, raw, after_invite in part.entries:
                if after_invite:
                    encrypted = True  # a join: whatever came before it may have been
                    for earlier in await self._since_invite(room_id, raw):
                        await self._deliver(room_id, earlier)
                encrypted = encrypted or is_encrypted(raw)
                await self._deliver(room_id, raw)
            if len(waiting) > parked:
                await self._look_for_keys()
            # Plain events alone, with nothing for the crypto and nothing parked: nothing for `_settle` to do
            # (most parts of a room with many bots are one plain event for each).
            if view is not None or encrypted or waiting:
                await self._settle()
        for room_id, inviter in part.invites:
            if room_id in self._answered:
                self._answered.discard(room_id)
                continue
            self._spawn(answer_invite(self._bot, room_id, inviter, self._on_invite, self._join, self._leave))

    async def tidy(self) -> None:
        """Read the device's inbox (what the homeserver left out of transactions, if anything) and move the
        bot's position on, so the homeserver can drop the messages before it."""
        async with self._lock:
            await self._read_later_messages()
            await self._settle()

    async def _look_for_keys(self) -> None:
        """Read the device's inbox for room keys a transaction left out: now, or when the pause since the last
        read is over (the key of an event that came just after a read would otherwise wait for `tidy`)."""
        wait = self._inbox_checked_at + _INBOX_RECHECK_S - time.monotonic()
        if wait <= 0:
            await self._read_later_messages()
        elif self._recheck is None or self._recheck.done():
            self._recheck = asyncio.create_task(self._look_again_after(wait), name=f"inbox-{self._bot}")

    async def _look_again_after(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        try:
            async with self._lock:
                if self._decryption.waiting:
                    await self._read_later_messages()
                    await self._settle()
        except MatrixConnectionError as exc:
            logger.warning("device inbox not read", agent=self._bot, error=str(exc))

    async def _read_later_messages(self) -> None:
        if self._tokens is None:
            return
        try:
            await self._read_device_inbox(self._tokens, answer_invites=False, patient=False)
        except MatrixConnectionError as exc:
            logger.warning("device inbox not read", agent=self._bot, error=str(exc))

    def _new_messages(self, messages: list[Any]) -> list[Any]:
        """The messages not taken yet (now remembered as taken)."""
        new = []
        for message in messages:
            key = _message_key(message)
            if key not in self._seen:
                self._seen[key] = None
                new.append(message)
        while len(self._seen) > _REMEMBERED_MESSAGES:
            self._seen.popitem(last=False)
        return new

    async def _deliver(self, room_id: str, raw: Any, *, decrypted: bool = False) -> None:
        await deliver_raw(self._bot, self._decryption, room_id, raw, self._handler, decrypted=decrypted)

    async def _settle(self) -> None:
        """Parked events whose keys came, due notices, the device's key work; then the timer for the next notice."""
        await self._decryption.settle(lambda room_id, raw: self._deliver(room_id, raw, decrypted=True))
        seconds = self._decryption.waiting.seconds_to_next_notice()
        if seconds is not None and (self._notice_timer is None or self._notice_timer.done()):
            self._notice_timer = asyncio.create_task(self._notice_after(seconds), name=f"notices-{self._bot}")

    async def _notice_after(self, seconds: float) -> None:
        await asyncio.sleep(seconds + 0.05)
        try:
            async with self._lock:
                self._notice_timer = None
                if self._decryption.waiting:
                    # A last look before telling anyone their message could not be read: the key may have come
                    # while the homeserver left to-device messages out of its transactions.
                    await self._read_later_messages()
                await self._settle()
        except MatrixConnectionError as exc:
            logger.warning("unreadable-message notices postponed", agent=self._bot, error=str(exc))
            self._notice_timer = asyncio.create_task(self._notice_after(REFUSED_RETRY_S), name=f"notices-{self._bot}")

    async def _since_invite(self, room_id: str, join: dict[str, Any]) -> list[Any]:
        """The events between the bot's invite and its join `join`, oldest first (the invite included)."""
        path = f"/_matrix/client/v3/rooms/{quote_path(room_id)}/messages"
        reply = await self._transport.request("GET", path, query={"dir": "b", "limit": str(_WINDOW_LIMIT)})
        chunk = _as_list(_as_dict(reply.body).get("chunk")) if reply.ok else []
        window: list[Any] = []
        seen_join = False
        for raw in chunk:  # newest first
            event = _as_dict(raw)
            if not seen_join:
                seen_join = event.get("event_id") == join.get("event_id")
                continue
            window.append(event)
            if event.get("type") == "m.room.member" and event.get("state_key") == self._user_id:
                window.reverse()
                if window:
                    logger.info("messages from before the join delivered", agent=self._bot, room_id=room_id)
                return window
        return []  # the invite is further back than one page: history, not news

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        self._tasks.spawn(work, "answering an invite", name=f"invite-{self._bot}")

    async def catch_up(self, tokens: SyncTokens) -> None:
        """Once per run, before receiving: invites made meanwhile, the key count, the to-device messages kept,
        a sync position for next time.

        Retries while the homeserver cannot be reached; a revoked session raises `MatrixRequestError`.
        """
        self._tokens = tokens
        await self._read_device_inbox(tokens, answer_invites=True)
        await self._decryption.crypto.maintain()

    async def _read_device_inbox(self, tokens: SyncTokens, *, answer_invites: bool, patient: bool = True) -> None:
        """Take what the device's inbox holds since the stored position (to-device messages not taken yet, device
        lists, key count; the invites too with `answer_invites`), and store the new position.

        `patient`: retry while the homeserver cannot be reached; else `MatrixConnectionError` is raised."""
        self._inbox_checked_at = time.monotonic()
        since = tokens.load(self._bot)
        for _ in range(_CATCH_UP_PAGES):
            body = await self._catch_up_sync(since, patient=patient)
            batch: dict[str, Any] = {key: body[key] for key in _DEVICE_KEYS if key in body}
            to_device = _as_list(_as_dict(body.get("to_device")).get("events"))
            new = self._new_messages(to_device)
            batch["to_device"] = {"events": new}
            await self._decryption.absorb({"next_batch": body.get("next_batch"), **batch})
            invites = _as_dict(_as_dict(body.get("rooms")).get("invite")) if answer_invites else {}
            for room_id, invited in invites.items():
                state = _as_list(_as_dict(_as_dict(invited).get("invite_state")).get("events"))
                await answer_invite(
                    self._bot, room_id, inviter_of(state, self._user_id), self._on_invite, self._join, self._leave
                )
                self._answered.add(room_id)
            next_batch = body.get("next_batch")
            if isinstance(next_batch, str):
                # Messages up to this position are taken: the homeserver may drop them from the device's inbox.
                tokens.save(self._bot, next_batch)
            if new:
                logger.info("to-device messages caught up", agent=self._bot, messages=len(new))
            if not to_device or not isinstance(next_batch, str) or next_batch == since:
                return
            since = next_batch

    async def _catch_up_sync(self, since: str | None, *, patient: bool) -> dict[str, Any]:
        query = {"filter": _CATCH_UP_FILTER, "timeout": "0", **({"since": since} if since else {})}
        retries = HomeserverRetries()
        while True:
            try:
                reply = await self._transport.request("GET", _SYNC_PATH, query=query, timeout=60.0)
            except MatrixConnectionError as exc:
                if not patient:
                    raise
                logger.warning("catching up failed; retrying", agent=self._bot, error=str(exc))
                await asyncio.sleep(retries.wait(refused=exc.refused))
                continue
            if reply.ok:
                return _as_dict(reply.body)
            if reply.errcode in _SESSION_GONE or reply.status == 401:
                raise MatrixRequestError("sync", reply.errcode, reply.error, reply.status)
            if reply.status == 400 and "since" in query:
                query.pop("since")  # a position the homeserver no longer knows: ask afresh
            elif reply.status == 429 or reply.status >= 500:
                await asyncio.sleep(retries.wait(refused=False))
            else:
                raise MatrixRequestError("sync", reply.errcode, reply.error, reply.status)

    async def close(self) -> None:
        """Cancel the invite answers, the notice timer and the inbox read still due, and wait for them."""
        timers = [timer for timer in (self._notice_timer, self._recheck) if timer is not None]
        for timer in timers:
            timer.cancel()
        await asyncio.gather(*timers, self._tasks.cancel_all(), return_exceptions=True)
