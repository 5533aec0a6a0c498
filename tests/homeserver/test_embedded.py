"""The embedded homeserver: private files, stable secrets, a stable port with a fallback, a real start and stop."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time

import pytest
import yaml
from structlog.testing import capture_logs

from mindroom.homeserver.embedded import (
    DEFAULT_EMBEDDED_PORT,
    EmbeddedHomeserver,
    EmbeddedHomeserverError,
    embedded_connection,
)
from mindroom.homeserver.files import LimiterLevel
from mindroom.homeserver.synapse import (
    SynapseError,
    client_api_answers,
    free_port,
    http_json,
    port_available,
    process_alive,
    stop_leftover,
)
from mindroom.private_files import shared_paths


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _listening() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


def test_prepare_writes_private_config_and_keeps_secrets_across_runs(tmp_path):
    first = EmbeddedHomeserver(tmp_path)
    first.prepare()
    secret = first.registration_shared_secret
    base = tmp_path / "homeserver"

    assert first.created is True
    assert _mode(base) == 0o700
    for name in ("embedded.json", "homeserver.yaml", "signing.key"):
        assert _mode(base / name) == 0o600, name
    config = yaml.safe_load((base / "homeserver.yaml").read_text())
    assert config["listeners"][0]["bind_addresses"] == ["127.0.0.1"]
    assert config["registration_shared_secret"] == secret
    assert config["enable_registration"] is False
    assert config["database"]["args"]["database"] == str(base / "homeserver.db")
    assert config["rc_message"] == LimiterLevel.GENEROUS.rate.as_config()

    second = EmbeddedHomeserver(tmp_path)
    second.prepare()
    assert second.created is False
    assert second.registration_shared_secret == secret
    assert second.port == first.port


def test_prepare_falls_back_to_a_free_port_when_the_remembered_one_is_taken(tmp_path):
    taken = _listening()
    try:
        base = tmp_path / "homeserver"
        base.mkdir(mode=0o700)
        (base / "embedded.json").write_text(json.dumps({"port": taken.getsockname()[1]}))
        server = EmbeddedHomeserver(tmp_path)
        server.prepare()
        assert server.port != taken.getsockname()[1]
        assert json.loads((base / "embedded.json").read_text())["port"] == server.port
    finally:
        taken.close()


def test_prepare_refuses_an_explicit_port_that_is_taken(tmp_path):
    taken = _listening()
    try:
        with pytest.raises(EmbeddedHomeserverError, match="in use"):
            EmbeddedHomeserver(tmp_path, port=taken.getsockname()[1]).prepare()
    finally:
        taken.close()


def test_prepare_without_synapse_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setattr("mindroom.homeserver.embedded.synapse_installed", lambda: False)
    with pytest.raises(EmbeddedHomeserverError, match=r"\[embedded\]"):
        EmbeddedHomeserver(tmp_path).prepare()


def test_embedded_connection_reads_back_url_and_user(tmp_path):
    assert embedded_connection(tmp_path) is None
    base = tmp_path / "homeserver"
    base.mkdir()
    (base / "embedded.json").write_text(json.dumps({"port": 18123, "server_name": "localhost"}))
    (base / "user.json").write_text(json.dumps({"user_id": "@me:localhost", "password": "pw"}))

    connection = embedded_connection(tmp_path)

    assert connection is not None
    assert (connection.url, connection.user_id, connection.password) == (
        "http://127.0.0.1:18123",
        "@me:localhost",
        "pw",
    )
    assert "pw" not in repr(connection)


@pytest.mark.asyncio
async def test_ensure_user_rejects_a_user_of_another_server(tmp_path):
    server = EmbeddedHomeserver(tmp_path)
    with pytest.raises(EmbeddedHomeserverError, match="@<name>:localhost"):
        await server.ensure_user("@alice:example.org")


def test_default_port_is_8008():
    assert DEFAULT_EMBEDDED_PORT == 8008


@pytest.mark.integration
@pytest.mark.asyncio
async def test_start_serves_the_human_account_and_stop_frees_the_port(tmp_path):
    server = EmbeddedHomeserver(tmp_path, port=free_port())
    with capture_logs() as logs:
        async with server:
            assert client_api_answers(server.url)
            first = await server.ensure_user("@me:localhost")
            await server.start()  # already running: nothing to do
            again = await server.ensure_user("@me:localhost")
            status, body = http_json(f"{server.url}/_matrix/client/v3/login", _password_login(first))
    events = [log["event"] for log in logs]

    assert (first.created, again.created, again.password) == (True, False, first.password)
    assert _mode(server.user_file) == 0o600
    assert (status, body["user_id"]) == (200, "@me:localhost")
    assert events.count("embedded homeserver started") == 1
    assert events[-1] == "embedded homeserver stopped"
    assert not client_api_answers(server.url)
    assert port_available(server.port)


@pytest.mark.integration
@pytest.mark.asyncio
async def test_start_failure_reports_the_log_tail_and_leaves_nothing_running(tmp_path):
    server = EmbeddedHomeserver(tmp_path, port=free_port())
    server.prepare()
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", server.port))
        blocker.listen()
        with pytest.raises(EmbeddedHomeserverError, match="Synapse exited") as info:
            await server.start()

    assert str(server.log_path) in str(info.value)
    assert "Address already in use" in str(info.value)
    assert isinstance(info.value.__cause__, SynapseError)
    assert not (tmp_path / "homeserver" / "homeserver.pid").exists()
    assert port_available(server.port)


# `mindroom run`'s part in little: the embedded homeserver started on the event loop, then a wait.
DAEMON = """
import asyncio, sys
from pathlib import Path
from mindroom.homeserver.embedded import EmbeddedHomeserver

async def main():
    async with EmbeddedHomeserver(Path(sys.argv[1]), port=int(sys.argv[2])):
        print("ready", flush=True)
        await asyncio.sleep(3600)

asyncio.run(main())
"""


@pytest.mark.integration
def test_the_embedded_homeserver_dies_with_a_daemon_that_is_killed(tmp_path):
    daemon = subprocess.Popen(
        [sys.executable, "-c", DAEMON, str(tmp_path), str(free_port())],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
    )
    base = tmp_path / "homeserver"
    try:
        assert daemon.stdout is not None
        assert b"ready\n" in iter(daemon.stdout.readline, b"")  # the daemon's logs come first
        synapse_pid = int((base / "homeserver.pid").read_text())
        assert process_alive(synapse_pid)

        daemon.send_signal(signal.SIGKILL)
        daemon.wait(10)

        deadline = time.monotonic() + 30  # it stops in about a second; generous for a loaded machine
        while process_alive(synapse_pid):
            assert time.monotonic() < deadline, "Synapse outlived the killed daemon"
            time.sleep(0.05)
    finally:
        daemon.kill()
        daemon.wait(10)
        stop_leftover(base)


def _password_login(account) -> dict:
    return {
        "type": "m.login.password",
        "identifier": {"type": "m.id.user", "user": account.user_id},
        "password": account.password,
    }


def test_prepare_makes_what_an_older_version_left_open_private(tmp_path):
    base = tmp_path / "homeserver"
    (base / "media_store" / "local_content").mkdir(parents=True, mode=0o755)
    (base / "homeserver.db").write_text("rooms and messages")
    (base / "homeserver.db").chmod(0o644)
    base.chmod(0o755)

    EmbeddedHomeserver(tmp_path, port=free_port()).prepare()

    assert shared_paths(base) == []
    assert (base / "homeserver.db").read_text() == "rooms and messages"


@pytest.mark.integration
@pytest.mark.asyncio
async def test_everything_synapse_writes_is_private_whatever_the_umask(tmp_path):
    previous = os.umask(0o022)  # the usual default: files 0644, folders 0755
    try:
        async with EmbeddedHomeserver(tmp_path, port=free_port()) as server:
            await server.ensure_user("@me:localhost")
    finally:
        os.umask(previous)
    written = {path.name for path in (tmp_path / "homeserver").iterdir()}

    assert {"homeserver.db", "homeserver.log", "media_store", "homeserver.stderr.log", "log.config"} <= written
    assert shared_paths(tmp_path / "homeserver") == []
