"""Real MCP servers from the package registries for the tests: `mcp-server-time` (PyPI, stdio) and
`@modelcontextprotocol/server-everything` (npm, streamable HTTP and SSE).

The PyPI server is a test dependency of this project. The npm one is installed into `.cache/mcp-npm` at the
repository root (by `.ci/run`, or here on first use) and run with the machine's Node.js.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

EVERYTHING_PACKAGE = "@modelcontextprotocol/server-everything@2026.8.31"
NPM_PREFIX = Path(__file__).resolve().parents[2] / ".cache" / "mcp-npm"


def time_server_command() -> str:
    """The `mcp-server-time` console script of the interpreter running the tests."""
    path = Path(sys.executable).parent / "mcp-server-time"
    assert path.is_file(), "mcp-server-time is a test dependency: pip install -e '.[test]'"
    return str(path)


def everything_script() -> Path:
    """The npm server's entry point, installed on first use."""
    script = NPM_PREFIX / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    if not script.is_file():
        npm = shutil.which("npm")
        assert npm is not None, "the MCP tests need Node.js and npm"
        subprocess.run(
            [npm, "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(NPM_PREFIX), EVERYTHING_PACKAGE],
            check=True, capture_output=True, timeout=600,
        )  # fmt: skip
    return script


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def everything_server(mode: str = "streamableHttp") -> Iterator[str]:
    """The npm server over HTTP on a free loopback port; yields its MCP URL."""
    node = shutil.which("node")
    assert node is not None, "the MCP tests need Node.js"
    script = everything_script()
    port = free_port()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PORT": str(port), "HOME": str(NPM_PREFIX)}
    process = subprocess.Popen(
        [node, str(script), mode], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the MCP everything server did not start")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/{'mcp' if mode == 'streamableHttp' else 'sse'}"
    finally:
        process.kill()
        process.wait(10)
