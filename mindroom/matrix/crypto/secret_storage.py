"""Secret storage (SSSS) of one account: secrets encrypted in its account data (`m.secret_storage.v1.aes-hmac-sha2`).

A key (the recovery key) has an id and a description in account data (`m.secret_storage.key.<id>`) holding
a check value: 32 zero bytes encrypted under the key, whose MAC tells a right key from a wrong one. A
secret lives in account data under its own name (`m.cross_signing.master`, `m.megolm_backup.v1`, ...) as
`{"encrypted": {<key id>: {iv, ciphertext, mac}}}`. Per secret, HKDF-SHA-256 (32 zero bytes of salt, the
secret's name as info) gives an AES-CTR-256 key and an HMAC-SHA-256 key; the MAC covers the ciphertext.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from mindroom.matrix.crypto.signing import decode_base64, encode_base64
from mindroom.matrix.errors import MatrixError
from mindroom.matrix.transport import JsonTransport, quote_path

__all__ = [
    "DEFAULT_KEY_TYPE",
    "SSSS_ALGORITHM",
    "SecretStorage",
    "SecretStorageError",
    "decrypt_secret",
    "encrypt_secret",
    "key_check",
    "key_matches",
]

SSSS_ALGORITHM = "m.secret_storage.v1.aes-hmac-sha2"
DEFAULT_KEY_TYPE = "m.secret_storage.default_key"
_KEY_TYPE_PREFIX = "m.secret_storage.key."
_ZERO_SALT = bytes(32)


class SecretStorageError(MatrixError, ValueError):
    """A stored secret cannot be read with the key given (its MAC does not match, or it is malformed)."""


def _derive(key: bytes, name: str) -> tuple[bytes, bytes]:
    derived = HKDF(algorithm=hashes.SHA256(), length=64, salt=_ZERO_SALT, info=name.encode()).derive(key)
    return derived[:32], derived[32:]


def _new_iv() -> bytes:
    iv = bytearray(secrets.token_bytes(16))
    iv[8] &= 0x7F  # bit 63 cleared: AES-CTR implementations differ in how the counter carries past it
    return bytes(iv)


def _ctr(aes_key: bytes, iv: bytes, data: bytes) -> bytes:
    cipher = Cipher(algorithms.AES(aes_key), modes.CTR(iv)).encryptor()
    return cipher.update(data) + cipher.finalize()


def encrypt_secret(key: bytes, name: str, plaintext: str, iv: bytes | None = None) -> dict[str, str]:
    """`{iv, ciphertext, mac}` of `plaintext` stored as the secret `name` under `key`."""
    aes_key, mac_key = _derive(key, name)
    iv = iv or _new_iv()
    ciphertext = _ctr(aes_key, iv, plaintext.encode())
    mac = hmac.new(mac_key, ciphertext, hashlib.sha256).digest()
    return {"iv": encode_base64(iv), "ciphertext": encode_base64(ciphertext), "mac": encode_base64(mac)}


def decrypt_secret(key: bytes, name: str, data: Mapping[str, Any]) -> str:
    """The plaintext of the secret `name`; raises `SecretStorageError` when `key` is not the one it was stored with."""
    try:
        iv, ciphertext, mac = (decode_base64(str(data[part])) for part in ("iv", "ciphertext", "mac"))
    except (KeyError, ValueError) as exc:
        raise SecretStorageError(f"the stored secret {name} is malformed ({exc})") from exc
    aes_key, mac_key = _derive(key, name)
    if not hmac.compare_digest(hmac.new(mac_key, ciphertext, hashlib.sha256).digest(), mac):
        raise SecretStorageError(f"the key does not open the secret {name}")
    try:
        return _ctr(aes_key, iv, ciphertext).decode()
    except (UnicodeDecodeError, ValueError) as exc:
        raise SecretStorageError(f"the stored secret {name} is malformed ({exc})") from exc


def key_check(key: bytes, iv: bytes | None = None) -> dict[str, str]:
    """The `iv` and `mac` a key description carries so a client can tell whether a key is the right one."""
    check = encrypt_secret(key, "", "\0" * 32, iv)
    return {"iv": check["iv"], "mac": check["mac"]}


def key_matches(key: bytes, description: Mapping[str, Any]) -> bool:
    """True when `key` is the key `description` describes (a description without a check accepts any key)."""
    iv, mac = description.get("iv"), description.get("mac")
    if not (isinstance(iv, str) and isinstance(mac, str)):
        return True
    try:
        expected = key_check(key, decode_base64(iv))["mac"]
        return hmac.compare_digest(decode_base64(expected), decode_base64(mac))
    except ValueError:
        return False


class SecretStorage:
    """The secret storage of the logged-in account, read and written through its account data."""

    def __init__(self, transport: JsonTransport, user_id: str) -> None:
        self._transport = transport
        self._path = f"/_matrix/client/v3/user/{quote_path(user_id)}/account_data/"

    async def account_data(self, event_type: str) -> dict[str, Any] | None:
        """The account data of `event_type`, or None when the account has none."""
        reply = await self._transport.request("GET", self._path + quote_path(event_type))
        if reply.status == 404:
            return None
        reply.raise_for_error("read account data")
        return reply.body if isinstance(reply.body, dict) else None

    async def _put(self, event_type: str, content: Mapping[str, Any]) -> None:
        reply = await self._transport.request("PUT", self._path + quote_path(event_type), body=dict(content))
        reply.raise_for_error("write account data")

    async def default_key(self) -> tuple[str, dict[str, Any]] | None:
        """The default key's id and description, or None when the account has no secret storage."""
        default = await self.account_data(DEFAULT_KEY_TYPE)
        key_id = default.get("key") if default else None
        if not isinstance(key_id, str) or not key_id:
            return None
        description = await self.account_data(_KEY_TYPE_PREFIX + key_id)
        return (key_id, description) if description is not None else None

    async def create_key(self, key: bytes, name: str) -> str:
        """Describe `key` under a new id and make it the default key; returns the id."""
        key_id = secrets.token_urlsafe(24)
        description = {"name": name, "algorithm": SSSS_ALGORITHM, **key_check(key)}
        await self._put(_KEY_TYPE_PREFIX + key_id, description)
        await self._put(DEFAULT_KEY_TYPE, {"key": key_id})
        return key_id

    async def store(self, key_id: str, key: bytes, name: str, value: str) -> None:
        """Keep `value` as the secret `name`, encrypted under the key `key_id` (other keys' copies are dropped)."""
        await self._put(name, {"encrypted": {key_id: encrypt_secret(key, name, value)}})

    async def read(self, key_id: str, key: bytes, name: str) -> str | None:
        """The secret `name` as stored under `key_id`, or None when it is not stored under that key."""
        content = await self.account_data(name)
        encrypted = content.get("encrypted") if content else None
        data = encrypted.get(key_id) if isinstance(encrypted, dict) else None
        if not isinstance(data, dict):
            return None
        return decrypt_secret(key, name, data)
