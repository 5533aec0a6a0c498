"""A Git repository served over HTTP on loopback by git's own `git http-backend`, behind basic auth: what a
private Git host looks like to `mindroom plugins install`."""

from __future__ import annotations

import base64
import contextlib
import os
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class GitHost:
    """What the server saw: the Authorization headers it was sent (to check a credential went nowhere else)."""

    def __init__(self, root: Path, user: str, password: str, redirect_to: str | None = None) -> None:
        self.root = root
        self.redirect_to = redirect_to
        self.expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        self.authorizations: list[str] = []
        self.url = ""


def _handler(host: GitHost) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return

        def _serve(self) -> None:
            given = self.headers.get("Authorization")
            if given:
                host.authorizations.append(given)
            if host.redirect_to is not None:
                self.send_response(302)
                self.send_header("Location", host.redirect_to + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if given != host.expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="plugins"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            path, _, query = self.path.partition("?")
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            env = {
                **os.environ,
                "GIT_PROJECT_ROOT": str(host.root),
                "GIT_HTTP_EXPORT_ALL": "1",
                "PATH_INFO": path,
                "QUERY_STRING": query,
                "REQUEST_METHOD": self.command,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "REMOTE_USER": "plugins",
                "HTTP_GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            }
            if self.headers.get("Content-Encoding"):
                env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
            done = subprocess.run(["git", "http-backend"], input=body, capture_output=True, env=env, check=False)
            head, _, payload = done.stdout.partition(b"\r\n\r\n")
            status, headers = 200, []
            for line in head.decode("latin-1").split("\r\n"):
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.split()[0])
                elif name:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = _serve
        do_POST = _serve

    return Handler


@contextlib.contextmanager
def git_host(root: Path, user: str, password: str, redirect_to: str | None = None) -> Iterator[GitHost]:
    """Serve the bare repositories under `root` at `host.url` (`http://127.0.0.1:PORT`) behind basic auth; with
    `redirect_to`, answer every request with a redirect there instead."""
    host = GitHost(root, user, password, redirect_to)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(host))
    host.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield host
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
