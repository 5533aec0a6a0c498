"""A Git smart-HTTP server on loopback: git's own `git http-backend` (CGI) behind a small WSGI wrapper that asks
for HTTP basic auth and lets through only one user name and password. `authorizations` keeps every
Authorization header it was sent (empty string: none)."""

from __future__ import annotations

import base64
import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

__all__ = ["GitHttpServer", "git_http_server"]

_PASSED = ("PATH_INFO", "QUERY_STRING", "REQUEST_METHOD", "CONTENT_TYPE", "HTTP_CONTENT_ENCODING", "HTTP_GIT_PROTOCOL")


@dataclass
class GitHttpServer:
    """The running server: where it is and what it was sent."""

    url: str
    authorizations: list[str] = field(default_factory=list)


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No access log on stderr."""


def _backend(environ: dict[str, Any], projects: Path, user: str) -> tuple[str, list[tuple[str, str]], bytes]:
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    cgi = {name: str(environ[name]) for name in _PASSED if environ.get(name)}
    if "HTTP_GIT_PROTOCOL" in cgi:
        cgi["GIT_PROTOCOL"] = cgi.pop("HTTP_GIT_PROTOCOL")
    cgi.update(
        GIT_PROJECT_ROOT=str(projects), GIT_HTTP_EXPORT_ALL="1", REMOTE_USER=user, CONTENT_LENGTH=str(len(body)),
        PATH=os.environ["PATH"], HOME=str(projects), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null",
    )  # fmt: skip
    out = subprocess.run(["git", "http-backend"], input=body, env=cgi, capture_output=True, check=True).stdout
    separator = b"\r\n\r\n" if b"\r\n\r\n" in out else b"\n\n"
    head, _, rest = out.partition(separator)
    status, headers = "200 OK", []
    for line in head.decode().splitlines():
        name, _, value = line.partition(":")
        if name.lower() == "status":
            status = value.strip()
        elif name:
            headers.append((name, value.strip()))
    return status, headers, rest


@contextmanager
def git_http_server(projects: Path, user: str, password: str) -> Iterator[GitHttpServer]:
    """Serve the repositories under `projects` at `<url>/<name>` for the `with` block, to `user`:`password` only."""
    server = GitHttpServer("")
    expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        header = environ.get("HTTP_AUTHORIZATION", "")
        server.authorizations.append(header)
        if header != expected:
            start_response("401 Unauthorized", [("WWW-Authenticate", 'Basic realm="git"'), ("Content-Length", "0")])
            return [b""]
        status, headers, body = _backend(environ, projects, user)
        start_response(status, [*headers, ("Content-Length", str(len(body)))])
        return [body]

    httpd = make_server("127.0.0.1", 0, app, server_class=WSGIServer, handler_class=_Quiet)
    server.url = f"http://127.0.0.1:{httpd.server_port}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), name="git http", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
