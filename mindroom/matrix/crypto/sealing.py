"""Sealing a bot's crypto items for a database other machines read: AES-256-GCM under a key from the recovery key.

The sealing key is HKDF-SHA-256 of the recovery key (info `mindroom crypto state v1`), so the one secret an
operator keeps opens both the accounts' secret storage and the state in the database, and neither key can
be told from the other. A sealed value is `MRS1`, the first 8 bytes of SHA-256 of the sealing key (which
key sealed it), a 12-byte nonce and the ciphertext; the bot, kind and key are its associated data, so a
value moved to another place in the table does not open.
"""

from __future__ import annotations

import hashlib
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from mindroom.matrix.errors import MatrixError

__all__ = ["SealError", "Sealer"]

_MAGIC = b"MRS1"
_INFO = b"mindroom crypto state v1"
_KEY_ID_BYTES = 8
_NONCE_BYTES = 12


class SealError(MatrixError, ValueError):
    """A sealed value does not open: another key sealed it (`other_key`), or it was damaged."""

    def __init__(self, message: str, *, other_key: bool) -> None:
        super().__init__(message)
        self.other_key = other_key


class Sealer:
    """Seals and opens values with the key derived from one recovery key."""

    def __init__(self, recovery_key: bytes) -> None:
        key = HKDF(algorithm=hashes.SHA256(), length=32, salt=bytes(32), info=_INFO).derive(recovery_key)
        self._aead = AESGCM(key)
        self.key_id = hashlib.sha256(key).digest()[:_KEY_ID_BYTES]

    @staticmethod
    def _context(bot_name: str, kind: str, key: str) -> bytes:
        return "\0".join((bot_name, kind, key)).encode()

    def seal(self, bot_name: str, kind: str, key: str, value: bytes) -> bytes:
        """`value` encrypted and bound to its place (bot, kind, key)."""
        nonce = os.urandom(_NONCE_BYTES)
        return _MAGIC + self.key_id + nonce + self._aead.encrypt(nonce, value, self._context(bot_name, kind, key))

    def unseal(self, bot_name: str, kind: str, key: str, sealed: bytes) -> bytes:
        """The value sealed at this place; raises `SealError`."""
        head = len(_MAGIC) + _KEY_ID_BYTES
        if not sealed.startswith(_MAGIC) or len(sealed) < head + _NONCE_BYTES:
            raise SealError("the value is not sealed", other_key=False)
        if sealed[len(_MAGIC) : head] != self.key_id:
            raise SealError("another recovery key sealed it", other_key=True)
        nonce = sealed[head : head + _NONCE_BYTES]
        try:
            return self._aead.decrypt(nonce, sealed[head + _NONCE_BYTES :], self._context(bot_name, kind, key))
        except InvalidTag:
            raise SealError("the sealed value was changed or damaged", other_key=False) from None

    @staticmethod
    def is_sealed(value: bytes) -> bool:
        """True for a value sealed by any key."""
        return value.startswith(_MAGIC)
