"""One Synapse subprocess on loopback: spawn it, wait until its client API answers, report failures, stop it.

Shared by the embedded homeserver (`mindroom.homeserver.embedded`, async) and the test homeserver
(`mindroom.testing.homeserver`, sync). The methods block only briefly or in a loop that ends when the
process exits, so async code runs `wait_ready` and `terminate` in a worker thread. Synapse dies with
the process that spawned it (`mindroom.homeserver.tether`), from whichever thread `spawn` was called.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from mindroom.errors import MindroomError
from mindroom.homeserver.files import LOG_FILENAME
from mindroom.homeserver.tether import spawn_module
from mindroom.logging_config import get_logger
from mindroom.private_files import PRIVATE_UMASK, write_private_file

__all__ = [
    "STDERR_FILENAME",
    "SynapseError",
    "SynapseProcess",
    "client_api_answers",
    "free_port",
    "http_json",
    "port_available",
    "process_alive",
    "stop_leftover",
]

logger = get_logger(__name__)

STDERR_FILENAME = "homeserver.stderr.log"
_PID_FILENAME = "homeserver.pid"
_CONFIG_FILENAME = "homeserver.yaml"
_HTTP_TIMEOUT_S = 10.0
# Short, so a probe that hits a listener which never answers does not hide the process's exit for long.
_PROBE_TIMEOUT_S = 1.0
_POLL_S = 0.05
_STOP_TIMEOUT_S = 10.0
_LOG_TAIL_LINES = 40


class SynapseError(MindroomError, RuntimeError):
    """Synapse did not start or stop as asked; carries the tails of its log and of its stderr."""

    def __init__(self, reason: str, *, log_tail: str = "", stderr_tail: str = "", message: str | None = None) -> None:
        self.reason = reason
        self.log_tail = log_tail
        self.stderr_tail = stderr_tail
        super().__init__(message or reason)


def free_port() -> int:
    """A loopback TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_available(port: int) -> bool:
    """True when Synapse could bind `127.0.0.1:<port>` now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # SO_REUSEADDR as Synapse itself sets it: a port in TIME_WAIT after our last run counts as free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def http_json(
    url: str, data: dict[str, Any] | None = None, *, timeout: float = _HTTP_TIMEOUT_S
) -> tuple[int, dict[str, Any]]:
    """GET `url` (or POST `data` as JSON) and return the status and the JSON object answered, error statuses included.

    A body that is not a JSON object reads as `{}`; connection failures raise `OSError`.
    """
    body = None if data is None else json.dumps(data).encode()
    request = urllib.request.Request(url, data=body, method="GET" if body is None else "POST")  # noqa: S310
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return int(response.status), _json_object(response.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), _json_object(exc.read())


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        parsed = json.loads(raw or b"{}")
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def client_api_answers(url: str) -> bool:
    """True when the homeserver at `url` answers `GET /_matrix/client/versions` with 200."""
    try:
        status, _ = http_json(f"{url}/_matrix/client/versions", timeout=_PROBE_TIMEOUT_S)
    except (OSError, http.client.HTTPException):
        return False
    return status == 200


def _tail(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-_LOG_TAIL_LINES:])


def process_alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (exited, not yet reaped by its parent) counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def stop_leftover(base_dir: Path, *, timeout_s: float = _STOP_TIMEOUT_S) -> int | None:
    """Stop a Synapse still running on `base_dir`'s config (its parent was killed); returns its pid, or None.

    A leftover would hold the database and the port. Only a process whose command line names this
    folder's `homeserver.yaml` is touched, so a pid reused by another program is left alone.
    """
    try:
        pid = int((base_dir / _PID_FILENAME).read_text().strip())
    except (OSError, ValueError):
        return None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return None
    if str(base_dir / _CONFIG_FILENAME) not in cmdline:
        return None
    logger.warning("stopping a leftover synapse", pid=pid, base_dir=str(base_dir))
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and process_alive(pid):
        time.sleep(_POLL_S)
    if process_alive(pid):
        logger.warning("leftover synapse did not stop in time; killing it", pid=pid, seconds=timeout_s)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return pid


class SynapseProcess:
    """One Synapse subprocess serving `base_dir/homeserver.yaml` on `127.0.0.1:<port>`; stop and spawn again at will."""

    def __init__(self, base_dir: Path, port: int) -> None:
        self.base_dir = Path(base_dir)
        self.port = port
        self._popen: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The client-server API base URL on loopback."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def config_path(self) -> Path:
        """The `homeserver.yaml` Synapse is started with (written by `write_synapse_files`)."""
        return self.base_dir / _CONFIG_FILENAME

    @property
    def log_path(self) -> Path:
        """Synapse's own log file (WARNING and above)."""
        return self.base_dir / LOG_FILENAME

    @property
    def stderr_path(self) -> Path:
        """Where Synapse's stdout and stderr go (tracebacks before its logging is set up land here)."""
        return self.base_dir / STDERR_FILENAME

    @property
    def pid(self) -> int | None:
        """The process id while a spawned process is tracked, else None."""
        return None if self._popen is None else self._popen.pid

    @property
    def running(self) -> bool:
        """True while the spawned process is alive."""
        return self._popen is not None and self._popen.poll() is None

    def spawn(self, *, daemon: bool = False) -> None:
        """Start Synapse and return at once; `wait_ready` tells when it serves.

        Synapse gets SIGTERM when this process dies, even by `kill -9`, so it never outlives it.
        `daemon=True` gives it its own session, so Ctrl+C reaches only a long-running parent (which
        stops Synapse last); without it the child shares the caller's session.
        """
        if self.running:
            msg = f"Synapse in {self.base_dir} is already running (pid {self.pid})"
            raise SynapseError(msg)
        stderr_fd = os.open(self.stderr_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        with os.fdopen(stderr_fd, "ab") as stderr:
            self._popen = spawn_module(
                "synapse.app.homeserver",
                ["-c", str(self.config_path)],
                cwd=self.base_dir,
                stdin=subprocess.DEVNULL,
                stdout=stderr,
                stderr=stderr,
                start_new_session=daemon,
                # Synapse creates its database (with its -wal/-shm files), media and logs itself: only its
                # umask keeps them private, whatever the umask of the process that started it.
                umask=PRIVATE_UMASK,
            )
        # Synapse writes its `pid_file` only when it daemonizes itself; `stop_leftover` needs it in the foreground too.
        write_private_file(self.base_dir / _PID_FILENAME, f"{self._popen.pid}\n", durable=False)

    def wait_ready(self, deadline: float) -> None:
        """Block until the client API answers; raise `failure(...)` if Synapse exits or `deadline` passes.

        `deadline` is a `time.monotonic()` value, so one deadline can cover several steps of a start.
        """
        # The process this call waits for, even if `terminate` (from another thread) forgets it meanwhile.
        popen = self._popen
        if popen is None:
            msg = f"Synapse in {self.base_dir} was not spawned"
            raise SynapseError(msg)
        started = time.monotonic()
        while True:
            if popen.poll() is not None:
                raise self.failure(f"Synapse exited with code {popen.returncode} during start")
            if client_api_answers(self.url):
                return
            if time.monotonic() > deadline:
                waited = time.monotonic() - started
                raise self.failure(f"Synapse did not answer {self.url} within {waited:.0f} s")
            time.sleep(_POLL_S)

    def failure(self, reason: str) -> SynapseError:
        """An error saying `reason`, followed by the tails of Synapse's log and stderr (returned, not raised)."""
        log_tail, stderr_tail = _tail(self.log_path), _tail(self.stderr_path)
        message = (
            f"{reason}\n--- {self.log_path} (tail) ---\n{log_tail}\n--- {self.stderr_path} (tail) ---\n{stderr_tail}"
        )
        return SynapseError(reason, log_tail=log_tail, stderr_tail=stderr_tail, message=message)

    def terminate(self, timeout_s: float = _STOP_TIMEOUT_S) -> bool:
        """SIGTERM Synapse and wait `timeout_s`, then SIGKILL; True when a running process was stopped.

        The data dir stays, so `spawn` starts again on the same database and port.
        """
        popen, self._popen = self._popen, None
        if popen is None:
            return False
        (self.base_dir / _PID_FILENAME).unlink(missing_ok=True)
        if popen.poll() is not None:
            return False
        popen.send_signal(signal.SIGTERM)
        try:
            popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            logger.warning("synapse did not stop in time; killing it", pid=popen.pid, seconds=timeout_s)
            popen.kill()
            popen.wait()
        return True
