"""`ApiSettings`: where the HTTP app listens, its keys, and its limits, from `mindroom run`'s options and the
environment the one reader read (`mindroom.config.environment`).

| variable | meaning |
|---|---|
| `OPENAI_COMPAT_API_KEYS` | comma-separated bearer keys for `/v1` |
| `OPENAI_COMPAT_ALLOW_UNAUTHENTICATED` | `true`: `/v1` without a key (only when no key is set; Host/Origin checked) |
| `OPENAI_COMPAT_API_KEY_REQUESTERS` | JSON `{"<key>": "@user:server"}`: whom a key's turns act for |
| `MINDROOM_API_KEY` | bearer key (or cookie) for `/api`, the dashboard and `/metrics` (`mindroom run` makes one) |
| `MINDROOM_API_ALLOW_UNAUTHENTICATED` | `true`: `/api` without a key (when none is set; Host/Origin checked) |
| `MINDROOM_METRICS_TOKEN` | a bearer token that reads `/metrics` only (for a Prometheus scraper) |
| `MINDROOM_DASHBOARD_ALLOWED_HOSTS` | comma-separated extra Host names accepted without a key (opted-out) |
| `MINDROOM_PUBLIC_URL`, `MINDROOM_BASE_URL`, `MINDROOM_URL` | their hosts are accepted too |
| `MINDROOM_ENABLE_API_DOCS` | `true` serves `/docs` and `/redoc` (behind the key, as `/openapi.json` is); default off |
| `MINDROOM_OWNER_USER_ID` | who dashboard decisions (approvals) are recorded as; else `MINDROOM_USER` |
| `MINDROOM_API_RATE_LIMIT` | requests per minute per key on `/api` (default 600) |
| `OPENAI_COMPAT_RATE_LIMIT` | completions per minute per key on `/v1` (default 60) |
| `MINDROOM_API_MAX_TURNS` | `/v1` completions running at once, over all keys (default 8) |
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlparse

from mindroom.errors import MindroomError

__all__ = [
    "DEFAULT_API_HOST",
    "DEFAULT_API_PORT",
    "MAX_BODY_BYTES",
    "ApiSettings",
    "BindRefusedError",
    "api_settings",
    "is_loopback",
]

DEFAULT_API_HOST = "127.0.0.1"
DEFAULT_API_PORT = 8765
MAX_BODY_BYTES = 16 * 1024 * 1024
_TRUE = {"1", "true", "yes", "on"}
_URL_VARIABLES = ("MINDROOM_PUBLIC_URL", "MINDROOM_BASE_URL", "MINDROOM_URL", "MINDROOM_SCRIPT_GATEWAY_URL")


class BindRefusedError(MindroomError):
    """The HTTP app was asked to listen beyond this machine without the keys that would protect it."""


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses (only this machine can connect)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class ApiSettings:
    """The HTTP app's address, keys and limits (secrets hidden from `repr`)."""

    host: str = DEFAULT_API_HOST
    port: int = DEFAULT_API_PORT
    openai_keys: tuple[str, ...] = field(default=(), repr=False)
    allow_unauthenticated: bool = False
    """`/v1` without a key while `OPENAI_COMPAT_API_KEYS` is empty."""
    requesters: Mapping[str, str] | None = field(default=None, repr=False)
    """Key -> the Matrix user its turns act for; None when `OPENAI_COMPAT_API_KEY_REQUESTERS` is invalid."""
    api_key: str | None = field(default=None, repr=False)
    api_allow_unauthenticated: bool = False
    """`/api`, the dashboard and `/metrics` without a key while `api_key` is None (otherwise they refuse all)."""
    metrics_token: str | None = field(default=None, repr=False)
    allowed_hosts: frozenset[str] = frozenset()
    docs: bool = False
    owner: str = "dashboard"
    rate_per_minute: int = 600
    completions_per_minute: int = 60
    max_turns: int = 8
    max_body_bytes: int = MAX_BODY_BYTES
    body_timeout_s: float = 30.0
    completion_timeout_s: float = 900.0

    @property
    def url(self) -> str:
        """The dashboard's address."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host  # a wildcard is not an address
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}"

    def check_bind(self) -> None:
        """Refuse (`BindRefusedError`) to listen beyond loopback while `/api` or `/v1` would be open to anyone."""
        if is_loopback(self.host):
            return
        missing = []
        if not self.api_key:
            why = "; MINDROOM_API_ALLOW_UNAUTHENTICATED is for loopback only" if self.api_allow_unauthenticated else ""
            missing.append(f"MINDROOM_API_KEY (for /api and the dashboard{why})")
        if self.allow_unauthenticated and not self.openai_keys:
            missing.append("OPENAI_COMPAT_API_KEYS (OPENAI_COMPAT_ALLOW_UNAUTHENTICATED opens /v1 to anyone)")
        if missing:
            msg = (
                f"refusing to serve the API on {self.host}, beyond this machine, without "
                + " and ".join(missing)
                + "; set the key, or keep --api-host 127.0.0.1 (the default) behind a reverse proxy"
            )
            raise BindRefusedError(msg)


def _flag(values: Mapping[str, str], name: str) -> bool:
    return values.get(name, "").strip().lower() in _TRUE


def _int(values: Mapping[str, str], name: str, default: int) -> int:
    try:
        return max(1, int(values.get(name, default)))
    except ValueError:
        return default


def _requesters(raw: str | None) -> Mapping[str, str] | None:
    if not raw or not raw.strip():
        return {}
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError:
        return None
    if not isinstance(parsed, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in parsed.items()):
        return None
    return dict(parsed)


def _allowed_hosts(values: Mapping[str, str]) -> frozenset[str]:
    hosts = {h.strip().lower() for h in values.get("MINDROOM_DASHBOARD_ALLOWED_HOSTS", "").split(",") if h.strip()}
    for name in _URL_VARIABLES:
        host = urlparse(values.get(name) or "").hostname
        if host:
            hosts.add(host.lower())
    return frozenset(hosts)


def api_settings(
    values: Mapping[str, str],
    *,
    host: str = DEFAULT_API_HOST,
    port: int = DEFAULT_API_PORT,
    api_key: str | None = None,
) -> ApiSettings:
    """The settings from the environment's `values` (`DaemonEnvironment.values`), the bind address, and the key
    `mindroom run` generated (`api_key`, used when the environment sets none)."""
    keys = tuple(key.strip() for key in values.get("OPENAI_COMPAT_API_KEYS", "").split(",") if key.strip())
    return ApiSettings(
        host=host,
        port=port,
        openai_keys=keys,
        allow_unauthenticated=_flag(values, "OPENAI_COMPAT_ALLOW_UNAUTHENTICATED"),
        requesters=_requesters(values.get("OPENAI_COMPAT_API_KEY_REQUESTERS")),
        api_key=(values.get("MINDROOM_API_KEY") or "").strip() or api_key,
        api_allow_unauthenticated=_flag(values, "MINDROOM_API_ALLOW_UNAUTHENTICATED"),
        metrics_token=(values.get("MINDROOM_METRICS_TOKEN") or "").strip() or None,
        allowed_hosts=_allowed_hosts(values),
        docs=_flag(values, "MINDROOM_ENABLE_API_DOCS"),
        owner=values.get("MINDROOM_OWNER_USER_ID") or values.get("MINDROOM_USER") or "dashboard",
        rate_per_minute=_int(values, "MINDROOM_API_RATE_LIMIT", 600),
        completions_per_minute=_int(values, "OPENAI_COMPAT_RATE_LIMIT", 60),
        max_turns=_int(values, "MINDROOM_API_MAX_TURNS", 8),
    )
