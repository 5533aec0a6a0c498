"""The calls to a provider's endpoints: the code exchange, a refresh, a revocation (RFC 6749, 7636, 7009).

Every call goes to the provider's configured URL only: redirects are not followed (a token or secret never
goes to a second address), and each is bounded by a timeout. A provider whose endpoints were found by
discovery sends through its own `post`, which checks each endpoint's addresses and connects to those only.
A provider's error is reported by its `error` code and HTTP status, never by the body, which may echo what
was sent.
"""

from __future__ import annotations

import base64
import functools
import importlib
import json
import time
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

from mindroom.hidden_imports import hidden_while_importing
from mindroom.oauth.errors import OAuthError
from mindroom.oauth.providers import ResolvedProvider
from mindroom.oauth.vault import OAuthTokens

if TYPE_CHECKING:
    import httpx

__all__ = [
    "TIMEOUT_S",
    "exchange_code",
    "http_client",
    "httpx_module",
    "post_form",
    "refresh_tokens",
    "revoke_tokens",
]

TIMEOUT_S = 15.0


@functools.cache
def httpx_module() -> ModuleType:
    """httpx, imported at the first OAuth call (not at start), without its command line's pygments."""
    with hidden_while_importing("pygments"):
        return importlib.import_module("httpx")


def http_client(timeout_s: float = TIMEOUT_S) -> httpx.AsyncClient:
    """A client that never follows a redirect: a token or secret goes to the one URL it was meant for."""
    client: httpx.AsyncClient = httpx_module().AsyncClient(timeout=timeout_s, follow_redirects=False)
    return client


async def post_form(url: str, form: Mapping[str, str], headers: Mapping[str, str]) -> tuple[int, bytes]:
    """POST `form` to `url` with a client that follows no redirect: the status and body (`EndpointPost`)."""
    httpx = httpx_module()
    try:
        async with http_client() as client:
            response = await client.post(url, data=dict(form), headers=dict(headers))
    except httpx.HTTPError as error:
        raise ConnectionError(type(error).__name__) from None
    return response.status_code, response.content


def _authenticated(provider: ResolvedProvider, form: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The form and headers that carry the client's authentication (RFC 6749 section 2.3.1)."""
    if provider.auth_method == "client_secret_basic" and provider.client_secret:
        pair = f"{provider.client_id}:{provider.client_secret}".encode()
        return form, {"Authorization": "Basic " + base64.b64encode(pair).decode("ascii")}
    form = {**form, "client_id": provider.client_id}
    if provider.auth_method == "client_secret_post" and provider.client_secret:
        form["client_secret"] = provider.client_secret
    return form, {}


async def _post(provider: ResolvedProvider, url: str, form: dict[str, str], action: str) -> tuple[int, bytes]:
    data, headers = _authenticated(provider, form)
    try:
        return await (provider.post or post_form)(url, data, {"Accept": "application/json", **headers})
    except ConnectionError as error:
        raise OAuthError(f"{provider.id}: the {action} failed ({error})") from None


async def _token_request(provider: ResolvedProvider, form: dict[str, str], action: str) -> dict[str, Any]:
    status, content = await _post(provider, provider.token_url, {**provider.extra_token_params, **form}, action)
    try:
        body = json.loads(content) if content else {}
    except ValueError:
        body = {}
    if status != 200 or not isinstance(body, dict) or not body.get("access_token"):
        code = body.get("error") if isinstance(body, dict) else None
        raise OAuthError(f"{provider.id}: the {action} was refused (HTTP {status}, {code or 'no token'})")
    return body


def _tokens(provider: ResolvedProvider, body: dict[str, Any], previous: OAuthTokens | None = None) -> OAuthTokens:
    expires_in = body.get("expires_in")
    expires_at = time.time() + float(expires_in) if isinstance(expires_in, int | float | str) and expires_in else None
    return OAuthTokens(
        access_token=str(body["access_token"]),
        token_url=provider.token_url,
        # A refresh that returns no new refresh token keeps the old one (RFC 6749 section 6).
        refresh_token=body.get("refresh_token") or (previous.refresh_token if previous else None),
        expires_at=expires_at,
        scope=body.get("scope") or (previous.scope if previous else None),
        connected_at=previous.connected_at if previous else time.time(),
    )


async def exchange_code(provider: ResolvedProvider, code: str, verifier: str) -> OAuthTokens:
    """Trade an authorization code (and its PKCE verifier) for tokens; `OAuthError` when refused."""
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": provider.redirect_uri,
        "code_verifier": verifier,
    }
    return _tokens(provider, await _token_request(provider, form, "code exchange"))


async def refresh_tokens(provider: ResolvedProvider, tokens: OAuthTokens) -> OAuthTokens:
    """New tokens from the refresh token, at the token endpoint they came from; `OAuthError` when refused."""
    if not tokens.refresh_token:
        raise OAuthError(f"{provider.id}: the access token expired and there is no refresh token")
    if tokens.token_url != provider.token_url:
        raise OAuthError(f"{provider.id}: the token endpoint changed since the account was connected")
    form = {"grant_type": "refresh_token", "refresh_token": tokens.refresh_token}
    return _tokens(provider, await _token_request(provider, form, "refresh"), tokens)


async def revoke_tokens(provider: ResolvedProvider, tokens: OAuthTokens) -> bool:
    """Revoke the tokens at the provider's RFC 7009 endpoint (refresh token first); False when it has none."""
    if not provider.revocation_url:
        return False
    pairs = [(tokens.refresh_token, "refresh_token"), (tokens.access_token, "access_token")]
    for token, hint in pairs:
        if not token:
            continue
        form = {"token": token, "token_type_hint": hint}
        status, _ = await _post(provider, provider.revocation_url, form, "revocation")
        if status != 200:
            raise OAuthError(f"{provider.id}: the revocation was refused (HTTP {status})")
    return True
