"""The few client-API requests `mindroom doctor` makes: plain JSON over `urllib`, with a short timeout."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

__all__ = ["HTTP_TIMEOUT_S", "get_json", "post_json"]

HTTP_TIMEOUT_S = 5.0


def _send(request: urllib.request.Request) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as response:  # noqa: S310 - the operator's server
            data = json.loads(response.read() or b"{}")
            return int(response.status), data if isinstance(data, dict) else {}
    except urllib.error.HTTPError as exc:
        return int(exc.code), {}


def get_json(url: str, token: str | None = None) -> tuple[int, dict[str, Any]]:
    """GET `url` (with a bearer token when given): the status and the JSON object (empty on errors)."""
    request = urllib.request.Request(url)  # noqa: S310 - the operator's own homeserver URL
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    return _send(request)


def post_json(url: str, body: dict[str, Any], token: str) -> tuple[int, dict[str, Any]]:
    """POST `body` to `url` with a bearer token: the status and the JSON object (empty on errors)."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")  # noqa: S310
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Content-Type", "application/json")
    return _send(request)
