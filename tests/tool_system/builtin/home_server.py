"""A small stand-in for Home Assistant's REST API on loopback, for the `homeassistant` tool's tests: it checks
the bearer token, answers states and service calls, and records every request it gets."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOKEN = "ha-long-lived-token-0123456789abcdef"
STATES = [
    {"entity_id": "light.kitchen", "state": "off", "attributes": {"friendly_name": "Kitchen light"}},
    {"entity_id": "sensor.hall_temperature", "state": "21.5", "attributes": {"friendly_name": "Hall", "unit": "C"}},
]


@dataclass
class HomeServer:
    """The running stand-in: its base URL, the requests it got (method, path, body) and where it redirects."""

    base: str
    port: int
    calls: list[tuple[str, str, Any]] = field(default_factory=list)
    redirect_to: str | None = None


def _handler(home: HomeServer) -> type[BaseHTTPRequestHandler]:
    class _Home(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, payload: Any, **headers: str) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def _answer(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            home.calls.append((method, self.path, body))
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                self._send(401, {"message": "Invalid authentication"})
            elif home.redirect_to is not None:
                self._send(302, {}, Location=home.redirect_to)
            elif method == "GET" and self.path == "/api/states":
                self._send(200, STATES)
            elif method == "GET" and self.path.startswith("/api/states/"):
                found = [s for s in STATES if s["entity_id"] == self.path.removeprefix("/api/states/")]
                self._send(200, found[0]) if found else self._send(404, {"message": "Entity not found."})
            elif method == "POST" and self.path.startswith("/api/services/"):
                entity = (body or {}).get("entity_id")
                self._send(200, [{**s, "state": "on"} for s in STATES if s["entity_id"] == entity])
            else:
                self._send(404, {"message": "not found"})

        def do_GET(self) -> None:
            self._answer("GET")

        def do_POST(self) -> None:
            self._answer("POST")

    return _Home


@contextmanager
def home_server() -> Iterator[HomeServer]:
    """A stand-in on 127.0.0.1 (a free port)."""
    home = HomeServer("", 0)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(home))
    home.port = server.server_address[1]
    home.base = f"http://127.0.0.1:{home.port}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield home
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
