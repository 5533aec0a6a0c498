"""Account creation through Synapse's shared-secret admin registration API."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from typing import Any

from mindroom.matrix.errors import MatrixRequestError
from mindroom.matrix.transport import JsonTransport

__all__ = ["RegisteredAccount", "register_with_shared_secret", "registration_mac"]

_REGISTER_PATH = "/_synapse/admin/v1/register"


@dataclass(frozen=True, slots=True)
class RegisteredAccount:
    """The session the registration API hands back."""

    user_id: str
    device_id: str
    access_token: str = field(repr=False)


def registration_mac(shared_secret: str, nonce: str, localpart: str, password: str, *, admin: bool) -> str:
    """HMAC-SHA1 over `nonce\\0localpart\\0password\\0admin|notadmin`, hex encoded."""
    mac = hmac.new(shared_secret.encode(), digestmod=hashlib.sha1)
    role = b"admin" if admin else b"notadmin"
    mac.update(b"\x00".join([nonce.encode(), localpart.encode(), password.encode(), role]))
    return mac.hexdigest()


async def register_with_shared_secret(
    transport: JsonTransport,
    shared_secret: str,
    localpart: str,
    password: str,
    *,
    admin: bool = False,
    displayname: str | None = None,
) -> RegisteredAccount:
    """Register `localpart`; an existing account raises `MatrixRequestError` with errcode `M_USER_IN_USE`."""
    nonce_reply = await transport.request("GET", _REGISTER_PATH, authenticated=False)
    nonce_reply.raise_for_error("registration nonce")
    nonce = nonce_reply.body.get("nonce") if isinstance(nonce_reply.body, dict) else None
    if not isinstance(nonce, str):
        raise MatrixRequestError("registration nonce", None, "no nonce in reply", nonce_reply.status)
    payload: dict[str, Any] = {
        "nonce": nonce,
        "username": localpart,
        "password": password,
        "admin": admin,
        "mac": registration_mac(shared_secret, nonce, localpart, password, admin=admin),
    }
    if displayname:
        payload["displayname"] = displayname
    reply = await transport.request("POST", _REGISTER_PATH, body=payload, authenticated=False)
    reply.raise_for_error("registration")
    body = reply.body if isinstance(reply.body, dict) else {}
    user_id, device_id, token = body.get("user_id"), body.get("device_id"), body.get("access_token")
    if not (isinstance(user_id, str) and isinstance(device_id, str) and isinstance(token, str)):
        raise MatrixRequestError("registration", None, "reply lacks user_id, device_id or access_token", reply.status)
    return RegisteredAccount(user_id=user_id, device_id=device_id, access_token=token)
