"""`VaultStore`: nio's crypto store for a device whose state lives in a shared vault (state in PostgreSQL).

nio reads its store once, when the olm machine loads, and writes each change as it happens. Here the
reads come from the bot's items already in memory and every write goes to the vault as one item (sealed,
queued for the database's writer session), so a standby on another machine loads the same device:
`account` (the olm account), `olm` (one per olm session), `megolm` (one per room key), `device` (the devices
of other users, with the trust given them), `room` (encrypted rooms) and `key_request`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from nio.crypto import (
    DeviceStore,
    GroupSessionStore,
    InboundGroupSession,
    OlmAccount,
    OlmDevice,
    Session,
    SessionStore,
    TrustState,
)
from nio.crypto.key_request import OutgoingKeyRequest
from nio.store import MatrixStore

from mindroom.matrix.crypto.bot_vault import BotVault

__all__ = ["DEVICE_KINDS", "RoomKeyListener", "VaultStore"]

DEVICE_KINDS = ("account", "olm", "key_request")
"""The kinds that belong to one device only: dropped when a new device replaces it (room keys stay)."""

RoomKeyListener = Callable[[InboundGroupSession], None]
"""Told of every room key the store saves (the key backup queues it)."""


def _time(value: Any) -> datetime:
    return datetime.fromtimestamp(float(value)) if isinstance(value, int | float) else datetime.now()


class VaultStore(MatrixStore):  # type: ignore[misc]
    """nio's store interface over one bot's vault items; nothing of nio's SQLite store is used."""

    def __init__(self, user_id: str, device_id: str, vault: BotVault, pickle_key: str) -> None:
        # MatrixStore's own constructor opens a SQLite file; this store has none.
        self.user_id = user_id
        self.device_id = device_id
        self.pickle_key = pickle_key
        self.store_path = ""
        self.database_name = ""
        self._vault = vault
        self.on_room_key: RoomKeyListener | None = None

    # -- the account and olm sessions ----------------------------------------------------------------

    def load_account(self) -> OlmAccount | None:
        """The device's olm account, or None when the vault has none for this device."""
        item = self._vault.get("account")
        if item is None or item.get("device_id") != self.device_id:
            return None
        return OlmAccount.from_pickle(str(item["pickle"]).encode(), self.pickle_key, bool(item.get("shared")))

    def save_account(self, account: OlmAccount) -> None:
        """Keep the account (its one-time keys change as they are used and published)."""
        pickle = account.pickle(self.pickle_key).decode()
        self._vault.put("account", "", {"device_id": self.device_id, "pickle": pickle, "shared": account.shared})

    def load_sessions(self) -> SessionStore:
        """Every olm session, by the other device's curve25519 key."""
        store = SessionStore()
        for item in self._vault.of_kind("olm").values():
            created = _time(item.get("created"))
            session = Session.from_pickle(
                str(item["pickle"]).encode(), created, self.pickle_key, _time(item.get("used"))
            )
            store.add(str(item["sender_key"]), session)
        return store

    def save_session(self, curve_key: str, session: Session) -> None:
        """Keep one olm session (it ratchets with every message)."""
        self._vault.put(
            "olm",
            f"{curve_key}|{session.id}",
            {
                "sender_key": curve_key,
                "pickle": session.pickle(self.pickle_key).decode(),
                "created": session.creation_time.timestamp(),
                "used": session.use_time.timestamp(),
            },
        )

    # -- room keys -----------------------------------------------------------------------------------

    def load_inbound_group_sessions(self) -> GroupSessionStore:
        """Every room key the device holds."""
        store = GroupSessionStore()
        for item in self._vault.of_kind("megolm").values():
            session = InboundGroupSession.from_pickle(
                str(item["pickle"]).encode(),
                str(item["ed25519"]),
                str(item["sender_key"]),
                str(item["room_id"]),
                self.pickle_key,
                [str(key) for key in item.get("chain") or []],
            )
            store.add(session)
        return store

    def save_inbound_group_session(self, session: InboundGroupSession) -> None:
        """Keep one room key, and tell the listener (the backup)."""
        self._vault.put(
            "megolm",
            f"{session.room_id}|{session.sender_key}|{session.id}",
            {
                "room_id": session.room_id,
                "sender_key": session.sender_key,
                "ed25519": session.ed25519,
                "chain": list(session.forwarding_chain),
                "pickle": session.pickle(self.pickle_key).decode(),
            },
        )
        if self.on_room_key is not None:
            self.on_room_key(session)

    # -- other users' devices and their trust --------------------------------------------------------

    def load_device_keys(self) -> DeviceStore:
        """The devices of the users the device encrypts for, with their trust."""
        store = DeviceStore()
        for item in self._vault.of_kind("device").values():
            device = OlmDevice(
                str(item["user_id"]),
                str(item["device_id"]),
                {str(k): str(v) for k, v in dict(item.get("keys") or {}).items()},
                display_name=str(item.get("display_name") or ""),
                deleted=bool(item.get("deleted")),
            )
            device.trust_state = TrustState(int(item.get("trust", TrustState.unset.value)))
            store.add(device)
        return store

    def _save_device(self, device: OlmDevice) -> None:
        self._vault.put("device", f"{device.user_id}|{device.id}", self._device_item(device))

    @staticmethod
    def _device_item(device: OlmDevice) -> dict[str, Any]:
        return {
            "user_id": device.user_id,
            "device_id": device.id,
            "keys": dict(device.keys),
            "display_name": device.display_name,
            "deleted": device.deleted,
            "trust": device.trust_state.value,
        }

    def save_device_keys(self, device_keys: dict[str, dict[str, OlmDevice]]) -> None:
        """Keep changed devices; nio calls this after every key query, mostly with none."""
        changed = {
            f"{user_id}|{device_id}": self._device_item(device)
            for user_id, devices in device_keys.items()
            for device_id, device in devices.items()
        }
        self._vault.put_many("device", changed)

    def _set_trust(self, device: OlmDevice, state: TrustState, *, only_from: TrustState | None = None) -> bool:
        if only_from is not None and device.trust_state != only_from:
            return False
        changed = bool(device.trust_state != state)
        device.trust_state = state
        self._save_device(device)
        return changed

    def verify_device(self, device: OlmDevice) -> bool:
        """Mark the device verified."""
        return self._set_trust(device, TrustState.verified)

    def unverify_device(self, device: OlmDevice) -> bool:
        """Take a verification back."""
        return self._set_trust(device, TrustState.unset, only_from=TrustState.verified)

    def blacklist_device(self, device: OlmDevice) -> bool:
        """Mark the device blacklisted."""
        return self._set_trust(device, TrustState.blacklisted)

    def unblacklist_device(self, device: OlmDevice) -> bool:
        """Take a blacklisting back."""
        return self._set_trust(device, TrustState.unset, only_from=TrustState.blacklisted)

    def ignore_device(self, device: OlmDevice) -> bool:
        """Mark the device ignored (shared with although unverified)."""
        return self._set_trust(device, TrustState.ignored)

    def unignore_device(self, device: OlmDevice) -> bool:
        """Take an ignore back."""
        return self._set_trust(device, TrustState.unset, only_from=TrustState.ignored)

    def ignore_devices(self, devices: list[OlmDevice]) -> None:
        """Mark several devices ignored in one write."""
        for device in devices:
            device.trust_state = TrustState.ignored
        self._vault.put_many("device", {f"{d.user_id}|{d.id}": self._device_item(d) for d in devices})

    def is_device_verified(self, device: OlmDevice) -> bool:
        """True when the device was verified."""
        return bool(device.trust_state == TrustState.verified)

    def is_device_blacklisted(self, device: OlmDevice) -> bool:
        """True when the device was blacklisted."""
        return bool(device.trust_state == TrustState.blacklisted)

    def is_device_ignored(self, device: OlmDevice) -> bool:
        """True when the device was marked ignored."""
        return bool(device.trust_state == TrustState.ignored)

    # -- encrypted rooms and key requests ------------------------------------------------------------

    def load_encrypted_rooms(self) -> set[str]:
        """The rooms known to be encrypted."""
        return set(self._vault.of_kind("room"))

    def save_encrypted_rooms(self, rooms: set[str]) -> None:
        """Remember encrypted rooms; nio calls this after every sync, mostly with none or known ones."""
        fresh: dict[str, dict[str, Any]] = {room_id: {} for room_id in rooms if not self._vault.has("room", room_id)}
        self._vault.put_many("room", fresh)

    def delete_encrypted_room(self, room: str) -> None:
        """Forget an encrypted room."""
        self._vault.delete("room", room)

    def load_outgoing_key_requests(self) -> dict[str, OutgoingKeyRequest]:
        """The room key requests sent and not answered yet."""
        return {
            request_id: OutgoingKeyRequest(
                request_id, str(item["session_id"]), str(item["room_id"]), str(item["algorithm"])
            )
            for request_id, item in self._vault.of_kind("key_request").items()
        }

    def add_outgoing_key_request(self, key_request: OutgoingKeyRequest) -> None:
        """Remember a room key request."""
        self._vault.put(
            "key_request",
            key_request.request_id,
            {
                "session_id": key_request.session_id,
                "room_id": key_request.room_id,
                "algorithm": key_request.algorithm,
            },
        )

    def remove_outgoing_key_request(self, key_request: OutgoingKeyRequest) -> None:
        """Forget an answered room key request."""
        self._vault.delete("key_request", key_request.request_id)

    def save_sync_token(self, token: str) -> None:
        """Unused: the daemon keeps sync positions itself."""

    def load_sync_token(self) -> str | None:
        """Unused: the daemon keeps sync positions itself."""
        return None
