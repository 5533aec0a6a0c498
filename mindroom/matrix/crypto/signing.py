"""Signed JSON as Matrix defines it: canonical JSON, unpadded base64, and ed25519 keys that sign and check.

A device signs with its olm account (nio holds that key); the cross-signing keys are ed25519 key pairs of
their own, kept as 32-byte seeds. Signatures are made over the canonical JSON of an object without its
`signatures` and `unsigned` members, and added under `signatures[user_id]["ed25519:<key id>"]`.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

__all__ = [
    "SigningKey",
    "add_signature",
    "canonical_json",
    "decode_base64",
    "encode_base64",
    "signature_valid",
    "signed_part",
]


def canonical_json(value: Any) -> bytes:
    """UTF-8 JSON with sorted keys and no insignificant whitespace (Matrix's canonical form)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False).encode()


def encode_base64(data: bytes) -> str:
    """Standard base64 without the `=` padding, as Matrix writes keys and signatures."""
    return base64.b64encode(data).decode().rstrip("=")


def decode_base64(text: str) -> bytes:
    """Standard base64, padded or not; raises `ValueError` for anything else."""
    stripped = text.strip().rstrip("=")
    try:
        return base64.b64decode(stripped + "=" * (-len(stripped) % 4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"not base64: {exc}") from exc


def signed_part(value: Mapping[str, Any]) -> dict[str, Any]:
    """The members of a signed object that its signatures cover (all but `signatures` and `unsigned`)."""
    return {key: item for key, item in value.items() if key not in ("signatures", "unsigned")}


def add_signature(value: Mapping[str, Any], user_id: str, key_id: str, signature: str) -> dict[str, Any]:
    """A copy of `value` with one more signature, the existing ones kept."""
    signed = dict(value)
    signatures = {user: dict(keys) for user, keys in dict(value.get("signatures") or {}).items()}
    signatures.setdefault(user_id, {})[f"ed25519:{key_id}"] = signature
    signed["signatures"] = signatures
    return signed


def signature_valid(value: Mapping[str, Any], user_id: str, key_id: str, public_key: str) -> bool:
    """True when `value` carries a signature by `user_id`'s key `ed25519:<key_id>` that `public_key` verifies."""
    signature = dict(dict(value.get("signatures") or {}).get(user_id) or {}).get(f"ed25519:{key_id}")
    if not isinstance(signature, str):
        return False
    try:
        verifier = Ed25519PublicKey.from_public_bytes(decode_base64(public_key))
        verifier.verify(decode_base64(signature), canonical_json(signed_part(value)))
    except (ValueError, InvalidSignature):
        return False
    return True


@dataclass(frozen=True, slots=True)
class SigningKey:
    """An ed25519 key pair kept as its 32-byte seed (a cross-signing key); the seed stays out of `repr`."""

    seed: bytes = field(repr=False)

    def __post_init__(self) -> None:
        if len(self.seed) != 32:
            msg = f"an ed25519 seed has 32 bytes, not {len(self.seed)}"
            raise ValueError(msg)

    @classmethod
    def generate(cls) -> SigningKey:
        """A new random key."""
        return cls(secrets.token_bytes(32))

    @classmethod
    def from_base64(cls, text: str) -> SigningKey:
        """The key whose seed is `text` in base64 (how secret storage keeps it)."""
        return cls(decode_base64(text))

    @property
    def public_key(self) -> str:
        """The public key in unpadded base64 (also the key's id: `ed25519:<public key>`)."""
        public = Ed25519PrivateKey.from_private_bytes(self.seed).public_key()
        # `public_bytes_raw`, not `public_bytes(Encoding.Raw, ...)`: the serialization module loads SSH keys and bcrypt.
        return encode_base64(public.public_bytes_raw())

    def to_base64(self) -> str:
        """The seed in unpadded base64."""
        return encode_base64(self.seed)

    def sign(self, message: bytes) -> str:
        """The signature of `message`, unpadded base64."""
        return encode_base64(Ed25519PrivateKey.from_private_bytes(self.seed).sign(message))

    def sign_json(self, value: Mapping[str, Any], user_id: str) -> dict[str, Any]:
        """A copy of `value` signed by this key as `user_id`'s `ed25519:<public key>`."""
        signature = self.sign(canonical_json(signed_part(value)))
        return add_signature(value, user_id, self.public_key, signature)
