"""Splitting one appservice transaction into what each of the daemon's bots receives, as its own sync would.

The homeserver sends the daemon each event once. `TransactionRouter` follows which rooms each bot is in (from
its joined rooms at sign-in, then the member events themselves, in order) and gives each bot an `InboxPart`:
the events of its rooms, its own invites, the to-device messages of its device, its one-time key count and the
device-list changes, which its `Inbox` then opens with its own keys and hands to its handler.

A bot that is signed in but not receiving (between its sign-in and its first delivery, or between two instances
when a reload restarts it) cannot take events now, and must not lose them: a transaction that concerns such a
bot is refused as a whole, so the homeserver keeps it and sends it again (the appservice pings the homeserver
when the bot is back, which makes it retry at once). A bot held longer than `HOLD_LIMIT_S` is given up.
"""

from __future__ import annotations

import itertools
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from mindroom.logging_config import get_logger

__all__ = ["HOLD_LIMIT_S", "Inbox", "InboxPart", "TransactionRouter"]

logger = get_logger(__name__)

HOLD_LIMIT_S = 120.0
"""How long a signed-in bot may keep the homeserver's transactions waiting before its events are dropped."""
_MEMBER = "m.room.member"
_TO_DEVICE_KEYS = ("de.sorunome.msc2409.to_device", "org.matrix.msc2409.to_device", "to_device")
_KEY_COUNT_KEYS = ("org.matrix.msc3202.device_one_time_keys_count", "org.matrix.msc3202.device_one_time_key_counts")
_DEVICE_LISTS_KEY = "org.matrix.msc3202.device_lists"
_REMEMBERED_TRANSACTIONS = 256
_VIEWS = itertools.count(1)


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


@dataclass(slots=True)
class InboxPart:
    """What one transaction holds for one bot, in the order it happened."""

    entries: list[tuple[str, dict[str, Any], bool]] = field(default_factory=list)
    """(room id, raw event, after_invite): after_invite marks the bot's own join that followed an invite, before
    which the events people wrote meanwhile are fetched (the homeserver sent them to nobody)."""
    invites: list[tuple[str, str]] = field(default_factory=list)
    """(room id, inviter) of each invite of the bot."""
    to_device: list[dict[str, Any]] = field(default_factory=list)
    key_counts: dict[str, Any] | None = None
    device_lists: dict[str, Any] | None = None

    def crypto_view(self) -> dict[str, Any] | None:
        """The part as a sync batch for the bot's crypto (to-device, device lists, key counts, room state); None
        when it holds nothing the crypto reads."""
        joined: dict[str, Any] = {}
        for room_id, raw, _ in self.entries:
            if "state_key" in raw:
                room = joined.setdefault(room_id, {"state": {"events": []}, "timeline": {"events": []}})
                room["timeline"]["events"].append(raw)
        if not (joined or self.to_device or self.key_counts or self.device_lists):
            return None
        # nio ignores a batch whose position it has seen: every view gets a new one.
        view: dict[str, Any] = {"next_batch": f"appservice-{next(_VIEWS)}", "rooms": {"join": joined}}
        if self.to_device:
            view["to_device"] = {"events": self.to_device}
        if self.device_lists:
            view["device_lists"] = self.device_lists
        if self.key_counts:
            view["device_one_time_keys_count"] = self.key_counts
        return view


class Inbox(Protocol):
    """One bot's receiving end: its account and device, and what it does with its part of a transaction."""

    @property
    def user_id(self) -> str: ...  # pragma: no cover - a protocol

    @property
    def device_id(self) -> str: ...  # pragma: no cover - a protocol

    async def receive(self, part: InboxPart) -> None: ...  # pragma: no cover - a protocol


@dataclass(slots=True)
class _Account:
    rooms: set[str] | None = None
    """The rooms the bot has joined, as far as the transactions so far tell; None until first known."""
    inbox: Inbox | None = None
    holders: int = 0
    """Clients signed in as this account (two while a reload hands a bot over)."""
    held_since: float = field(default_factory=time.monotonic)
    given_up: bool = False
    key_counts: dict[str, Any] | None = None
    """The one-time key count last given to the inbox: the homeserver repeats it in every transaction, and a
    count that did not change is not given again (the bot would spend a turn of its crypto on each)."""


class TransactionRouter:
    """The daemon's bots by user id, which rooms each is in, and each transaction split among them."""

    def __init__(self, *, hold_limit_s: float = HOLD_LIMIT_S) -> None:
        self._accounts: dict[str, _Account] = {}
        self._hold_limit_s = hold_limit_s
        self._done: OrderedDict[str, set[str]] = OrderedDict()

    # -- accounts --------------------------------------------------------------------------------------
    def register(self, user_id: str) -> None:
        """A client signed in as `user_id`: its transactions wait for it from now on."""
        account = self._accounts.setdefault(user_id, _Account())
        account.holders += 1
        if account.inbox is None:
            account.held_since, account.given_up = time.monotonic(), False

    def set_rooms(self, user_id: str, rooms: Iterable[str]) -> None:
        """The rooms `user_id` has joined, as the homeserver listed them at sign-in (unless already followed)."""
        account = self._accounts.get(user_id)
        if account is not None and account.rooms is None:
            account.rooms = set(rooms)

    def release(self, user_id: str) -> None:
        """A client signed in as `user_id` closed; with none left, the account is forgotten."""
        account = self._accounts.get(user_id)
        if account is None:
            return
        account.holders -= 1
        if account.holders <= 0 and account.inbox is None:
            del self._accounts[user_id]

    def attach(self, inbox: Inbox) -> None:
        """`inbox` receives its account's events from now on (the account must be registered)."""
        account = self._accounts.setdefault(inbox.user_id, _Account())
        account.inbox = inbox
        account.key_counts = None  # a new inbox (a restarted bot) hears the count once more
        if account.rooms is None:
            account.rooms = set()

    def detach(self, inbox: Inbox, *, hold: bool) -> None:
        """`inbox` stops receiving; with `hold`, its account's transactions wait for the next one (a restart)."""
        account = self._accounts.get(inbox.user_id)
        if account is None or account.inbox is not inbox:
            return
        account.inbox = None
        account.held_since, account.given_up = time.monotonic(), not hold
        if account.holders <= 0:
            del self._accounts[inbox.user_id]

    def rooms_of(self, user_id: str) -> frozenset[str]:
        """The rooms `user_id` is in, as the router follows them."""
        account = self._accounts.get(user_id)
        return frozenset(account.rooms or ()) if account is not None else frozenset()

    def readers(self) -> dict[str, str]:
        """Each room a receiving bot is in, with one such bot (which reads the room when the daemon catches up)."""
        readers: dict[str, str] = {}
        for user, account in self._accounts.items():
            if account.inbox is not None:
                for room_id in sorted(account.rooms or ()):
                    readers.setdefault(room_id, user)
        return readers

    # -- transactions ----------------------------------------------------------------------------------
    def waiting_for(self, body: Mapping[str, Any]) -> list[str]:
        """The held accounts this transaction concerns: while there are any, it is refused."""
        held = {user: account for user, account in self._accounts.items() if self._holding(user, account)}
        if not held:
            return []
        concerned: set[str] = set()
        for raw in _as_list(body.get("events")):
            event = _as_dict(raw)
            room_id, state_key = event.get("room_id"), event.get("state_key")
            for user, account in held.items():
                if (event.get("type") == _MEMBER and state_key == user) or (account.rooms and room_id in account.rooms):
                    concerned.add(user)
        for message in self._to_device(body):
            if message.get("to_user_id") in held:
                concerned.add(str(message["to_user_id"]))
        if _as_dict(body.get(_DEVICE_LISTS_KEY)).get("changed"):
            concerned |= set(held)  # a device list change missed now would leave the bot encrypting for old devices
        return sorted(concerned)

    def _holding(self, user_id: str, account: _Account) -> bool:
        if account.inbox is not None or account.given_up:
            return False
        if time.monotonic() - account.held_since <= self._hold_limit_s:
            return True
        account.given_up = True
        logger.warning("bot kept transactions waiting too long; its events are dropped", user_id=user_id)
        return False

    def split(self, txn_id: str, body: Mapping[str, Any]) -> dict[str, tuple[Inbox, InboxPart]]:
        """Each receiving bot's part of the transaction (following memberships as it goes); bots that already
        received this transaction (before a retry) are left out. `txn_id` is a key unique to the transaction:
        the homeserver's own ids may start again from 1 after it restarted."""
        receiving = {user: account for user, account in self._accounts.items() if account.inbox is not None}
        done = self._done.get(txn_id, set())
        parts: dict[str, InboxPart] = {}

        def part(user: str) -> InboxPart:
            return parts.setdefault(user, InboxPart())

        for raw in _as_list(body.get("events")):
            event = _as_dict(raw)
            room_id = event.get("room_id")
            if not isinstance(room_id, str):
                continue
            subject = event.get("state_key") if event.get("type") == _MEMBER else None
            removed: str | None = None
            if subject in receiving:
                removed = self._own_membership(subject, room_id, event, part)
            for user, account in receiving.items():
                if account.rooms is not None and room_id in account.rooms:
                    part(user).entries.append((room_id, event, subject == user and _follows_invite(event)))
            if removed is not None:
                rooms = receiving[removed].rooms
                if rooms is not None:
                    rooms.discard(room_id)
        for message in self._to_device(body):
            recipient = message.get("to_user_id")
            inbox = receiving[recipient].inbox if isinstance(recipient, str) and recipient in receiving else None
            if inbox is not None and message.get("to_device_id") == inbox.device_id:
                part(inbox.user_id).to_device.append(message)
        counts = next((_as_dict(body[key]) for key in _KEY_COUNT_KEYS if key in body), {})
        for owner, devices in counts.items():
            inbox = receiving[owner].inbox if owner in receiving else None
            mine = _as_dict(devices).get(inbox.device_id) if inbox is not None else None
            if isinstance(mine, dict) and mine != receiving[owner].key_counts:
                receiving[owner].key_counts = mine
                part(owner).key_counts = mine
        device_lists = _as_dict(body.get(_DEVICE_LISTS_KEY))
        if _as_list(device_lists.get("changed")) or _as_list(device_lists.get("left")):
            for user in receiving:
                part(user).device_lists = device_lists
        result: dict[str, tuple[Inbox, InboxPart]] = {}
        for user, piece in parts.items():
            inbox = receiving[user].inbox
            if user not in done and inbox is not None:
                result[user] = (inbox, piece)
        return result

    def _own_membership(
        self, user: str, room_id: str, event: dict[str, Any], part: Callable[[str], InboxPart]
    ) -> str | None:
        """Follow a member event of one of the bots; returns the bot when it just left the room (it still hears
        of that, then nothing more)."""
        account = self._accounts[user]
        rooms = account.rooms if account.rooms is not None else set()
        account.rooms = rooms
        membership = _as_dict(event.get("content")).get("membership")
        if membership == "join":
            rooms.add(room_id)
        elif membership == "invite" and room_id not in rooms:
            sender = event.get("sender")
            part(user).invites.append((room_id, sender if isinstance(sender, str) else ""))
        elif membership in ("leave", "ban") and room_id in rooms:
            return user
        return None

    def received(self, txn_id: str, user_id: str) -> None:
        """`user_id` has its part of `txn_id`: a retry of the transaction leaves it out."""
        self._done.setdefault(txn_id, set()).add(user_id)
        self._done.move_to_end(txn_id)
        while len(self._done) > _REMEMBERED_TRANSACTIONS:
            self._done.popitem(last=False)

    @staticmethod
    def _to_device(body: Mapping[str, Any]) -> list[dict[str, Any]]:
        for key in _TO_DEVICE_KEYS:
            if key in body:
                return [message for message in _as_list(body[key]) if isinstance(message, dict)]
        return []


def _follows_invite(event: Mapping[str, Any]) -> bool:
    """True for a join whose previous membership was an invite."""
    content = _as_dict(event.get("content"))
    previous = _as_dict(_as_dict(event.get("unsigned")).get("prev_content"))
    return content.get("membership") == "join" and previous.get("membership") == "invite"
