"""Key backup's `m.megolm_backup.v1.curve25519-aes-sha2`, checked against a second implementation of the spec's
steps (X25519, HKDF, AES-CBC and HMAC from `cryptography`), and a room key's way into and out of a backup."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from nio.crypto import InboundGroupSession, OutboundGroupSession

from mindroom.matrix.crypto.key_backup import (
    BackupKey,
    backup_entry,
    decrypt_session_data,
    encrypt_session_data,
    restored_session,
)
from mindroom.matrix.crypto.signing import decode_base64, encode_base64


def _keys(shared: bytes) -> tuple[bytes, bytes, bytes]:
    derived = HKDF(SHA256(), 80, bytes(32), b"").derive(shared)
    return derived[:32], derived[32:64], derived[64:]


def test_key_backup_encryption_opens_with_the_spec_steps():
    key = BackupKey.generate()

    data = encrypt_session_data(key.public_key, {"session_key": "abc"})

    private = X25519PrivateKey.from_private_bytes(key.private)
    assert encode_base64(private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)) == key.public_key
    shared = private.exchange(X25519PublicKey.from_public_bytes(decode_base64(data["ephemeral"])))
    aes_key, mac_key, iv = _keys(shared)
    decryptor = Cipher(algorithms.AES(aes_key), modes.CBC(iv)).decryptor()
    padded = decryptor.update(decode_base64(data["ciphertext"])) + decryptor.finalize()
    unpadder = padding.PKCS7(128).unpadder()
    assert unpadder.update(padded) + unpadder.finalize() == b'{"session_key":"abc"}'
    # libolm's MAC, kept by every implementation: over the empty string, first 8 bytes.
    assert decode_base64(data["mac"]) == hmac.new(mac_key, b"", hashlib.sha256).digest()[:8]


def test_key_backup_data_made_by_the_spec_steps_is_read():
    key = BackupKey.generate()
    ephemeral = X25519PrivateKey.generate()
    public = X25519PublicKey.from_public_bytes(decode_base64(key.public_key))
    aes_key, mac_key, iv = _keys(ephemeral.exchange(public))
    padder = padding.PKCS7(128).padder()
    encryptor = Cipher(algorithms.AES(aes_key), modes.CBC(iv)).encryptor()
    ciphertext = encryptor.update(padder.update(b'{"a":1}') + padder.finalize()) + encryptor.finalize()
    data = {
        "ephemeral": encode_base64(ephemeral.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)),
        "ciphertext": encode_base64(ciphertext),
        "mac": encode_base64(hmac.new(mac_key, b"", hashlib.sha256).digest()[:8]),
    }

    assert decrypt_session_data(key, data) == {"a": 1}
    with pytest.raises(ValueError, match="cannot be opened"):
        decrypt_session_data(BackupKey.generate(), data)


def test_key_backup_a_room_key_backed_up_and_restored_decrypts_the_first_message():
    outbound = OutboundGroupSession()
    outbound.shared = True
    inbound = InboundGroupSession(outbound.session_key, "ED25519KEY", "CURVEKEY", "!room:example.org")
    first = outbound.encrypt('{"body": "before the loss"}')
    key = BackupKey.generate()

    entry = backup_entry(inbound, key.public_key)
    restored = restored_session("!room:example.org", decrypt_session_data(key, entry["session_data"]))

    assert entry["first_message_index"] == 0 and entry["forwarded_count"] == 0
    assert restored is not None
    assert (restored.id, restored.sender_key, restored.ed25519) == (inbound.id, "CURVEKEY", "ED25519KEY")
    assert restored.decrypt(first)[0] == '{"body": "before the loss"}'


def test_key_backup_entries_that_are_not_megolm_keys_are_skipped():
    assert restored_session("!r", {"algorithm": "m.other", "sender_claimed_keys": {"ed25519": "x"}}) is None
    with pytest.raises(ValueError, match="malformed"):
        restored_session("!r", {"algorithm": "m.megolm.v1.aes-sha2", "sender_claimed_keys": {"ed25519": "x"}})
