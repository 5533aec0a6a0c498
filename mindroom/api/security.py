"""Who may call the HTTP app: bearer keys (and the dashboard's cookie), and the Host/Origin checks that keep
a keyless loopback server from being reached through DNS rebinding or another site's page.

`/v1` takes `OPENAI_COMPAT_API_KEYS`; `/api`, the dashboard and `/metrics` take `MINDROOM_API_KEY` (or the key
`mindroom run` generated; `/metrics` also `MINDROOM_METRICS_TOKEN`). Keys are compared in constant time. With no
key at all each side refuses every request unless the operator opted out (`OPENAI_COMPAT_ALLOW_UNAUTHENTICATED`,
`MINDROOM_API_ALLOW_UNAUTHENTICATED`); then a request must name this machine (or an allowed host) as its Host,
and a browser's request must come from the same origin.
"""

from __future__ import annotations

import hmac
import ipaddress
from dataclasses import dataclass
from urllib.parse import urlparse

from fastapi import HTTPException
from starlette.requests import Request

from mindroom.api.openai_protocol import OpenAIError, session_namespace
from mindroom.api.settings import ApiSettings

__all__ = [
    "COOKIE_NAME",
    "V1Principal",
    "bearer_token",
    "dashboard_principal",
    "matches",
    "open_access_rejection",
    "v1_principal",
]

COOKIE_NAME = "mindroom_api_key"
_SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}


@dataclass(frozen=True, slots=True)
class V1Principal:
    """A `/v1` caller: its session namespace, the person its turns act for, and its rate-limit key."""

    namespace: str
    requester: str | None
    rate_key: str


def bearer_token(request: Request) -> str | None:
    """The `Authorization: Bearer <token>` value, if the request has one."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def matches(presented: str | None, *keys: str | None) -> bool:
    """True when `presented` is one of `keys` (constant-time comparison)."""
    if not presented:
        return False
    found = False
    for key in keys:
        if key and hmac.compare_digest(presented.encode(), key.encode()):
            found = True
    return found


def _host_of(value: str) -> str:
    """The host name of a `Host` header value (port and IPv6 brackets dropped), lowercased."""
    parsed = urlparse(f"//{value}")
    return (parsed.hostname or "").lower()


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def open_access_rejection(request: Request, settings: ApiSettings) -> str | None:
    """Why a request without a credential is refused (None: accepted).

    The Host must be localhost, `*.localhost`, an IP address or an allowed host (a DNS name that points
    here from another site's page would otherwise reach the API); a browser's request must be same-origin.
    """
    raw_host = request.headers.get("host", "")
    host = _host_of(raw_host)
    if not (host == "localhost" or host.endswith(".localhost") or _is_ip(host) or host in settings.allowed_hosts):
        return (
            f"Host '{host}' is not allowed without a credential; "
            "set MINDROOM_DASHBOARD_ALLOWED_HOSTS, or use an API key"
        )
    origin = request.headers.get("origin")
    site = request.headers.get("sec-fetch-site")
    cross_origin = origin is not None and (origin == "null" or urlparse(origin).netloc.lower() != raw_host.lower())
    if cross_origin or site == "cross-site":
        return "Cross-site browser requests are not allowed without a credential"
    return None


def v1_principal(request: Request, settings: ApiSettings) -> V1Principal:
    """The `/v1` caller, or `OpenAIError` (401 without a valid key, 403 from another site, 503 bad mapping)."""
    if settings.openai_keys:
        token = bearer_token(request)
        if token is None:
            raise OpenAIError(401, "Missing or invalid Authorization header", code="invalid_api_key")
        if not matches(token, *settings.openai_keys):
            raise OpenAIError(401, "Invalid API key", code="invalid_api_key")
        if settings.requesters is None:
            raise OpenAIError(503, "Invalid API requester configuration", type_="server_error")
        requester = settings.requesters.get(token)
        if requester is not None and not (requester.startswith("@") and ":" in requester):
            raise OpenAIError(403, "API requester must be a human identity", code="permission_denied")
        namespace = session_namespace(token)
        return V1Principal(namespace, requester, namespace)
    if not settings.allow_unauthenticated:
        raise OpenAIError(401, "OpenAI-compatible API keys are not configured", code="invalid_api_key")
    rejection = open_access_rejection(request, settings)
    if rejection is not None:
        raise OpenAIError(403, rejection, code="permission_denied")
    client = request.client.host if request.client is not None else "local"
    return V1Principal(session_namespace(None), None, f"noauth:{client}")


def dashboard_principal(request: Request, settings: ApiSettings, *, metrics: bool = False) -> str:
    """Who a `/api` (or dashboard, or `/metrics`) request acts as: the key's owner; else HTTP 401 or 403.

    Without a key every request is refused (401) unless `MINDROOM_API_ALLOW_UNAUTHENTICATED` opted out.

    A request authenticated by the cookie alone that changes something must come from the dashboard's own
    origin (a form on another site carries the cookie too).
    """
    if not settings.api_key and not (metrics and settings.metrics_token):
        if not settings.api_allow_unauthenticated:
            # A loopback port is no boundary: a sandboxed child or another local user reaches it too.
            raise HTTPException(
                status_code=401, detail="MINDROOM_API_KEY is not configured", headers={"WWW-Authenticate": "Bearer"}
            )
        rejection = open_access_rejection(request, settings)
        if rejection is not None:
            raise HTTPException(status_code=403, detail=rejection)
        return settings.owner
    token = bearer_token(request)
    extra = settings.metrics_token if metrics else None
    if token is not None:
        if matches(token, settings.api_key, extra):
            return settings.owner
        raise HTTPException(status_code=401, detail="Invalid API key", headers={"WWW-Authenticate": "Bearer"})
    cookie = request.cookies.get(COOKIE_NAME)
    if not matches(cookie, settings.api_key):
        raise HTTPException(
            status_code=401, detail="Missing or invalid credentials", headers={"WWW-Authenticate": "Bearer"}
        )
    if request.method not in _SAFE_METHODS:
        origin = request.headers.get("origin")
        if request.headers.get("sec-fetch-site") == "cross-site" or (
            origin is not None and urlparse(origin).netloc.lower() != request.headers.get("host", "").lower()
        ):
            raise HTTPException(status_code=403, detail="Cross-site requests may not change anything")
    return settings.owner
