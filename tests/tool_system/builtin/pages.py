"""A small web server on loopback for the `website` tool's tests: pages, redirects and refusals."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGE = (
    "<html><head><title>Tide tables</title><script>var secret = 'no';</script><style>p{}</style></head><body>"
    "<nav>Home | About | Login</nav><header>Site header</header>"
    "<main><h1>High tide</h1><p>High tide at the harbour is at 14:32 today.</p>"
    "<p>Low tide follows at 20:45.</p><div hidden>hidden text</div></main>"
    "<footer>Copyright</footer></body></html>"
)


class _Pages(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, content_type: str = "text/html; charset=utf-8", **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        port = self.server.server_address[1]
        routes = {
            "/page": lambda: self._send(200, PAGE.encode()),
            "/plain": lambda: self._send(200, b"just text", "text/plain"),
            "/big": lambda: self._send(200, b"x" * (3 * 1024 * 1024), "text/plain"),
            "/gzip": lambda: self._send(200, gzip.compress(PAGE.encode()), Content_Encoding="gzip"),
            "/image": lambda: self._send(200, b"\x89PNG....", "image/png"),
            "/missing": lambda: self._send(404, b"no"),
            "/to-page": lambda: self._send(302, b"", Location="/page"),
            "/to-localhost": lambda: self._send(302, b"", Location=f"http://localhost:{port}/page"),
            "/to-metadata": lambda: self._send(302, b"", Location="http://169.254.169.254/latest/meta-data"),
            "/loop": lambda: self._send(302, b"", Location="/loop"),
        }
        routes.get(self.path, lambda: self._send(404, b"unknown"))()


@contextmanager
def page_server() -> Iterator[str]:
    """A server on 127.0.0.1; yields its base URL (`http://127.0.0.1:<port>`)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
