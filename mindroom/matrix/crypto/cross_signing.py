"""Cross-signing of one account: its master, self-signing and user-signing keys, and its devices signed by them.

The master key signs the other two; the self-signing key signs the account's devices. Clients trust a
device whose signature chain reaches a master key they trust, so a bot's device signed by its own
self-signing key stops Element's "not verified by its owner" warning. The public keys go up with
`POST /keys/device_signing/upload` (user-interactive auth with the account's password when the homeserver
asks for it), signatures with `POST /keys/signatures/upload`; `POST /keys/query` shows what is published.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mindroom.matrix.crypto.signing import SigningKey, signature_valid, signed_part
from mindroom.matrix.errors import MatrixRequestError
from mindroom.matrix.transport import JsonReply, JsonTransport

__all__ = [
    "SECRET_NAMES",
    "CrossSigningKeys",
    "PublishedIdentity",
    "published_identity",
    "query_identity",
    "sign_own_device",
    "upload_cross_signing_keys",
]

SECRET_NAMES = {
    "master": "m.cross_signing.master",
    "self_signing": "m.cross_signing.self_signing",
    "user_signing": "m.cross_signing.user_signing",
}
"""Each key's name in secret storage."""
_QUERY_PATH = "/_matrix/client/v3/keys/query"
_UPLOAD_PATH = "/_matrix/client/v3/keys/device_signing/upload"
_SIGNATURES_PATH = "/_matrix/client/v3/keys/signatures/upload"


@dataclass(frozen=True, slots=True)
class CrossSigningKeys:
    """The three private keys of one account."""

    master: SigningKey
    self_signing: SigningKey
    user_signing: SigningKey

    @classmethod
    def generate(cls) -> CrossSigningKeys:
        """Three new keys."""
        return cls(SigningKey.generate(), SigningKey.generate(), SigningKey.generate())

    @classmethod
    def from_seeds(cls, seeds: Mapping[str, Any]) -> CrossSigningKeys | None:
        """From `{master, self_signing, user_signing}` seeds in base64; None when one is missing or malformed."""
        try:
            return cls(*(SigningKey.from_base64(str(seeds[usage])) for usage in SECRET_NAMES))
        except (KeyError, ValueError):
            return None

    def seeds(self) -> dict[str, str]:
        """`{master, self_signing, user_signing}`: each seed in base64."""
        return {usage: getattr(self, usage).to_base64() for usage in SECRET_NAMES}

    def key_object(self, user_id: str, usage: str) -> dict[str, Any]:
        """The published form of one key (`CrossSigningKey`), the two lesser ones signed by the master key."""
        key: SigningKey = getattr(self, usage)
        published = {"user_id": user_id, "usage": [usage], "keys": {f"ed25519:{key.public_key}": key.public_key}}
        return published if usage == "master" else self.master.sign_json(published, user_id)


@dataclass(frozen=True, slots=True)
class PublishedIdentity:
    """What the homeserver publishes of the account's cross-signing and of one of its devices."""

    master: str | None
    """The master public key, or None when the account has no cross-signing."""
    self_signing: str | None
    """The self-signing public key, when the master key's signature over it checks out."""
    device: dict[str, Any] | None = field(repr=False)
    """The device's keys as published (None when the homeserver does not know the device)."""
    device_signed: bool
    """True when the self-signing key's signature over the device checks out (a real ed25519 verification)."""


def _single_key(key_object: Any) -> str | None:
    keys = key_object.get("keys") if isinstance(key_object, dict) else None
    if not isinstance(keys, dict) or len(keys) != 1:
        return None
    key_id, public = next(iter(keys.items()))
    return public if isinstance(public, str) and key_id == f"ed25519:{public}" else None


def published_identity(body: Mapping[str, Any], user_id: str, device_id: str) -> PublishedIdentity:
    """Read a `/keys/query` answer: the account's keys and whether the chain master -> self-signing -> device holds."""
    master_object = dict(body.get("master_keys") or {}).get(user_id)
    ssk_object: dict[str, Any] = dict(body.get("self_signing_keys") or {}).get(user_id) or {}
    device = dict(dict(body.get("device_keys") or {}).get(user_id) or {}).get(device_id)
    master = _single_key(master_object)
    ssk = _single_key(ssk_object)
    if ssk is not None and (master is None or not signature_valid(ssk_object, user_id, master, master)):
        ssk = None
    device = device if isinstance(device, dict) else None
    signed = bool(ssk and device and signature_valid(device, user_id, ssk, ssk))
    return PublishedIdentity(master=master, self_signing=ssk, device=device, device_signed=signed)


async def query_identity(transport: JsonTransport, user_id: str, device_id: str) -> PublishedIdentity:
    """Ask the homeserver what it publishes of the account's keys and of `device_id`."""
    reply = await transport.request("POST", _QUERY_PATH, body={"device_keys": {user_id: [device_id]}})
    reply.raise_for_error("query the account's keys")
    return published_identity(reply.body if isinstance(reply.body, dict) else {}, user_id, device_id)


def _password_auth(reply: JsonReply, user_id: str, password: str | None) -> dict[str, Any] | None:
    """The `auth` for a retry when the homeserver asked for user-interactive auth that a password satisfies."""
    body = reply.body if isinstance(reply.body, dict) else {}
    raw_flows = body.get("flows")
    flows: list[Any] = raw_flows if isinstance(raw_flows, list) else []
    by_password = any(isinstance(flow, dict) and flow.get("stages") == ["m.login.password"] for flow in flows)
    if reply.status != 401 or not password or not by_password:
        return None
    identifier = {"type": "m.id.user", "user": user_id}
    return {"type": "m.login.password", "identifier": identifier, "password": password, "session": body.get("session")}


async def upload_cross_signing_keys(
    transport: JsonTransport, user_id: str, keys: CrossSigningKeys, password: str | None
) -> None:
    """Publish the account's three public keys; the password answers the homeserver's auth when it asks."""
    body: dict[str, Any] = {
        "master_key": keys.key_object(user_id, "master"),
        "self_signing_key": keys.key_object(user_id, "self_signing"),
        "user_signing_key": keys.key_object(user_id, "user_signing"),
    }
    reply = await transport.request("POST", _UPLOAD_PATH, body=body)
    auth = _password_auth(reply, user_id, password)
    if auth is not None:
        reply = await transport.request("POST", _UPLOAD_PATH, body={**body, "auth": auth})
    reply.raise_for_error("upload cross-signing keys")


async def sign_own_device(
    transport: JsonTransport,
    user_id: str,
    device_id: str,
    device: Mapping[str, Any],
    keys: CrossSigningKeys,
    device_signature: str,
) -> None:
    """Sign the device with the self-signing key, and the master key with the device (`device_signature`)."""
    signed_device = keys.self_signing.sign_json(signed_part(device), user_id)
    master = keys.key_object(user_id, "master")
    signed_master = {**master, "signatures": {user_id: {f"ed25519:{device_id}": device_signature}}}
    body = {user_id: {device_id: signed_device, keys.master.public_key: signed_master}}
    reply = await transport.request("POST", _SIGNATURES_PATH, body=body)
    reply.raise_for_error("upload cross-signing signatures")
    failures = reply.body.get("failures") if isinstance(reply.body, dict) else None
    refused = dict(failures or {}).get(user_id)
    if isinstance(refused, dict) and device_id in refused:
        problem = refused[device_id]
        errcode = problem.get("errcode") if isinstance(problem, dict) else None
        raise MatrixRequestError("sign the device", errcode, str(problem), reply.status)
