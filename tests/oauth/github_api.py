"""A loopback HTTP API answering the GitHub routes the `github` toolkit's `get_repository` uses, for a bearer
token that the loopback authorization server issued and still honours (or one fixed operator token).

`GET /repos/<owner>/<repo>` answers a repository whose description names the account the token belongs to,
so a test reads whose token reached the API; any other bearer gets GitHub's 401. Served by the standard
library's WSGI server in a thread; `authorizations` keeps every Authorization header it was sent.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from tests.oauth.auth_server import LoopbackAuthServer

__all__ = ["LoopbackGithubApi", "loopback_github_api"]

_REPO = re.compile(r"/repos/(?P<owner>[\w.-]+)/(?P<name>[\w.-]+)")


@dataclass
class LoopbackGithubApi:
    """The running API: its base URL and every Authorization header it saw."""

    url: str
    authorizations: list[str] = field(default_factory=list)


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No access log on stderr."""


def _account(auth: LoopbackAuthServer, operator_token: str | None, header: str) -> str | None:
    if operator_token is not None and header == f"token {operator_token}":
        return "operator"
    with auth.state.lock:
        for token in auth.state.tokens:
            live = not token.revoked and not token.is_expired()
            if live and header in (f"token {token.access_token}", f"Bearer {token.access_token}"):
                return token.user
    return None


def _repository(owner: str, name: str, account: str, base: str) -> dict[str, Any]:
    return {
        "id": 1,
        "name": name,
        "full_name": f"{owner}/{name}",
        "description": f"seen by {account}",
        "html_url": f"https://github.example/{owner}/{name}",
        "url": f"{base}/repos/{owner}/{name}",
        "stargazers_count": 7,
        "forks_count": 2,
        "open_issues_count": 1,
        "language": "Python",
        "license": None,
        "default_branch": "main",
        "owner": {"login": owner, "id": 2, "type": "Organization"},
    }


@contextmanager
def loopback_github_api(auth: LoopbackAuthServer, operator_token: str | None = None) -> Iterator[LoopbackGithubApi]:
    """Serve the API on a free loopback port for the `with` block."""
    api = LoopbackGithubApi("")

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        header = environ.get("HTTP_AUTHORIZATION", "")
        api.authorizations.append(header)
        account = _account(auth, operator_token, header)
        found = _REPO.fullmatch(environ["PATH_INFO"])
        if account is None:
            status, body = "401 Unauthorized", {"message": "Bad credentials"}
        elif environ["REQUEST_METHOD"] != "GET" or found is None:
            status, body = "404 Not Found", {"message": "Not Found"}
        else:
            status, body = "200 OK", _repository(found["owner"], found["name"], account, api.url)
        start_response(status, [("Content-Type", "application/json")])
        return [json.dumps(body).encode()]

    httpd = make_server("127.0.0.1", 0, app, server_class=WSGIServer, handler_class=_Quiet)
    api.url = f"http://127.0.0.1:{httpd.server_port}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), name="github api", daemon=True)
    thread.start()
    try:
        yield api
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
