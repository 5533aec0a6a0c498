"""Secret storage's `m.secret_storage.v1.aes-hmac-sha2`, checked against a second implementation of the spec's steps
(HKDF written out with `hmac`, AES-CTR from `cryptography`)."""

from __future__ import annotations

import hashlib
import hmac
import secrets

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from mindroom.matrix.crypto.secret_storage import (
    SecretStorageError,
    decrypt_secret,
    encrypt_secret,
    key_check,
    key_matches,
)
from mindroom.matrix.crypto.signing import decode_base64


def _hkdf_sha256(key: bytes, salt: bytes, info: bytes, length: int) -> bytes:
    prk = hmac.new(salt, key, hashlib.sha256).digest()
    out, block = b"", b""
    for counter in range(1, length // 32 + 2):
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
    return out[:length]


def _reference(key: bytes, name: str, plaintext: bytes, iv: bytes) -> tuple[bytes, bytes]:
    derived = _hkdf_sha256(key, bytes(32), name.encode(), 64)
    encryptor = Cipher(algorithms.AES(derived[:32]), modes.CTR(iv)).encryptor()
    ciphertext = encryptor.update(plaintext) + encryptor.finalize()
    return ciphertext, hmac.new(derived[32:], ciphertext, hashlib.sha256).digest()


def test_secret_storage_encryption_follows_the_spec_steps():
    key, iv = secrets.token_bytes(32), bytes(range(16))

    stored = encrypt_secret(key, "m.cross_signing.master", "c2VlZA", iv)

    ciphertext, mac = _reference(key, "m.cross_signing.master", b"c2VlZA", iv)
    assert decode_base64(stored["ciphertext"]) == ciphertext
    assert decode_base64(stored["mac"]) == mac
    assert decode_base64(stored["iv"]) == iv
    assert "=" not in "".join(stored.values())  # unpadded base64


def test_secret_storage_key_check_is_the_mac_of_32_encrypted_zero_bytes():
    key, iv = secrets.token_bytes(32), bytes(16)

    check = key_check(key, iv)

    assert decode_base64(check["mac"]) == _reference(key, "", bytes(32), iv)[1]
    assert key_matches(key, check)
    assert not key_matches(secrets.token_bytes(32), check)
    assert key_matches(secrets.token_bytes(32), {"algorithm": "m.secret_storage.v1.aes-hmac-sha2"})


def test_secret_storage_iv_has_bit_63_cleared():
    for _ in range(20):
        iv = decode_base64(encrypt_secret(bytes(32), "x", "y")["iv"])
        assert iv[8] & 0x80 == 0


def test_secret_storage_round_trip_and_a_wrong_key_or_name_is_refused():
    key = secrets.token_bytes(32)
    stored = encrypt_secret(key, "m.megolm_backup.v1", "private")

    assert decrypt_secret(key, "m.megolm_backup.v1", stored) == "private"
    with pytest.raises(SecretStorageError, match="does not open"):
        decrypt_secret(secrets.token_bytes(32), "m.megolm_backup.v1", stored)
    with pytest.raises(SecretStorageError, match="does not open"):
        decrypt_secret(key, "m.cross_signing.master", stored)
    with pytest.raises(SecretStorageError, match="malformed"):
        decrypt_secret(key, "m.megolm_backup.v1", {"iv": stored["iv"]})


def test_secret_storage_padded_base64_from_other_clients_is_read():
    key = secrets.token_bytes(32)
    stored = encrypt_secret(key, "name", "value")
    padded = {part: text + "=" * (-len(text) % 4) for part, text in stored.items()}

    assert decrypt_secret(key, "name", padded) == "value"
