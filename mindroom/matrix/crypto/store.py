"""A device's crypto store on disk: where it lives, whether it can be used, and keeping it private.

The store is nio's SQLite store, one `crypto.db` per bot under `<data>/crypto/<bot>/` (folder 0700, file
0600). It holds the device's identity keys and every room key the device received: without it the device
can no longer read what was encrypted for it, so a lost store is reported, never papered over.
"""

from __future__ import annotations

import contextlib
import enum
import os
import time
from dataclasses import dataclass
from pathlib import Path

from nio.crypto import InboundGroupSession, OlmDevice, TrustState
from nio.store import SqliteStore

from mindroom.matrix.crypto.vault_store import RoomKeyListener

__all__ = [
    "CRYPTO_DB_NAME",
    "PICKLE_KEY",
    "CryptoStore",
    "CryptoStoreReport",
    "CryptoStoreState",
    "crypto_store_dir",
    "inspect_crypto_store",
    "prepare_crypto_store",
    "set_store_aside",
]

CRYPTO_DB_NAME = "crypto.db"
PICKLE_KEY = "mindroom-crypto-store"
"""nio encrypts the pickled keys with this passphrase. It is not a secret: a key kept beside the store would
protect nothing, so the store's protection is its file mode (0600 in a 0700 folder) and the data dir's."""


class CryptoStore(SqliteStore):  # type: ignore[misc]
    """nio's SQLite store, answering trust questions from memory.

    nio asks whether the sending device is verified on every decryption; the SQLite store answers with
    three queries each time (several milliseconds per message). Each device nio holds carries its trust
    state, loaded from this store and updated by every change the store makes, so the answer is on hand.
    `on_room_key` is told of every room key saved (the key backup queues it).
    """

    on_room_key: RoomKeyListener | None = None

    def save_inbound_group_session(self, session: InboundGroupSession) -> None:
        """Keep one room key, and tell the listener (the backup)."""
        super().save_inbound_group_session(session)
        if self.on_room_key is not None:
            self.on_room_key(session)

    def is_device_verified(self, device: OlmDevice) -> bool:
        """True when the device was verified."""
        return bool(device.trust_state == TrustState.verified)

    def is_device_blacklisted(self, device: OlmDevice) -> bool:
        """True when the device was blacklisted."""
        return bool(device.trust_state == TrustState.blacklisted)

    def is_device_ignored(self, device: OlmDevice) -> bool:
        """True when the device was marked ignored (shared with although unverified)."""
        return bool(device.trust_state == TrustState.ignored)

    def save_encrypted_rooms(self, rooms: set[str]) -> None:
        """Remember encrypted rooms; nio calls this after every sync, mostly with none."""
        if rooms:
            super().save_encrypted_rooms(rooms)

    def save_device_keys(self, device_keys: dict[str, dict[str, OlmDevice]]) -> None:
        """Store changed devices; nio calls this after every key query, mostly with none."""
        if any(device_keys.values()):
            super().save_device_keys(device_keys)


class CryptoStoreState(enum.StrEnum):
    """What a device's crypto store looks like on disk."""

    HEALTHY = "healthy"
    MISSING = "missing"
    NO_ACCOUNT = "no_account"
    UNREADABLE = "unreadable"


@dataclass(frozen=True, slots=True)
class CryptoStoreReport:
    """The state of one store file, and the error behind `UNREADABLE`."""

    state: CryptoStoreState
    path: Path
    detail: str = ""

    @property
    def healthy(self) -> bool:
        """True when the store opens and holds this device's keys."""
        return self.state is CryptoStoreState.HEALTHY

    def describe(self) -> str:
        """One phrase for logs and `mindroom doctor`."""
        if self.state is CryptoStoreState.HEALTHY:
            return f"{self.path} holds this device's keys"
        if self.state is CryptoStoreState.MISSING:
            return f"{self.path} does not exist"
        if self.state is CryptoStoreState.NO_ACCOUNT:
            return f"{self.path} holds no keys for this device"
        return f"{self.path} cannot be opened ({self.detail})"


def crypto_store_dir(storage_root: Path, name: str) -> Path:
    """The folder of one bot's crypto store: `<storage_root>/crypto/<name>/`."""
    return Path(storage_root) / "crypto" / name


def inspect_crypto_store(directory: Path, user_id: str, device_id: str) -> CryptoStoreReport:
    """Open the store read-mostly and say whether it holds the keys of `device_id` (never creates the file)."""
    path = directory / CRYPTO_DB_NAME
    if not path.is_file():
        return CryptoStoreReport(CryptoStoreState.MISSING, path)
    store = None
    try:
        store = CryptoStore(user_id, device_id, str(directory), PICKLE_KEY, CRYPTO_DB_NAME)
        account = store.load_account()
    except Exception as exc:  # sqlite, peewee and vodozemac each raise their own kinds for a damaged file
        return CryptoStoreReport(CryptoStoreState.UNREADABLE, path, str(exc) or type(exc).__name__)
    finally:
        if store is not None:
            with contextlib.suppress(Exception):
                store.database.close()
    state = CryptoStoreState.HEALTHY if account is not None else CryptoStoreState.NO_ACCOUNT
    return CryptoStoreReport(state, path)


def prepare_crypto_store(directory: Path) -> Path:
    """Make the folder (0700) and the database file (0600) before nio opens it, so neither is ever wider."""
    directory.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    directory.parent.chmod(0o700)
    directory.mkdir(mode=0o700, exist_ok=True)
    directory.chmod(0o700)
    path = directory / CRYPTO_DB_NAME
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    os.close(fd)
    for entry in directory.iterdir():
        if entry.is_file():
            entry.chmod(0o600)
    return path


def set_store_aside(directory: Path, reason: str) -> Path | None:
    """Rename an unusable `crypto.db` to `crypto.db.<reason>-<time>` (kept for recovery); None when absent."""
    path = directory / CRYPTO_DB_NAME
    if not path.exists():
        return None
    target = path.with_name(f"{CRYPTO_DB_NAME}.{reason}-{time.strftime('%Y%m%dT%H%M%S')}")
    path.rename(target)
    for suffix in ("-journal", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            path.with_name(CRYPTO_DB_NAME + suffix).rename(target.with_name(target.name + suffix))
    return target
