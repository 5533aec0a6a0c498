"""Moving a device's crypto state from files into a shared vault: nio's file store and the bot's vault file.

Used by `mindroom state migrate` (every bot of a data directory, into PostgreSQL, sealed with the data
directory's recovery key: made there if it has none, and shown by the next `mindroom run`) and by a bot's
first start on PostgreSQL when its data directory still holds the store of the device it logs in as.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mindroom.matrix.credentials import BotCredentials, CredentialStore
from mindroom.matrix.crypto.bot_vault import BotVault
from mindroom.matrix.crypto.recovery_key import RecoveryKeys
from mindroom.matrix.crypto.sealing import Sealer
from mindroom.matrix.crypto.store import CRYPTO_DB_NAME, PICKLE_KEY, CryptoStore, inspect_crypto_store
from mindroom.matrix.crypto.vault_store import VaultStore
from mindroom.state.crypto import CryptoVault
from mindroom.state.migrate import CopyCount
from mindroom.state.sqlite.crypto import SqliteCryptoVault

__all__ = [
    "FileStoreContents",
    "copy_crypto_state",
    "import_crypto_files",
    "import_file_store",
    "read_file_store",
    "write_file_store",
]


@dataclass(frozen=True, slots=True)
class FileStoreContents:
    """What a device's nio file store holds, read out of it (`read_file_store`) to be written into a vault."""

    user_id: str
    device_id: str
    account: Any
    sessions: Any
    room_keys: list[Any]
    devices: Any
    rooms: Any
    requests: Any


def read_file_store(directory: Path, user_id: str, device_id: str) -> FileStoreContents | None:
    """Read a device's nio file store (None: no usable store).

    Call it on the thread that runs the daemon's other crypto stores: nio binds its store's table models for the
    whole process while it reads, so a read on a worker thread can land in another bot's store meanwhile.
    """
    if not inspect_crypto_store(directory, user_id, device_id).healthy:
        return None
    source = CryptoStore(user_id, device_id, str(directory), PICKLE_KEY, CRYPTO_DB_NAME)
    try:
        return FileStoreContents(
            user_id,
            device_id,
            account=source.load_account(),
            sessions=source.load_sessions(),
            room_keys=list(source.load_inbound_group_sessions()),
            devices=source.load_device_keys(),
            rooms=source.load_encrypted_rooms(),
            requests=source.load_outgoing_key_requests(),
        )
    finally:
        with contextlib.suppress(Exception):
            source.database.close()


def write_file_store(contents: FileStoreContents, target: BotVault) -> int:
    """Write what `read_file_store` read into `target` as vault items (blocks; any thread); returns how many."""
    store = VaultStore(contents.user_id, contents.device_id, target, PICKLE_KEY)
    store.save_account(contents.account)
    olm_sessions = [(sender_key, session) for sender_key, listed in contents.sessions.items() for session in listed]
    for sender_key, session in olm_sessions:
        store.save_session(sender_key, session)
    for room_key in contents.room_keys:
        store.save_inbound_group_session(room_key)
    known = {user: dict(contents.devices[user]) for user in contents.devices.users}
    store.save_device_keys(known)
    store.save_encrypted_rooms(set(contents.rooms))
    for request in contents.requests.values():
        store.add_outgoing_key_request(request)
    counted = len(olm_sessions) + len(contents.room_keys) + sum(map(len, known.values())) + len(contents.rooms)
    return 1 + counted + len(contents.requests)


def import_file_store(directory: Path, user_id: str, device_id: str, target: BotVault) -> int:
    """Write the device's nio file store into `target` as vault items; returns how many (0: no usable store)."""
    contents = read_file_store(directory, user_id, device_id)
    return 0 if contents is None else write_file_store(contents, target)


def import_crypto_files(storage_root: Path, bot_name: str, credentials: BotCredentials, target: BotVault) -> int:
    """Everything of one bot kept as files: its credentials, its vault file's items and its device's store."""
    target.put("credentials", "", json.loads(credentials.to_json()))
    copied = 1
    files = SqliteCryptoVault(storage_root)
    try:
        items = files.load(bot_name)
    finally:
        files.close()
    by_kind: dict[str, dict[str, dict[str, object]]] = {}
    for (kind, key), value in items.items():
        by_kind.setdefault(kind, {})[key] = json.loads(value)
    for kind, values in by_kind.items():
        target.put_many(kind, values)
        copied += len(values)
    if credentials.device_id:
        directory = Path(storage_root) / "crypto" / bot_name
        copied += import_file_store(directory, credentials.user_id, credentials.device_id, target)
    return copied


def copy_crypto_state(storage_root: Path, vault: CryptoVault) -> list[CopyCount]:
    """Copy every bot's credentials and crypto files into `vault` (blocks); each bot's items counted on both sides."""
    folder = Path(storage_root) / "matrix" / "credentials"
    names = sorted(path.stem for path in folder.glob("*.json")) if folder.is_dir() else []
    if not names:
        return []
    sealer = Sealer(RecoveryKeys(storage_root).load_or_create().key)
    stored = CredentialStore(storage_root)
    counts = []
    for name in names:
        credentials = stored.load(name)
        if credentials is None:
            continue
        target = BotVault(vault, name, sealer, {})
        import_crypto_files(storage_root, name, credentials, target)
        written = target.item_keys()
        present = written & set(vault.load(name))
        counts.append(CopyCount(f"crypto items of {name}", len(written), len(present)))
    return counts
