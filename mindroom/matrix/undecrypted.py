"""Encrypted events whose room key has not arrived: parked, retried after every sync, one notice per session.

A sender's client may share a room key late (or, when it left the bot's device out, never). `SyncDecryption`
is what the sync loop asks: it decrypts, parks what it cannot read yet and requests the key, delivers a parked
event once its key arrives, and after `NOTICE_AFTER_S` hands the first unreadable event of each sender session
(sender + session id) to a notice callback, once.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mindroom.logging_config import get_logger
from mindroom.matrix.crypto import ENCRYPTED_TYPE, DeviceCrypto
from mindroom.matrix.errors import MatrixConnectionError, MatrixError
from mindroom.matrix.events import MatrixEvent, event_from_raw

__all__ = [
    "KEEP_PARKED_S",
    "NOTICE_AFTER_S",
    "UNDECRYPTABLE_NOTICE",
    "ParkedEvent",
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
KEEP_PARKED_S = 600.0
_MAX_PARKED = 500
_MAX_NOTICED = 5000

UnreadableHandler = Callable[[MatrixEvent], Awaitable[None]]
"""Called once per sender session with the first event of it that stayed unreadable for `NOTICE_AFTER_S`."""
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
    """The parked events of one device, oldest first, with the sender sessions already answered."""

    def __init__(
        self,
        *,
        notice_after_s: float = NOTICE_AFTER_S,
        keep_s: float = KEEP_PARKED_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._notice_after_s = notice_after_s
        self._keep_s = keep_s
        self._clock = clock
        self._parked: OrderedDict[str, ParkedEvent] = OrderedDict()
        self._noticed: OrderedDict[tuple[str, str], None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._parked)

    def park(self, room_id: str, raw: Mapping[str, Any]) -> bool:
        """Keep `raw` until its key arrives; False when it is already parked."""
        event_id = str(raw.get("event_id", ""))
        if event_id in self._parked:
            return False
        self._parked[event_id] = ParkedEvent(room_id, dict(raw), self._clock())
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
        """The first overdue event of each sender session that has had no notice yet (now marked as noticed)."""
        due: list[ParkedEvent] = []
        deadline = self._clock() - self._notice_after_s
        for parked in self._parked.values():
            if parked.parked_at > deadline or parked.session in self._noticed:
                continue
            self._noticed[parked.session] = None
            due.append(parked)
        while len(self._noticed) > _MAX_NOTICED:
            self._noticed.popitem(last=False)
        return due

    def notice_failed(self, parked: ParkedEvent) -> None:
        """The notice for `parked` did not go out (the homeserver was away): it is due again."""
        self._noticed.pop(parked.session, None)

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
    ) -> None:
        self.crypto = crypto
        self._name = name
        self._on_unreadable = on_unreadable
        self.waiting = waiting or UndecryptedEvents()

    async def absorb(self, batch: Mapping[str, Any]) -> None:
        """Room keys, device changes and room state of one batch, before its events are opened."""
        await self.crypto.absorb(batch)

    def open(self, room_id: str, raw: Mapping[str, Any]) -> dict[str, Any] | None:
        """The decrypted event, or None after parking it and queueing a request for its key.

        A redacted encrypted event has no ciphertext left: it comes back as it is, with nothing to read.
        """
        content = raw.get("content")
        if not (isinstance(content, dict) and content.get("ciphertext")):
            return dict(raw)
        decrypted = self.crypto.decrypt(room_id, raw)
        if decrypted is not None:
            return decrypted
        if self.waiting.park(room_id, raw):
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
            await deliver(room_id, decrypted)
        if self._on_unreadable is not None:
            for parked in self.waiting.due_notices():
                await self._notify(parked)
        await self.crypto.maintain()

    async def _notify(self, parked: ParkedEvent) -> None:
        assert self._on_unreadable is not None
        event = event_from_raw(parked.room_id, parked.raw, encrypted=True)
        if event is None:
            return
        try:
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
