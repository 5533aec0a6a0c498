"""Signed JSON: what `SigningKey` signs, Synapse's own library (signedjson) verifies, and the other way round."""

from __future__ import annotations

import pytest
import signedjson.key
import signedjson.sign

from mindroom.matrix.crypto.signing import (
    SigningKey,
    canonical_json,
    decode_base64,
    encode_base64,
    signature_valid,
    signed_part,
)

USER = "@bot:example.org"


def test_signing_canonical_json_sorts_keys_drops_whitespace_and_keeps_unicode():
    assert canonical_json({"b": 1, "a": {"d": [1, 2], "c": "é"}}) == '{"a":{"c":"é","d":[1,2]},"b":1}'.encode()


def test_signing_base64_is_unpadded_and_reads_both_forms():
    assert encode_base64(b"ab") == "YWI"
    assert decode_base64("YWI") == decode_base64("YWI=") == b"ab"
    with pytest.raises(ValueError, match="not base64"):
        decode_base64("Y*I")


def test_signing_a_signature_made_here_verifies_with_signedjson():
    key = SigningKey.generate()
    document = {"user_id": USER, "usage": ["master"], "unsigned": {"note": "not covered"}}

    signed = key.sign_json(document, USER)

    verify_key = signedjson.key.decode_verify_key_bytes(f"ed25519:{key.public_key}", decode_base64(key.public_key))
    signedjson.sign.verify_signed_json(signed, USER, verify_key)  # raises when the signature is wrong
    assert signature_valid(signed, USER, key.public_key, key.public_key)


def test_signing_a_signature_made_by_signedjson_verifies_here_and_a_changed_object_does_not():
    signing_key = signedjson.key.generate_signing_key("DEVICE")
    document = signedjson.sign.sign_json({"user_id": USER, "keys": {"a": "b"}}, USER, signing_key)
    public = encode_base64(signing_key.verify_key.encode())

    assert signature_valid(document, USER, "DEVICE", public)
    assert not signature_valid({**document, "keys": {"a": "c"}}, USER, "DEVICE", public)
    assert not signature_valid(document, USER, "OTHER", public)
    assert not signature_valid(document, USER, "DEVICE", SigningKey.generate().public_key)


def test_signing_a_second_signature_keeps_the_first():
    first, second = SigningKey.generate(), SigningKey.generate()

    signed = second.sign_json(first.sign_json({"k": 1}, USER), USER)

    assert signature_valid(signed, USER, first.public_key, first.public_key)
    assert signature_valid(signed, USER, second.public_key, second.public_key)
    assert signed_part(signed) == {"k": 1}


def test_signing_key_is_32_bytes_and_never_in_repr():
    key = SigningKey.generate()

    assert SigningKey.from_base64(key.to_base64()) == key
    assert key.to_base64() not in repr(key)
    with pytest.raises(ValueError, match="32 bytes"):
        SigningKey(b"short")
