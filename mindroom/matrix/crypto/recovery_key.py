"""The recovery key: the secret-storage key of every bot account, as people write it down.

One key per daemon (the bots are one operator's accounts). It opens each account's secret storage, which
holds the cross-signing keys and the key backup's decryption key, as Element's "Security Key" does, so the
same text works in Element for a bot's account. With state in PostgreSQL it also seals each bot's crypto
state in the database (`mindroom.matrix.crypto.sealing`).

Where it comes from, first found wins: `MINDROOM_RECOVERY_KEY` (the text), `MINDROOM_RECOVERY_KEY_FILE`
(a file holding it), `<data>/crypto/recovery-key` (written when the first bot needed one, mode 0600).
A key made here is shown once: `mindroom run` prints it while `recovery-key.unshown` sits beside it.

The text is the key in Matrix's key representation: `0x8B 0x01`, the 32 key bytes, a parity byte (all
bytes before it XORed), base58 with Bitcoin's alphabet, a space after every 4th character.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mindroom.logging_config import register_secret_values
from mindroom.matrix.errors import MatrixError
from mindroom.private_files import private_dir, write_private_file

__all__ = [
    "RECOVERY_KEY_ENV",
    "RECOVERY_KEY_FILE_ENV",
    "RecoveryKey",
    "RecoveryKeyError",
    "RecoveryKeys",
    "decode_recovery_key",
    "encode_recovery_key",
    "take_unshown_recovery_key",
]

RECOVERY_KEY_ENV = "MINDROOM_RECOVERY_KEY"
RECOVERY_KEY_FILE_ENV = "MINDROOM_RECOVERY_KEY_FILE"
_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_PREFIX = b"\x8b\x01"
_KEY_BYTES = 32
_FILE_NAME = "recovery-key"
_UNSHOWN_NAME = "recovery-key.unshown"


class RecoveryKeyError(MatrixError, ValueError):
    """A recovery key's text is not one (wrong characters, length, prefix or parity); names where it came from."""


def _base58(data: bytes) -> str:
    number = int.from_bytes(data, "big")
    digits = []
    while number:
        number, remainder = divmod(number, 58)
        digits.append(_ALPHABET[remainder])
    zeros = len(data) - len(data.lstrip(b"\0"))
    return "1" * zeros + "".join(reversed(digits))


def _unbase58(text: str) -> bytes:
    number = 0
    for char in text:
        index = _ALPHABET.find(char)
        if index < 0:
            raise RecoveryKeyError(f"{char!r} is not a base58 character")
        number = number * 58 + index
    zeros = len(text) - len(text.lstrip("1"))
    body = number.to_bytes((number.bit_length() + 7) // 8, "big") if number else b""
    return b"\0" * zeros + body


def _parity(data: bytes) -> int:
    parity = 0
    for byte in data:
        parity ^= byte
    return parity


def encode_recovery_key(key: bytes) -> str:
    """The written form of a 32-byte key: `EsTc 5rr1 ...`."""
    if len(key) != _KEY_BYTES:
        raise RecoveryKeyError(f"a recovery key has {_KEY_BYTES} bytes, not {len(key)}")
    data = _PREFIX + key
    text = _base58(data + bytes([_parity(data)]))
    return " ".join(text[i : i + 4] for i in range(0, len(text), 4))


def decode_recovery_key(text: str) -> bytes:
    """The 32 key bytes of a written recovery key (whitespace ignored); raises `RecoveryKeyError`."""
    data = _unbase58("".join(text.split()))
    if len(data) != len(_PREFIX) + _KEY_BYTES + 1:
        raise RecoveryKeyError(f"it decodes to {len(data)} bytes, not {len(_PREFIX) + _KEY_BYTES + 1}")
    if not data.startswith(_PREFIX):
        raise RecoveryKeyError("it lacks the recovery key prefix")
    if _parity(data) != 0:
        raise RecoveryKeyError("its parity byte does not match (a mistyped character?)")
    return data[len(_PREFIX) : -1]


@dataclass(frozen=True, slots=True)
class RecoveryKey:
    """A recovery key and where it came from; the key stays out of `repr`."""

    key: bytes = field(repr=False)
    source: str
    """`MINDROOM_RECOVERY_KEY`, or the path of the file it was read from."""

    @property
    def text(self) -> str:
        """The written form."""
        return encode_recovery_key(self.key)


@dataclass(frozen=True, slots=True)
class RecoveryKeys:
    """Where this daemon's recovery key comes from; read when a bot needs it, made once when none exists."""

    storage_root: Path
    given: str | None = field(default=None, repr=False)
    given_file: Path | None = None

    @classmethod
    def from_environment(cls, values: Mapping[str, str], storage_root: Path) -> RecoveryKeys:
        """`MINDROOM_RECOVERY_KEY` and `MINDROOM_RECOVERY_KEY_FILE` from the daemon's environment."""
        given = values.get(RECOVERY_KEY_ENV, "").strip() or None
        path = values.get(RECOVERY_KEY_FILE_ENV, "").strip()
        register_secret_values([given])
        return cls(Path(storage_root), given, Path(path).expanduser() if path else None)

    @property
    def stored_path(self) -> Path:
        """`<data>/crypto/recovery-key`."""
        return self.storage_root / "crypto" / _FILE_NAME

    def load(self) -> RecoveryKey | None:
        """The key given or stored, or None when there is none; a malformed one raises `RecoveryKeyError`."""
        if self.given is not None:
            return self._parse(self.given, RECOVERY_KEY_ENV)
        for path in (self.given_file, self.stored_path):
            if path is None:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except FileNotFoundError:
                if path == self.given_file:
                    raise RecoveryKeyError(f"{RECOVERY_KEY_FILE_ENV} names {path}, which does not exist") from None
                continue
            return self._parse(text, str(path))
        return None

    @staticmethod
    def _parse(text: str, source: str) -> RecoveryKey:
        try:
            key = RecoveryKey(decode_recovery_key(text), source)
        except RecoveryKeyError as exc:
            raise RecoveryKeyError(f"the recovery key from {source} is not one: {exc}") from None
        register_secret_values([text.strip(), key.text])
        return key

    def load_or_create(self) -> RecoveryKey:
        """The key given or stored, else a new one written to `<data>/crypto/recovery-key` (0600), marked unshown.

        Safe when several bots (or daemons on one data directory) ask at once: the file is created
        exclusively, and whoever finds it made already reads it.
        """
        found = self.load()
        if found is not None:
            return found
        path = self.stored_path
        private_dir(path.parent)
        key = RecoveryKey(secrets.token_bytes(_KEY_BYTES), str(path))
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            return self._parse(path.read_text(encoding="utf-8"), str(path))
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(key.text + "\n")
            out.flush()
            os.fsync(out.fileno())
        write_private_file(path.with_name(_UNSHOWN_NAME), "")
        register_secret_values([key.text])
        return key


def take_unshown_recovery_key(storage_root: Path) -> tuple[str, Path] | None:
    """The stored recovery key and its file when nobody was shown it yet; from now on it counts as shown."""
    folder = Path(storage_root) / "crypto"
    marker = folder / _UNSHOWN_NAME
    if not marker.exists():
        return None
    path = folder / _FILE_NAME
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        text = ""
    with contextlib.suppress(FileNotFoundError):
        marker.unlink()
    return (text, path) if text else None
