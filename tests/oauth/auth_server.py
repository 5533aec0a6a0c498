"""A real OAuth 2.0 authorization server on loopback, built from Authlib's framework-independent classes.

Authorization code with PKCE (S256 required), refresh tokens (rotated), RFC 7009 revocation, and a small
resource API (`GET /api/me`) that answers only to a live bearer token. Served by the standard library's
WSGI server in a thread. The test is the browser: `approve(url, user)` opens the authorization URL and
approves it as `user`, returning where the server redirects to (the daemon's callback, with `code` and
`state`). `expire_access_tokens()` makes every issued access token expired now, without waiting.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from authlib.oauth2 import AuthorizationServer, OAuth2Error, OAuth2Request
from authlib.oauth2.rfc6749 import ClientMixin, grants
from authlib.oauth2.rfc6749.requests import BasicOAuth2Payload, JsonRequest
from authlib.oauth2.rfc6750 import BearerToken
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7636 import CodeChallenge

# Authlib refuses plain HTTP outside this switch; the server only ever listens on loopback.
os.environ.setdefault("AUTHLIB_INSECURE_TRANSPORT", "1")

__all__ = ["LoopbackAuthServer", "loopback_auth_server"]

_AUTH_METHODS = ["client_secret_post", "client_secret_basic", "none"]


@dataclass
class _Client(ClientMixin):
    client_id: str
    client_secret: str
    redirect_uris: list[str]

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str:
        return self.redirect_uris[0]

    def get_allowed_scope(self, scope: str) -> str:
        return scope or ""

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in self.redirect_uris

    def check_client_secret(self, client_secret: str) -> bool:
        return secrets.compare_digest(client_secret, self.client_secret)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method in ("client_secret_post", "client_secret_basic")

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in ("authorization_code", "refresh_token")


@dataclass
class _Code:
    code: str
    client_id: str
    redirect_uri: str
    scope: str
    user: str
    code_challenge: str | None
    code_challenge_method: str | None

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope


@dataclass
class _Token:
    client_id: str
    user: str
    access_token: str
    refresh_token: str | None
    scope: str
    expires_at: float
    revoked: bool = False

    def check_client(self, client: _Client) -> bool:
        return client.client_id == self.client_id

    def get_scope(self) -> str:
        return self.scope

    def get_expires_in(self) -> int:
        return int(self.expires_at - time.time())

    def is_expired(self) -> bool:
        return time.time() >= self.expires_at

    def is_revoked(self) -> bool:
        return self.revoked

    def get_user(self) -> str:
        return self.user

    def get_client(self) -> str:
        return self.client_id


@dataclass
class _State:
    clients: dict[str, _Client] = field(default_factory=dict)
    codes: dict[str, _Code] = field(default_factory=dict)
    tokens: list[_Token] = field(default_factory=list)
    token_requests: list[dict[str, str]] = field(default_factory=list)
    revocations: list[str] = field(default_factory=list)
    expires_in: int = 3600
    lock: threading.Lock = field(default_factory=threading.Lock)


class _CodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = _AUTH_METHODS

    def save_authorization_code(self, code: str, request: OAuth2Request) -> None:
        data = request.payload.data
        state: _State = self.server.state
        state.codes[code] = _Code(
            code,
            request.client.client_id,
            request.payload.redirect_uri,
            request.payload.scope or "",
            request.user,
            data.get("code_challenge"),
            data.get("code_challenge_method"),
        )

    def query_authorization_code(self, code: str, client: _Client) -> _Code | None:
        found = self.server.state.codes.get(code)
        return found if found is not None and found.client_id == client.client_id else None

    def delete_authorization_code(self, authorization_code: _Code) -> None:
        self.server.state.codes.pop(authorization_code.code, None)

    def authenticate_user(self, authorization_code: _Code) -> str:
        return authorization_code.user


class _RefreshGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = _AUTH_METHODS
    INCLUDE_NEW_REFRESH_TOKEN = True

    def authenticate_refresh_token(self, refresh_token: str) -> _Token | None:
        for token in self.server.state.tokens:
            if token.refresh_token == refresh_token and not token.revoked:
                return token
        return None

    def authenticate_user(self, refresh_token: _Token) -> str:
        return refresh_token.user

    def revoke_old_credential(self, refresh_token: _Token) -> None:
        refresh_token.revoked = True


class _Revocation(RevocationEndpoint):
    CLIENT_AUTH_METHODS = _AUTH_METHODS

    def query_token(self, token_string: str, token_type_hint: str | None) -> _Token | None:
        for token in self.server.state.tokens:
            if token_string in (token.access_token, token.refresh_token):
                return token
        return None

    def revoke_token(self, token: _Token, request: OAuth2Request) -> None:
        token.revoked = True
        self.server.state.revocations.append(token.user)


class _Request(OAuth2Request):
    def __init__(self, request: dict[str, Any]) -> None:
        super().__init__(request["method"], request["uri"], headers=request["headers"])
        self.payload = BasicOAuth2Payload(request["data"])
        self._query, self._form = request["query"], request["form"]

    @property
    def args(self) -> dict[str, str]:
        return self._query

    @property
    def form(self) -> dict[str, str]:
        return self._form


class _Server(AuthorizationServer):
    def __init__(self, state: _State) -> None:
        super().__init__()
        self.state = state
        self.register_token_generator(
            "default",
            BearerToken(
                lambda *a, **k: secrets.token_urlsafe(24),
                lambda *a, **k: secrets.token_urlsafe(24),
                lambda client, grant_type: state.expires_in,
            ),
        )
        self.register_grant(_CodeGrant, [CodeChallenge(required=True)])
        self.register_grant(_RefreshGrant)
        self.register_endpoint(_Revocation)

    def query_client(self, client_id: str) -> _Client | None:
        return self.state.clients.get(client_id)

    def save_token(self, token: dict[str, Any], request: OAuth2Request) -> None:
        self.state.tokens.append(
            _Token(
                request.client.client_id,
                request.user,
                token["access_token"],
                token.get("refresh_token"),
                token.get("scope", ""),
                time.time() + token["expires_in"],
            )
        )

    def create_oauth2_request(self, request: dict[str, Any]) -> OAuth2Request:
        return _Request(request)

    def create_json_request(self, request: dict[str, Any]) -> JsonRequest:
        return JsonRequest(request["method"], request["uri"], request["headers"])

    def handle_response(self, status: int, body: Any, headers: list[tuple[str, str]]) -> tuple[int, Any, list]:
        return status, body, list(headers)

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        """No signals are listened to."""


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No access log on stderr."""


class LoopbackAuthServer:
    """The running server: its URLs, clients, and what it issued, revoked and was asked."""

    def __init__(self, url: str, state: _State) -> None:
        self.url = url
        self.state = state

    @property
    def authorization_url(self) -> str:
        return self.url + "/authorize"

    @property
    def token_url(self) -> str:
        return self.url + "/token"

    @property
    def revocation_url(self) -> str:
        return self.url + "/revoke"

    @property
    def api_url(self) -> str:
        return self.url + "/api"

    def add_client(self, client_id: str, client_secret: str, redirect_uri: str) -> None:
        self.state.clients[client_id] = _Client(client_id, client_secret, [redirect_uri])

    def set_access_token_lifetime(self, seconds: int) -> None:
        self.state.expires_in = seconds

    def expire_access_tokens(self) -> None:
        with self.state.lock:
            for token in self.state.tokens:
                token.expires_at = time.time() - 1

    def live_tokens(self, user: str) -> list[_Token]:
        return [t for t in self.state.tokens if t.user == user and not t.revoked and not t.is_expired()]

    def issued(self) -> list[str]:
        """Every access and refresh token issued so far (for checking that none leaks)."""
        return [value for t in self.state.tokens for value in (t.access_token, t.refresh_token) if value]


def _app(server: _Server) -> Any:
    state = server.state

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        method, path = environ["REQUEST_METHOD"], environ["PATH_INFO"]
        query = environ.get("QUERY_STRING", "")
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length).decode() if length else ""
        headers = {k[5:].replace("_", "-").title(): v for k, v in environ.items() if k.startswith("HTTP_")}
        if environ.get("CONTENT_TYPE"):
            headers["Content-Type"] = environ["CONTENT_TYPE"]
        args, form = dict(parse_qsl(query)), dict(parse_qsl(body))
        data = args | form
        uri = f"http://{environ['HTTP_HOST']}{path}" + (f"?{query}" if query else "")
        request = {"method": method, "uri": uri, "headers": headers, "data": data, "query": args, "form": form}
        with state.lock:
            status, payload, extra = _route(server, path, method, request, data, headers)
        reply = payload if isinstance(payload, str) else json.dumps(payload)
        start_response(f"{status} X", [("Content-Type", "application/json"), *extra])
        return [reply.encode()]

    return app


def _route(server: _Server, path: str, method: str, request: dict, data: dict, headers: dict) -> tuple[int, Any, list]:
    state = server.state
    if path == "/authorize":
        try:
            grant = server.get_consent_grant(request, end_user=data.get("approve_as"))
        except OAuth2Error as error:
            return 400, dict(error.get_body()), []
        if method == "GET":
            return 200, {"consent": grant.client.client_id, "scope": grant.request.payload.scope or ""}, []
        return server.create_authorization_response(request, grant_user=data["approve_as"], grant=grant)
    if path == "/token" and method == "POST":
        state.token_requests.append(data)
        return server.create_token_response(request)
    if path == "/revoke" and method == "POST":
        return server.create_endpoint_response("revocation", request)
    if path == "/api/me":
        bearer = headers.get("Authorization", "")
        for token in state.tokens:
            if bearer == f"Bearer {token.access_token}" and not token.revoked and not token.is_expired():
                return 200, {"user": token.user, "scope": token.scope}, []
        return 401, {"error": "invalid_token"}, [("WWW-Authenticate", "Bearer")]
    return 404, {"error": "not_found"}, []


@contextmanager
def loopback_auth_server() -> Iterator[LoopbackAuthServer]:
    """Serve a fresh authorization server on a free loopback port for the `with` block."""
    state = _State()
    httpd = make_server("127.0.0.1", 0, _app(_Server(state)), server_class=WSGIServer, handler_class=_Quiet)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), name="oauth server", daemon=True)
    thread.start()
    try:
        yield LoopbackAuthServer(f"http://127.0.0.1:{httpd.server_port}", state)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
