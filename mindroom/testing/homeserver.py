"""A real Synapse homeserver for tests: a subprocess on a free loopback port with SQLite in a temp dir.

A sync shell over `mindroom.homeserver.synapse.SynapseProcess` that adds user registration and the
session fixture; async code uses `async with TestHomeserver()` or `asyncio.to_thread(server.stop)`.

Set `MINDROOM_TEST_HOMESERVER_URL` and `MINDROOM_TEST_HOMESERVER_SECRET` (and optionally
`MINDROOM_TEST_HOMESERVER_NAME`, default `localhost`) to use an already-running server instead.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import pytest

from mindroom.errors import MindroomError
from mindroom.homeserver.files import LOG_FILENAME, LimiterLevel, write_synapse_files
from mindroom.homeserver.synapse import SynapseError, SynapseProcess, client_api_answers, free_port, http_json
from mindroom.logging_config import get_logger

if TYPE_CHECKING:
    from mindroom.matrix.appservice.registration_file import AppserviceRegistration

__all__ = [
    "APPSERVICE_ACCOUNT_PREFIX",
    "HomeserverError",
    "RegisteredUser",
    "TestHomeserver",
    "matrix_homeserver",
    "unique_localpart",
]

logger = get_logger(__name__)

# Long, for a loaded machine (Synapse starts in a few seconds; a passing run never waits this out).
_START_TIMEOUT_S = 120.0
_STOP_TIMEOUT_S = 10.0
_POLL_INTERVAL_S = 0.05
_ENV_URL = "MINDROOM_TEST_HOMESERVER_URL"
_ENV_SECRET = "MINDROOM_TEST_HOMESERVER_SECRET"
_ENV_SERVER_NAME = "MINDROOM_TEST_HOMESERVER_NAME"
_APPSERVICE_FILE = "appservice.yaml"
APPSERVICE_ACCOUNT_PREFIX = "appsvc"
"""Accounts whose localpart starts with this are in the namespace of a test homeserver's application service."""


class HomeserverError(MindroomError, RuntimeError):
    """The test homeserver failed to start or rejected a request."""


@dataclass(frozen=True, slots=True)
class RegisteredUser:
    """An account created through the shared-secret registration API."""

    user_id: str
    access_token: str = field(repr=False)
    device_id: str
    password: str = field(repr=False)


def unique_localpart(prefix: str = "user") -> str:
    """A localpart no other test uses: `<prefix>_<random hex>`."""
    return f"{prefix.lower()}_{secrets.token_hex(4)}"


def _request(url: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    status, body = http_json(url, data)
    if status != 200:
        method = "GET" if data is None else "POST"
        msg = f"{method} {url} -> HTTP {status}: {json.dumps(body)}"
        raise HomeserverError(msg)
    return body


class TestHomeserver:
    """A Synapse subprocess; `stop()` then `start()` reuses the same data dir and port."""

    __test__ = False  # not a pytest test class

    def __init__(
        self, base_dir: Path | None = None, server_name: str = "localhost", *, appservice: bool = False
    ) -> None:
        """`appservice`: register an application service for the accounts named `APPSERVICE_ACCOUNT_PREFIX…`."""
        self._requested_dir = None if base_dir is None else Path(base_dir)
        self._temp_dir: Path | None = None
        self._server_name = server_name
        self._port = free_port()
        self._secret = secrets.token_urlsafe(32)
        # Made with the config; forgotten with a temp dir that `cleanup` deletes.
        self._synapse: SynapseProcess | None = None
        self._external_url: str | None = None
        self._appservice: AppserviceRegistration | None = None
        if appservice:
            # Here, not at the top: the kit's plugin loads this module, and the Matrix layer brings matrix-nio.
            from mindroom.matrix.appservice.registration_file import AppserviceRegistration

            url = f"http://127.0.0.1:{free_port()}"
            self._appservice = AppserviceRegistration.create(url, APPSERVICE_ACCOUNT_PREFIX, server_name)

    @classmethod
    def from_environment(cls) -> TestHomeserver | None:
        """A handle on the server named by `MINDROOM_TEST_HOMESERVER_URL`/`_SECRET`, or None if unset."""
        url = os.environ.get(_ENV_URL)
        secret = os.environ.get(_ENV_SECRET)
        if not url or not secret:
            return None
        server = cls(server_name=os.environ.get(_ENV_SERVER_NAME, "localhost"))
        server._external_url = url.rstrip("/")
        server._secret = secret
        return server

    @property
    def url(self) -> str:
        """The client-server API base URL, e.g. `http://127.0.0.1:8448`."""
        return self._external_url or f"http://127.0.0.1:{self._port}"

    @property
    def server_name(self) -> str:
        """The Matrix server name (the part after `:` in user ids)."""
        return self._server_name

    @property
    def registration_shared_secret(self) -> str:
        """The secret for the admin registration API."""
        return self._secret

    @property
    def base_dir(self) -> Path:
        """The directory holding config, database, media and logs (a new temp dir unless one was given)."""
        if self._requested_dir is not None:
            return self._requested_dir
        if self._temp_dir is None:
            self._temp_dir = Path(tempfile.mkdtemp(prefix="mindroom-synapse-"))
        return self._temp_dir

    @property
    def appservice_registration(self) -> Path | None:
        """The registration file of the server's application service (None without one, or for an external server)."""
        if self._appservice is None or self.is_external:
            return None
        return self.base_dir / _APPSERVICE_FILE

    @property
    def log_path(self) -> Path:
        """Synapse's own log file (WARNING and above)."""
        return self.base_dir / LOG_FILENAME

    @property
    def is_external(self) -> bool:
        """True when the server was started by someone else and cannot be stopped from here."""
        return self._external_url is not None

    @property
    def is_running(self) -> bool:
        """True while the subprocess is alive (always True for an external server)."""
        return self.is_external or (self._synapse is not None and self._synapse.running)

    def start(self) -> None:
        """Start Synapse and block until the client API answers (at most 120 s)."""
        started = time.monotonic()
        if self.is_external:
            self._wait_for_external(started + _START_TIMEOUT_S)
            return
        synapse = self._synapse if self._synapse is not None else self._write_config()
        if synapse.running:
            return
        # In the caller's session (Ctrl+C stops it too); it dies with this process if that is killed.
        synapse.spawn()
        try:
            synapse.wait_ready(started + _START_TIMEOUT_S)
        except SynapseError as exc:
            synapse.terminate(_STOP_TIMEOUT_S)
            raise HomeserverError(str(exc)) from exc
        except BaseException:
            synapse.terminate(_STOP_TIMEOUT_S)
            raise
        logger.info("test homeserver started", url=self.url, seconds=round(time.monotonic() - started, 2))

    def stop(self) -> None:
        """SIGTERM Synapse, wait up to 10 s, then kill it; keeps the data dir for a later `start()`."""
        if self._synapse is not None:
            self._synapse.terminate(_STOP_TIMEOUT_S)

    def restart(self) -> None:
        """Stop and start again on the same data dir and port."""
        if self.is_external:
            msg = "cannot restart an external homeserver"
            raise HomeserverError(msg)
        self.stop()
        self.start()

    def cleanup(self) -> None:
        """Stop the server and delete the temp dir if this object created it."""
        self.stop()
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None
            self._synapse = None

    def register_user(
        self, localpart: str, password: str, *, admin: bool = False, displayname: str | None = None
    ) -> RegisteredUser:
        """Create an account with the shared-secret admin registration API."""
        endpoint = f"{self.url}/_synapse/admin/v1/register"
        nonce = str(_request(endpoint)["nonce"])
        role = b"admin" if admin else b"notadmin"
        mac = hmac.new(self._secret.encode(), digestmod=hashlib.sha1)
        mac.update(b"\x00".join([nonce.encode(), localpart.encode(), password.encode(), role]))
        payload: dict[str, Any] = {
            "nonce": nonce,
            "username": localpart,
            "password": password,
            "admin": admin,
            "mac": mac.hexdigest(),
        }
        if displayname is not None:
            payload["displayname"] = displayname
        result = _request(endpoint, payload)
        return RegisteredUser(
            user_id=str(result["user_id"]),
            access_token=str(result["access_token"]),
            device_id=str(result.get("device_id", "")),
            password=password,
        )

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.cleanup()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.cleanup()

    async def __aenter__(self) -> Self:
        try:
            await asyncio.to_thread(self.start)
        except BaseException:
            await asyncio.to_thread(self.cleanup)
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.cleanup)

    def _write_config(self) -> SynapseProcess:
        state = {
            "server_name": self._server_name,
            "registration_shared_secret": self._secret,
            "macaroon_secret_key": secrets.token_urlsafe(32),
            "form_secret": secrets.token_urlsafe(32),
        }
        # Cheap password hashing: tests register many accounts and the hashes guard nothing.
        extra: dict[str, Any] = {"bcrypt_rounds": 4}
        if self._appservice is not None:
            from mindroom.matrix.appservice.registration_file import synapse_appservice_settings

            registration = self.base_dir / _APPSERVICE_FILE
            self._appservice.write(registration)
            extra.update(synapse_appservice_settings(registration))
        write_synapse_files(self.base_dir, port=self._port, state=state, limiter=LimiterLevel.UNLIMITED, extra=extra)
        self._synapse = SynapseProcess(self.base_dir, self._port)
        return self._synapse

    def _wait_for_external(self, deadline: float) -> None:
        while not client_api_answers(self.url):
            if time.monotonic() > deadline:
                msg = f"the homeserver at {self.url} (from {_ENV_URL}) did not answer within {_START_TIMEOUT_S:.0f} s"
                raise HomeserverError(msg)
            time.sleep(_POLL_INTERVAL_S)


@pytest.fixture(scope="session")
def matrix_homeserver() -> Iterator[TestHomeserver]:
    """A started Synapse shared by the whole session; isolate tests with unique users and rooms."""
    external = TestHomeserver.from_environment()
    if external is not None:
        external.start()
        yield external
        return
    with TestHomeserver(appservice=True) as server:
        yield server
