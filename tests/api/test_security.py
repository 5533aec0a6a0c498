"""Who may call the app, at the seam that decides it (`mindroom.api.security`) on real Starlette requests: keys
that only nearly match, Host names that only look local, an Origin one port away, and `/api` without a key."""

from __future__ import annotations

import pytest
from fastapi import HTTPException
from starlette.requests import Request

from mindroom.api.openai_protocol import OpenAIError
from mindroom.api.security import COOKIE_NAME, dashboard_principal, matches, open_access_rejection, v1_principal
from mindroom.api.settings import ApiSettings, api_settings

KEY = "dashboard-key-0123456789abcdef"
V1_KEY = "sk-v1-key-0123456789"
HOST = "127.0.0.1:8765"
NEAR_MISSES = [KEY + "x", KEY[:-1], KEY.upper(), " " + KEY + "x", KEY + KEY]


def request(
    *, host: str = HOST, method: str = "GET", token: str | None = None, cookie: str | None = None, **headers: str
) -> Request:
    """A request as uvicorn hands it to the app, from loopback."""
    raw = [(b"host", host.encode())]
    if token is not None:
        raw.append((b"authorization", f"Bearer {token}".encode()))
    if cookie is not None:
        raw.append((b"cookie", f"{COOKIE_NAME}={cookie}".encode()))
    raw += [(name.replace("_", "-").encode(), value.encode()) for name, value in headers.items()]
    scope = {
        "type": "http",
        "method": method,
        "path": "/api/status",
        "query_string": b"",
        "headers": raw,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8765),
    }
    return Request(scope)


def refusal(call) -> int:
    """The status `call` is refused with."""
    with pytest.raises((HTTPException, OpenAIError)) as caught:
        call()
    error = caught.value
    return error.status_code if isinstance(error, HTTPException) else error.status


@pytest.mark.parametrize("presented", NEAR_MISSES)
def test_security_a_key_that_only_nearly_matches_is_refused(presented):
    settings = ApiSettings(api_key=KEY, openai_keys=(V1_KEY,), requesters={}, metrics_token="scrape-token-1")

    assert not matches(presented, KEY)
    assert refusal(lambda: dashboard_principal(request(token=presented), settings)) == 401
    assert refusal(lambda: dashboard_principal(request(token=presented), settings, metrics=True)) == 401
    assert refusal(lambda: dashboard_principal(request(cookie=presented), settings)) == 401
    assert dashboard_principal(request(token=KEY), settings) == settings.owner  # the key itself passes


@pytest.mark.parametrize("presented", [V1_KEY + "x", V1_KEY[:-1], KEY])
def test_security_a_v1_key_that_only_nearly_matches_is_refused(presented):
    settings = ApiSettings(openai_keys=(V1_KEY,), requesters={})

    assert refusal(lambda: v1_principal(request(token=presented), settings)) == 401
    assert v1_principal(request(token=V1_KEY), settings).requester is None


@pytest.mark.parametrize(
    "env",
    [
        {},  # an own homeserver's environment without MINDROOM_API_KEY
        {"OPENAI_COMPAT_API_KEYS": V1_KEY},  # a /v1 key opens nothing of /api
        {"OPENAI_COMPAT_ALLOW_UNAUTHENTICATED": "true"},  # nor does opening /v1
        {"MINDROOM_API_ALLOW_UNAUTHENTICATED": "false"},
    ],
)
def test_security_api_without_a_key_refuses_even_loopback(env):
    settings = api_settings(env)

    assert refusal(lambda: dashboard_principal(request(), settings)) == 401
    assert refusal(lambda: dashboard_principal(request(host="localhost:8765"), settings, metrics=True)) == 401
    assert refusal(lambda: dashboard_principal(request(method="POST"), settings)) == 401


def test_security_api_opted_out_takes_loopback_without_a_key_but_checks_host_and_origin():
    settings = api_settings({"MINDROOM_API_ALLOW_UNAUTHENTICATED": "true", "MINDROOM_OWNER_USER_ID": "@op:hs"})

    assert dashboard_principal(request(), settings) == "@op:hs"
    assert dashboard_principal(request(), settings, metrics=True) == "@op:hs"
    assert refusal(lambda: dashboard_principal(request(host="attacker.example"), settings)) == 403
    assert refusal(lambda: dashboard_principal(request(origin="http://127.0.0.1:9999"), settings)) == 403
    keyed = api_settings({"MINDROOM_API_ALLOW_UNAUTHENTICATED": "true", "MINDROOM_API_KEY": KEY})
    assert refusal(lambda: dashboard_principal(request(), keyed)) == 401  # a key set is a key required


@pytest.mark.parametrize(
    "host",
    [
        "localhost.attacker.example",
        "localhost.attacker.example:8765",
        "127.0.0.1.nip.io",
        "127.0.0.1.nip.io:8765",
        "attacker.example",
        "localhost@attacker.example",
        "127.0.0.1@attacker.example:8765",
        "",
    ],
)
def test_security_a_host_that_only_looks_local_fails_the_keyless_check(host):
    rejection = open_access_rejection(request(host=host), ApiSettings())

    assert rejection is not None and "is not allowed without a credential" in rejection


@pytest.mark.parametrize("host", ["127.0.0.1:8765", "localhost:8765", "app.localhost", "[::1]:8765", "box.lan"])
def test_security_a_local_or_allowed_host_passes_the_keyless_check(host):
    assert open_access_rejection(request(host=host), ApiSettings(allowed_hosts=frozenset({"box.lan"}))) is None


@pytest.mark.parametrize(
    "origin",
    ["http://127.0.0.1:9999", "http://127.0.0.1", "http://localhost:8765", "http://127.0.0.1:87650", "null"],
)
def test_security_an_origin_on_another_port_or_host_is_not_same_origin(origin):
    settings = ApiSettings()

    rejection = open_access_rejection(request(origin=origin), settings)

    assert rejection is not None and "Cross-site" in rejection
    assert open_access_rejection(request(origin=f"http://{HOST}"), settings) is None


def test_security_a_cookie_change_from_another_port_is_refused():
    settings = ApiSettings(api_key=KEY)

    refused = refusal(
        lambda: dashboard_principal(request(method="POST", cookie=KEY, origin="http://127.0.0.1:9999"), settings)
    )

    assert refused == 403
    assert dashboard_principal(request(method="POST", cookie=KEY, origin=f"http://{HOST}"), settings)
    assert dashboard_principal(request(cookie=KEY, origin="http://127.0.0.1:9999"), settings)  # a read may
