"""The test homeserver: a real Synapse that starts, registers users, restarts on its data and reports failures."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from mindroom.homeserver.files import LimiterLevel, rate_limits
from mindroom.homeserver.synapse import free_port, process_alive, stop_leftover
from mindroom.testing.homeserver import HomeserverError, TestHomeserver, unique_localpart

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def homeserver() -> Iterator[TestHomeserver]:
    """A server of this module's own, so restarting it does not disturb the session's shared one."""
    with TestHomeserver() as server:
        yield server


def _whoami(server: TestHomeserver, access_token: str) -> str:
    request = urllib.request.Request(
        f"{server.url}/_matrix/client/v3/account/whoami", headers={"Authorization": f"Bearer {access_token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())["user_id"]


def test_homeserver_registers_users(homeserver):
    localpart = unique_localpart("alice")
    user = homeserver.register_user(localpart, "pw", displayname="Alice")
    assert user.user_id == f"@{localpart}:{homeserver.server_name}"
    assert user.device_id
    assert _whoami(homeserver, user.access_token) == user.user_id
    assert "pw" not in repr(user)
    assert homeserver.url.startswith("http://127.0.0.1:")


def test_homeserver_admin_registration(homeserver):
    user = homeserver.register_user(unique_localpart("admin"), "pw", admin=True)
    request = urllib.request.Request(
        f"{homeserver.url}/_synapse/admin/v2/users/{user.user_id}",
        headers={"Authorization": f"Bearer {user.access_token}"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert json.loads(response.read())["admin"] is True


def test_homeserver_rejects_duplicate_localpart(homeserver):
    localpart = unique_localpart("dup")
    homeserver.register_user(localpart, "pw")
    with pytest.raises(HomeserverError, match="M_USER_IN_USE"):
        homeserver.register_user(localpart, "pw")


def test_homeserver_stop_and_start_keep_data_and_port(homeserver):
    user = homeserver.register_user(unique_localpart("durable"), "pw")
    url = homeserver.url
    homeserver.stop()
    assert not homeserver.is_running
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"{url}/_matrix/client/versions", timeout=2)
    homeserver.start()
    assert homeserver.url == url
    assert _whoami(homeserver, user.access_token) == user.user_id
    homeserver.restart()
    assert _whoami(homeserver, user.access_token) == user.user_id


def test_homeserver_start_failure_reports_the_log_tail(tmp_path):
    server = TestHomeserver(tmp_path / "synapse")
    port = urlsplit(server.url).port
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", port))
        blocker.listen()
        with pytest.raises(HomeserverError, match="Synapse exited") as info:
            server.start()
    assert "homeserver.log" in str(info.value)
    assert not server.is_running
    server.cleanup()
    assert (tmp_path / "synapse").exists()  # a caller-provided directory is left alone


# A test process that starts the kit's homeserver as async tests do (from a worker thread), then waits.
TEST_PROCESS = """
import asyncio, sys
from pathlib import Path
from mindroom.homeserver import tether
from mindroom.testing.homeserver import TestHomeserver

if sys.argv[2] == "watchdog":  # as where prctl is missing
    tether._load_prctl = lambda: None

async def main():
    async with TestHomeserver(Path(sys.argv[1])):
        print("ready", flush=True)
        await asyncio.sleep(3600)

asyncio.run(main())
"""


@pytest.mark.parametrize("tie", ["prctl", "watchdog"])
def test_homeserver_dies_with_a_test_process_that_is_killed(tmp_path, tie):
    base = tmp_path / "synapse"
    test_process = subprocess.Popen(
        [sys.executable, "-c", TEST_PROCESS, str(base), tie], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE
    )
    try:
        assert test_process.stdout is not None
        assert b"ready\n" in iter(test_process.stdout.readline, b"")  # the kit logs to stdout too
        synapse_pid = int((base / "homeserver.pid").read_text())
        assert process_alive(synapse_pid)
        watched = b"mindroom.homeserver.tether" in Path(f"/proc/{synapse_pid}/cmdline").read_bytes()
        assert watched == (tie == "watchdog")

        test_process.send_signal(signal.SIGKILL)
        test_process.wait(10)

        deadline = time.monotonic() + 30  # it stops in about a second; generous for a loaded machine
        while process_alive(synapse_pid):
            assert time.monotonic() < deadline, "Synapse outlived the killed test process"
            time.sleep(0.05)
    finally:
        test_process.kill()
        test_process.wait(10)
        stop_leftover(base)


def test_homeserver_config_lifts_every_limit(homeserver):
    config = yaml.safe_load((homeserver.base_dir / "homeserver.yaml").read_text())

    assert {key: config[key] for key in rate_limits(LimiterLevel.UNLIMITED)} == rate_limits(LimiterLevel.UNLIMITED)
    assert config["bcrypt_rounds"] == 4


def test_homeserver_from_environment_uses_a_running_server(homeserver, monkeypatch):
    monkeypatch.setenv("MINDROOM_TEST_HOMESERVER_URL", f"{homeserver.url}/")
    monkeypatch.setenv("MINDROOM_TEST_HOMESERVER_SECRET", homeserver.registration_shared_secret)
    external = TestHomeserver.from_environment()

    external.start()
    user = external.register_user(unique_localpart("ext"), "pw")
    external.stop()  # not ours to stop

    assert (external.is_external, external.is_running, external.url) == (True, True, homeserver.url)
    assert _whoami(homeserver, user.access_token) == user.user_id
    with pytest.raises(HomeserverError, match="cannot restart"):
        external.restart()


def test_homeserver_from_environment_reports_a_server_that_never_answers(monkeypatch):
    monkeypatch.setenv("MINDROOM_TEST_HOMESERVER_URL", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("MINDROOM_TEST_HOMESERVER_SECRET", "secret")
    monkeypatch.setattr("mindroom.testing.homeserver._START_TIMEOUT_S", 0.3)

    with pytest.raises(HomeserverError, match="did not answer"):
        TestHomeserver.from_environment().start()


def test_homeserver_from_environment_needs_url_and_secret(monkeypatch):
    monkeypatch.setenv("MINDROOM_TEST_HOMESERVER_URL", "http://127.0.0.1:1")
    monkeypatch.delenv("MINDROOM_TEST_HOMESERVER_SECRET", raising=False)

    assert TestHomeserver.from_environment() is None


def test_unique_localpart_is_unique_and_lowercase():
    names = {unique_localpart("Test") for _ in range(100)}
    assert len(names) == 100
    assert all(name.startswith("test_") for name in names)
