"""Encrypted events whose room key has not arrived: parked, retried after every sync, answered with a notice.

A sender's client may share a room key late (or, when it left the bot's device out, never). `SyncDecryption`
is what the sync loop asks: it decrypts, parks what it cannot read yet and requests the key, delivers a parked
event once its key arrives, and after `NOTICE_AFTER_S` hands an event that stayed unreadable to a notice
callback.

Anyone in a room can send `m.room.encrypted` events with a made-up session and ciphertext, so all of that is
only for senders the daemon would answer there (the `SenderCheck` the bot gives its sync): a stranger's
unreadable event is dropped, with no key request sent to her device and no notice. Even an authorized
sender gets at most one notice per room every `NOTICE_INTERVAL_S` (whatever sessions her events name), at
most `MAX_PARKED_PER_SENDER` of her events wait for keys, and no notice goes into a room that is not
encrypted.

A bot whose crypto store was lost comes back as a new device with its room keys restored from the key backup
(`restored_at_ms`). The messages sent before that (while the store was lost) are *held* ones: after each batch
the bot logs how many of them it read with the restored keys, and each one it still cannot read is logged at
warning with its room and session (never its content), then waits for its key like any other.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mindroom.logging_config import get_logger
from mindroom.matrix.crypto.encryption import ENCRYPTED_TYPE, DeviceCrypto
from mindroom.matrix.errors import MatrixConnectionError, MatrixError
from mindroom.matrix.events import MatrixEvent, event_from_raw

__all__ = [
    "KEEP_PARKED_S",
    "MAX_PARKED_PER_SENDER",
    "NOTICE_AFTER_S",
    "NOTICE_INTERVAL_S",
    "UNDECRYPTABLE_NOTICE",
    "ParkedEvent",
    "SenderCheck",
    "SyncDecryption",
    "UndecryptedEvents",
    "UnreadableHandler",
    "is_encrypted",
]

logger = get_logger(__name__)

UNDECRYPTABLE_NOTICE = (
    "I could not read your message: it was encrypted for devices I don't have keys for. "
    "Try sending it again, or check that your client shares keys with unverified devices."
)
NOTICE_AFTER_S = 5.0
NOTICE_INTERVAL_S = 600.0
"""A sender gets at most one notice per room in this time, however many sessions her events name."""
KEEP_PARKED_S = 600.0
MAX_PARKED_PER_SENDER = 50
"""The most events of one sender that wait for keys; a newer one pushes her oldest out."""
_MAX_PARKED = 500
_MAX_NOTICED = 5000

UnreadableHandler = Callable[[MatrixEvent], Awaitable[None]]
"""Called with an event that stayed unreadable for `NOTICE_AFTER_S` (see `UndecryptedEvents.due_notices`)."""
SenderCheck = Callable[[str, str], bool]
"""`(room_id, sender)` -> True when the daemon would answer that sender in that room."""
_Decrypt = Callable[[str, Mapping[str, Any]], dict[str, Any] | None]


def is_encrypted(raw: Any) -> bool:
    """True for a raw `m.room.encrypted` room event."""
    return isinstance(raw, dict) and raw.get("type") == ENCRYPTED_TYPE


@dataclass(slots=True)
class ParkedEvent:
    """An encrypted event waiting for its room key."""

    room_id: str
    raw: dict[str, Any]
    parked_at: float

    @property
    def session(self) -> tuple[str, str]:
        """(sender, megolm session id): the unit that gets at most one notice."""
        content = self.raw.get("content")
        session_id = content.get("session_id") if isinstance(content, dict) else None
        return str(self.raw.get("sender", "")), str(session_id or self.raw.get("event_id", ""))


class UndecryptedEvents:
    """The parked events of one device, oldest first, with the sender sessions already settled and the time
    each sender was last given a notice in each room."""

    def __init__(
        self,
        *,
        notice_after_s: float = NOTICE_AFTER_S,
        notice_interval_s: float = NOTICE_INTERVAL_S,
        keep_s: float = KEEP_PARKED_S,
        max_per_sender: int = MAX_PARKED_PER_SENDER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._notice_after_s = notice_after_s
        self._notice_interval_s = notice_interval_s
        self._keep_s = keep_s
        self._max_per_sender = max_per_sender
        self._clock = clock
        self._parked: OrderedDict[str, ParkedEvent] = OrderedDict()
        self._noticed: OrderedDict[tuple[str, str], None] = OrderedDict()
        # (sender, room) -> when she was last given a notice there
        self._told: OrderedDict[tuple[str, str], float] = OrderedDict()

    def __len__(self) -> int:
        return len(self._parked)

    def park(self, room_id: str, raw: Mapping[str, Any]) -> bool:
        """Keep `raw` until its key arrives; False when it is already parked.

        Past `MAX_PARKED_PER_SENDER` events of its sender, her oldest one is dropped.
        """
        event_id = str(raw.get("event_id", ""))
        if event_id in self._parked:
            return False
        parked = ParkedEvent(room_id, dict(raw), self._clock())
        sender = parked.session[0]
        hers = [key for key, other in self._parked.items() if other.session[0] == sender]
        for dropped in hers[: max(0, len(hers) + 1 - self._max_per_sender)]:
            del self._parked[dropped]
            logger.info("unreadable event dropped: too many from one sender", event_id=dropped, sender=sender)
        self._parked[event_id] = parked
        while len(self._parked) > _MAX_PARKED:
            self._parked.popitem(last=False)
        return True

    def readable(self, decrypt: _Decrypt) -> list[tuple[str, dict[str, Any]]]:
        """Parked events that decrypt now (removed from the lot); events parked too long are dropped."""
        opened: list[tuple[str, dict[str, Any]]] = []
        expired = self._clock() - self._keep_s
        for event_id, parked in list(self._parked.items()):
            decrypted = decrypt(parked.room_id, parked.raw)
            if decrypted is not None:
                opened.append((parked.room_id, decrypted))
                del self._parked[event_id]
            elif parked.parked_at < expired:
                del self._parked[event_id]
                logger.info("unreadable event given up", room_id=parked.room_id, event_id=event_id)
        return opened

    def due_notices(self) -> list[ParkedEvent]:
        """The overdue events that get a notice: the first of each sender session, unless its sender had one in
        that room within `NOTICE_INTERVAL_S`. Every overdue session is settled (it gets no later notice)."""
        due: list[ParkedEvent] = []
        now = self._clock()
        deadline = now - self._notice_after_s
        for parked in self._parked.values():
            if parked.parked_at > deadline or parked.session in self._noticed:
                continue
            self._noticed[parked.session] = None
            told = (parked.session[0], parked.room_id)
            if now - self._told.get(told, -math.inf) < self._notice_interval_s:
                continue
            self._told[told] = now
            self._told.move_to_end(told)
            due.append(parked)
        while len(self._noticed) > _MAX_NOTICED:
            self._noticed.popitem(last=False)
        while len(self._told) > _MAX_NOTICED:
            self._told.popitem(last=False)
        return due

    def notice_failed(self, parked: ParkedEvent) -> None:
        """The notice for `parked` did not go out (the homeserver was away): it is due again."""
        self._noticed.pop(parked.session, None)
        self._told.pop((parked.session[0], parked.room_id), None)

    def seconds_to_next_notice(self) -> float | None:
        """How long until a parked event is due a notice; None when none will be."""
        waiting = [p.parked_at for p in self._parked.values() if p.session not in self._noticed]
        if not waiting:
            return None
        return max(0.0, min(waiting) + self._notice_after_s - self._clock())


class SyncDecryption:
    """The sync loop's side of encryption: feed each batch to the crypto, open events, settle after the batch."""

    def __init__(
        self,
        crypto: DeviceCrypto,
        name: str,
        on_unreadable: UnreadableHandler | None = None,
        waiting: UndecryptedEvents | None = None,
        *,
        authorized: SenderCheck | None = None,
        restored_at_ms: int | None = None,
    ) -> None:
        """`authorized`: whose unreadable events are parked, asked a key for and answered (None: everyone's);
        `restored_at_ms`: when the device's room keys came back from the key backup in this run, if they did."""
        self.crypto = crypto
        self._name = name
        self._on_unreadable = on_unreadable
        self._authorized = authorized
        self._restored_at_ms = restored_at_ms
        self._held_read = 0
        self.waiting = waiting if waiting is not None else UndecryptedEvents()  # an empty one is falsy

    def held(self, raw: Mapping[str, Any]) -> bool:
        """True for an event sent before this device's room keys were restored from the key backup (in this run):
        one that came while the bot's crypto store was lost."""
        if self._restored_at_ms is None:
            return False
        timestamp = raw.get("origin_server_ts")
        return isinstance(timestamp, int) and timestamp < self._restored_at_ms

    def _answers(self, room_id: str, sender: Any) -> bool:
        return self._authorized is None or (isinstance(sender, str) and self._authorized(room_id, sender))

    async def absorb(self, batch: Mapping[str, Any]) -> None:
        """Room keys, device changes and room state of one batch, before its events are opened."""
        await self.crypto.absorb(batch)

    def open(self, room_id: str, raw: Mapping[str, Any]) -> dict[str, Any] | None:
        """The decrypted event, or None after parking it and queueing a request for its key.

        A redacted encrypted event has no ciphertext left: it comes back as it is, with nothing to read.
        An unreadable event of a sender the daemon would not answer there is dropped.
        """
        content = raw.get("content")
        if not (isinstance(content, dict) and content.get("ciphertext")):
            return dict(raw)
        decrypted = self.crypto.decrypt(room_id, raw)
        if decrypted is not None:
            if self.held(raw):
                self._held_read += 1
            return decrypted
        if not self._answers(room_id, raw.get("sender")):
            logger.info(
                "unreadable event of an unauthorized sender dropped",
                agent=self._name,
                room_id=room_id,
                event_id=raw.get("event_id"),
                sender=raw.get("sender"),
            )
            return None
        if self.waiting.park(room_id, raw):
            if self.held(raw):
                logger.warning(
                    "held message still unreadable after the key restore",
                    agent=self._name,
                    room_id=room_id,
                    session_id=content.get("session_id"),
                    event_id=raw.get("event_id"),
                )
            requested = self.crypto.request_key(room_id, raw)
            logger.info(
                "encrypted event not readable yet",
                agent=self._name,
                room_id=room_id,
                event_id=raw.get("event_id"),
                sender=raw.get("sender"),
                key_requested=requested,
            )
        return None

    async def settle(self, deliver: Callable[[str, dict[str, Any]], Awaitable[None]]) -> None:
        """After a batch: deliver parked events whose keys came, send due notices, then keys work nio asks for."""
        for room_id, decrypted in self.waiting.readable(self.crypto.decrypt):
            logger.info("late room key arrived", agent=self._name, room_id=room_id, event_id=decrypted.get("event_id"))
            if self.held(decrypted):
                self._held_read += 1
            await deliver(room_id, decrypted)
        if self._held_read:
            logger.info("held messages decrypted after the key restore", agent=self._name, messages=self._held_read)
            self._held_read = 0
        if self._on_unreadable is not None:
            for parked in self.waiting.due_notices():
                await self._notify(parked)
        await self.crypto.maintain()

    async def _notify(self, parked: ParkedEvent) -> None:
        assert self._on_unreadable is not None
        event = event_from_raw(parked.room_id, parked.raw, encrypted=True)
        if event is None or not self._answers(event.room_id, event.sender):  # the config may have changed
            return
        try:
            # Encrypted events in a plain room come from no client that shares keys: nothing to tell anyone.
            if not await self.crypto.room_encrypted(event.room_id):
                logger.info("unreadable event in a plain room not answered", agent=self._name, room_id=event.room_id)
                return
            await self._on_unreadable(event)
        except MatrixConnectionError:
            self.waiting.notice_failed(parked)
            raise
        except MatrixError as exc:
            logger.warning("unreadable-message notice failed", agent=self._name, room_id=event.room_id, error=str(exc))

    def poll_timeout_ms(self, default_ms: int) -> int:
        """The long-poll timeout, cut short when a notice falls due before it ends."""
        seconds = self.waiting.seconds_to_next_notice()
        if seconds is None or self._on_unreadable is None:
            return default_ms
        return min(default_ms, int(seconds * 1000) + 50)
