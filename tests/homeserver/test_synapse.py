"""SynapseProcess and its helpers: free ports, JSON over HTTP, a real Synapse that starts, fails and stops."""

from __future__ import annotations

import json
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from structlog.testing import capture_logs

from mindroom.homeserver.files import LimiterLevel, write_synapse_files
from mindroom.homeserver.synapse import (
    SynapseError,
    SynapseProcess,
    client_api_answers,
    free_port,
    http_json,
    port_available,
    stop_leftover,
)

_START_S = 60.0


def _listening(port: int = 0) -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", port))
    sock.listen()
    return sock


def _prepared(base, port: int) -> SynapseProcess:
    state = {
        "server_name": "localhost",
        "registration_shared_secret": secrets.token_urlsafe(16),
        "macaroon_secret_key": secrets.token_urlsafe(16),
        "form_secret": secrets.token_urlsafe(16),
    }
    write_synapse_files(base, port=port, state=state, limiter=LimiterLevel.UNLIMITED, extra={"bcrypt_rounds": 4})
    return SynapseProcess(base, port)


class _Replies(BaseHTTPRequestHandler):
    """Answers `/ok` with a JSON object, `/missing` with a JSON error, `/html` with a non-JSON error page."""

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        self._answer(json.loads(self.rfile.read(length)))

    def _answer(self, posted=None) -> None:
        status, body = {
            "/ok": (200, json.dumps({"posted": posted, "type": self.headers["Content-Type"]}).encode()),
            "/missing": (404, b'{"errcode": "M_NOT_FOUND"}'),
            "/html": (502, b"<html>bad gateway</html>"),
        }[self.path]
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def web() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Replies)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_free_port_is_available_until_someone_listens():
    port = free_port()
    assert port_available(port)
    with _listening(port):
        assert not port_available(port)


def test_http_json_gets_and_posts_json(web):
    assert http_json(f"{web}/ok") == (200, {"posted": None, "type": "application/json"})
    assert http_json(f"{web}/ok", {"a": 1}) == (200, {"posted": {"a": 1}, "type": "application/json"})


def test_http_json_returns_error_statuses_with_their_body(web):
    assert http_json(f"{web}/missing") == (404, {"errcode": "M_NOT_FOUND"})
    assert http_json(f"{web}/html") == (502, {})


def test_http_json_raises_oserror_when_nobody_listens():
    with pytest.raises(OSError):
        http_json(f"http://127.0.0.1:{free_port()}/")


def test_client_api_answers_is_false_without_a_homeserver(web):
    assert client_api_answers(f"http://127.0.0.1:{free_port()}") is False
    assert client_api_answers(web) is False  # answers, but not the client API


def test_synapse_process_failure_carries_both_log_tails(tmp_path):
    process = SynapseProcess(tmp_path, 18008)
    process.log_path.write_text("".join(f"log line {i}\n" for i in range(100)))
    process.stderr_path.write_text("Traceback: boom\n")

    error = process.failure("Synapse exited with code 1 during start")

    assert error.reason == "Synapse exited with code 1 during start"
    assert error.log_tail.splitlines() == [f"log line {i}" for i in range(60, 100)]
    assert error.stderr_tail == "Traceback: boom"
    message = str(error)
    assert message.startswith("Synapse exited with code 1 during start\n")
    assert str(process.log_path) in message and "log line 99" in message and "log line 59" not in message
    assert str(process.stderr_path) in message and "Traceback: boom" in message


def test_synapse_process_failure_without_logs_still_names_the_reason(tmp_path):
    error = SynapseProcess(tmp_path, 18008).failure("gone")

    assert (error.reason, error.log_tail, error.stderr_tail) == ("gone", "", "")


def test_synapse_process_wait_ready_before_spawn_is_an_error(tmp_path):
    process = SynapseProcess(tmp_path, 18008)

    with pytest.raises(SynapseError, match="not spawned"):
        process.wait_ready(time.monotonic() + 1)
    assert process.terminate() is False
    assert (process.running, process.pid) == (False, None)


@pytest.mark.integration
def test_synapse_process_spawns_answers_and_terminates(tmp_path):
    process = _prepared(tmp_path, free_port())
    assert process.url == f"http://127.0.0.1:{process.port}"

    process.spawn()
    try:
        process.wait_ready(time.monotonic() + _START_S)
        assert process.running and process.pid is not None
        assert client_api_answers(process.url)
        with pytest.raises(SynapseError, match="already running"):
            process.spawn()
    finally:
        stopped = process.terminate()

    assert stopped is True
    assert not process.running
    assert not client_api_answers(process.url)
    assert port_available(process.port)
    assert process.terminate() is False


@pytest.mark.integration
def test_synapse_process_failure_reports_the_log_tail(tmp_path):
    with _listening() as blocker:
        process = _prepared(tmp_path, blocker.getsockname()[1])
        process.spawn()
        try:
            with pytest.raises(SynapseError, match="Synapse exited with code") as info:
                process.wait_ready(time.monotonic() + _START_S)
        finally:
            process.terminate()

    error = info.value
    assert "Address already in use" in error.log_tail + error.stderr_tail
    assert str(process.log_path) in str(error)
    assert not process.running


@pytest.mark.integration
def test_stop_leftover_stops_a_synapse_of_the_same_dir_only(tmp_path):
    process = _prepared(tmp_path / "synapse", free_port())
    assert stop_leftover(process.base_dir) is None  # no pid file yet
    process.spawn()
    try:
        process.wait_ready(time.monotonic() + _START_S)
        other = tmp_path / "other"
        other.mkdir()
        (other / "homeserver.pid").write_text(str(process.pid))
        assert stop_leftover(other) is None  # a pid whose command line names another folder

        with capture_logs() as logs:
            assert stop_leftover(process.base_dir) == process.pid

        assert not client_api_answers(process.url)
        assert not process.running
        assert [(log["event"], log["pid"]) for log in logs] == [("stopping a leftover synapse", process.pid)]
    finally:
        process.terminate()
