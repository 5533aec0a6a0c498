"""Server-side key backup, `m.megolm_backup.v1.curve25519-aes-sha2`: room keys kept on the homeserver, encrypted.

A backup version has a curve25519 public key (its `auth_data`, signed by the device and the master key).
Each room key is uploaded as `session_data`: an ephemeral key, the session exported as JSON and encrypted
with AES-CBC-256 under keys from HKDF of the ECDH secret, and a MAC (libolm's `PkEncryption`, which
vodozemac implements). Only the backup's private key (kept in secret storage) opens them again.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import vodozemac
from nio.crypto import InboundGroupSession

from mindroom.matrix.crypto.signing import decode_base64, encode_base64
from mindroom.matrix.errors import MatrixRequestError
from mindroom.matrix.transport import JsonTransport

__all__ = [
    "BACKUP_ALGORITHM",
    "BACKUP_SECRET",
    "BackupKey",
    "BackupVersion",
    "KeyBackupApi",
    "backup_entry",
    "decrypt_session_data",
    "encrypt_session_data",
    "restored_session",
]

BACKUP_ALGORITHM = "m.megolm_backup.v1.curve25519-aes-sha2"
BACKUP_SECRET = "m.megolm_backup.v1"
_MEGOLM = "m.megolm.v1.aes-sha2"
_VERSION_PATH = "/_matrix/client/v3/room_keys/version"
_KEYS_PATH = "/_matrix/client/v3/room_keys/keys"


@dataclass(frozen=True, slots=True)
class BackupKey:
    """The backup's curve25519 private key (32 bytes, kept out of `repr`)."""

    private: bytes = field(repr=False)

    @classmethod
    def generate(cls) -> BackupKey:
        """A new random key."""
        return cls(secrets.token_bytes(32))

    @classmethod
    def from_base64(cls, text: str) -> BackupKey:
        """The key as secret storage keeps it (base64)."""
        return cls(decode_base64(text))

    def to_base64(self) -> str:
        """Unpadded base64, as secret storage keeps it."""
        return encode_base64(self.private)

    @property
    def public_key(self) -> str:
        """The public key a backup version names in its `auth_data`."""
        return str(vodozemac.Curve25519SecretKey.from_bytes(self.private).public_key().to_base64())


@dataclass(frozen=True, slots=True)
class BackupVersion:
    """A backup version as the homeserver describes it."""

    version: str
    algorithm: str
    public_key: str | None
    count: int
    auth_data: dict[str, Any] = field(repr=False)


def encrypt_session_data(public_key: str, payload: Mapping[str, Any]) -> dict[str, str]:
    """`{ephemeral, ciphertext, mac}` of `payload` for the backup whose public key is `public_key`."""
    encryption = vodozemac.PkEncryption.from_key(vodozemac.Curve25519PublicKey.from_base64(public_key))
    message = encryption.encrypt(json.dumps(payload, separators=(",", ":")).encode())
    # The fields by name: the binding's `to_base64()` returns them in another order than its stub says.
    return {
        "ephemeral": encode_base64(message.ephemeral_key),
        "ciphertext": encode_base64(message.ciphertext),
        "mac": encode_base64(message.mac),
    }


def decrypt_session_data(key: BackupKey, session_data: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON a backed-up key holds; raises `ValueError` when `key` does not open it."""
    try:
        message = vodozemac.Message(
            decode_base64(str(session_data["ciphertext"])),
            decode_base64(str(session_data["mac"])),
            decode_base64(str(session_data["ephemeral"])),
        )
        plaintext = vodozemac.PkDecryption.from_key(vodozemac.Curve25519SecretKey.from_bytes(key.private)).decrypt(
            message
        )
        data = json.loads(plaintext)
    except (KeyError, ValueError, vodozemac.PkDecodeException) as exc:
        raise ValueError(f"the backed-up key cannot be opened: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError("the backed-up key is not a JSON object")
    return data


def backup_entry(session: InboundGroupSession, public_key: str) -> dict[str, Any]:
    """One room key as `PUT /room_keys/keys` takes it (`KeyBackupData`)."""
    index = session.first_known_index
    payload = {
        "algorithm": _MEGOLM,
        "sender_key": session.sender_key,
        "sender_claimed_keys": {"ed25519": session.ed25519},
        "forwarding_curve25519_key_chain": list(session.forwarding_chain),
        "session_key": session.export_session(index),
    }
    return {
        "first_message_index": index,
        "forwarded_count": len(session.forwarding_chain),
        "is_verified": False,
        "session_data": encrypt_session_data(public_key, payload),
    }


def restored_session(room_id: str, data: Mapping[str, Any]) -> InboundGroupSession | None:
    """The room key a decrypted backup entry carries, ready for the store; None when it is not a megolm key."""
    claimed = data.get("sender_claimed_keys")
    signing_key = claimed.get("ed25519") if isinstance(claimed, dict) else None
    chain = data.get("forwarding_curve25519_key_chain")
    if data.get("algorithm") != _MEGOLM or not isinstance(signing_key, str):
        return None
    try:
        return InboundGroupSession.import_session(
            str(data["session_key"]),
            signing_key,
            str(data["sender_key"]),
            room_id,
            [str(key) for key in chain] if isinstance(chain, list) else [],
        )
    except (KeyError, ValueError) as exc:  # vodozemac's decode errors are ValueErrors
        raise ValueError(f"the backed-up key is malformed: {exc}") from exc


class KeyBackupApi:
    """The key-backup endpoints of the logged-in account."""

    def __init__(self, transport: JsonTransport) -> None:
        self._transport = transport

    async def latest(self) -> BackupVersion | None:
        """The current backup version, or None when the account has none."""
        reply = await self._transport.request("GET", _VERSION_PATH)
        if reply.errcode == "M_NOT_FOUND":
            return None
        reply.raise_for_error("read the key backup version")
        body = reply.body if isinstance(reply.body, dict) else {}
        raw_auth = body.get("auth_data")
        auth_data: dict[str, Any] = raw_auth if isinstance(raw_auth, dict) else {}
        public_key = auth_data.get("public_key")
        count = body.get("count")
        return BackupVersion(
            version=str(body.get("version", "")),
            algorithm=str(body.get("algorithm", "")),
            public_key=public_key if isinstance(public_key, str) else None,
            count=count if isinstance(count, int) else 0,
            auth_data=auth_data,
        )

    async def create(self, auth_data: Mapping[str, Any]) -> str:
        """Make a new backup version (it becomes the current one); returns its version."""
        body = {"algorithm": BACKUP_ALGORITHM, "auth_data": dict(auth_data)}
        reply = await self._transport.request("POST", _VERSION_PATH, body=body)
        reply.raise_for_error("create a key backup")
        version = reply.body.get("version") if isinstance(reply.body, dict) else None
        if not isinstance(version, str):
            raise MatrixRequestError("create a key backup", None, "the reply has no version", reply.status)
        return version

    async def upload(self, version: str, rooms: Mapping[str, Mapping[str, Any]]) -> None:
        """Add `{room_id: {session_id: KeyBackupData}}` to `version`; `MatrixRequestError` when refused.

        A version that is no longer the current one is refused with `M_WRONG_ROOM_KEYS_VERSION`.
        """
        body = {"rooms": {room: {"sessions": dict(sessions)} for room, sessions in rooms.items()}}
        reply = await self._transport.request("PUT", _KEYS_PATH, query={"version": version}, body=body)
        reply.raise_for_error("upload room keys to the backup")

    async def download(self, version: str) -> dict[str, dict[str, dict[str, Any]]]:
        """Every key in `version`: `{room_id: {session_id: KeyBackupData}}`."""
        reply = await self._transport.request("GET", _KEYS_PATH, query={"version": version})
        reply.raise_for_error("download the key backup")
        rooms = reply.body.get("rooms") if isinstance(reply.body, dict) else None
        found: dict[str, dict[str, dict[str, Any]]] = {}
        for room_id, room in (rooms or {}).items():
            sessions = room.get("sessions") if isinstance(room, dict) else None
            if isinstance(sessions, dict):
                found[str(room_id)] = {str(sid): data for sid, data in sessions.items() if isinstance(data, dict)}
        return found
