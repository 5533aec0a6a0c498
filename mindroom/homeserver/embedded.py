"""The embedded homeserver: a private Synapse under `<data>/homeserver/`, on loopback, managed by `mindroom run`.

Created on first run (signing key, secrets, database) and reused later. The port is stable: the one
asked for, else the one used last time, else 8008; when that is taken by something else a free port
is chosen and remembered. Secrets and the human account's password are stored with mode 0600.

In appservice mode (`mindroom run`'s default; `MINDROOM_MATRIX_DELIVERY=sync` turns it off) it also registers
the daemon as an application service for the bots' accounts (`appservice.yaml`, mode 0600, on a loopback port
chosen the same way): Synapse then pushes each event once to the daemon instead of answering one long-polling
sync per bot.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mindroom.config.project_extras import install_extra_command
from mindroom.errors import MindroomError
from mindroom.homeserver.files import LOG_FILENAME, LimiterLevel, write_synapse_files
from mindroom.homeserver.synapse import (
    SynapseError,
    SynapseProcess,
    free_port,
    http_json,
    port_available,
    stop_leftover,
)
from mindroom.logging_config import get_logger, register_secret_values
from mindroom.matrix.appservice.registration_file import AppserviceRegistration, synapse_appservice_settings
from mindroom.matrix.credentials import DEFAULT_ACCOUNT_PREFIX
from mindroom.matrix.registration import registration_mac
from mindroom.private_files import make_private, private_dir, write_private_file

__all__ = [
    "DEFAULT_EMBEDDED_PORT",
    "EMBEDDED_SERVER_NAME",
    "HOMESERVER_DIRNAME",
    "EmbeddedConnection",
    "EmbeddedHomeserver",
    "EmbeddedHomeserverError",
    "HumanAccount",
    "embedded_connection",
    "synapse_installed",
]

logger = get_logger(__name__)

DEFAULT_EMBEDDED_PORT = 8008
EMBEDDED_SERVER_NAME = "localhost"
HOMESERVER_DIRNAME = "homeserver"
_STATE_FILE = "embedded.json"
_APPSERVICE_FILE = "appservice.yaml"
_USER_FILE = "user.json"
_START_TIMEOUT_S = 90.0
_STOP_TIMEOUT_S = 15.0


class EmbeddedHomeserverError(MindroomError, RuntimeError):
    """The embedded homeserver could not be prepared or started; the message says what to do."""


@dataclass(frozen=True, slots=True)
class HumanAccount:
    """The one human account of the embedded homeserver; `created` is True on the run that made it."""

    user_id: str
    password: str = field(repr=False)
    created: bool = False


@dataclass(frozen=True, slots=True)
class EmbeddedConnection:
    """How a client reaches the embedded homeserver, read back from the data dir."""

    url: str
    server_name: str
    user_id: str | None
    password: str | None = field(repr=False)


def synapse_installed() -> bool:
    """True when the `matrix-synapse` package (the `embedded` extra) can be imported."""
    import importlib.util

    return importlib.util.find_spec("synapse") is not None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        msg = f"{path} is unreadable ({exc}); delete it to start the embedded homeserver afresh"
        raise EmbeddedHomeserverError(msg) from exc
    return data if isinstance(data, dict) else {}


def embedded_connection(storage_root: Path) -> EmbeddedConnection | None:
    """The embedded homeserver's URL and human account as the last `mindroom run` left them, or None."""
    base = storage_root / HOMESERVER_DIRNAME
    state = _read_json(base / _STATE_FILE)
    port = state.get("port")
    if not isinstance(port, int):
        return None
    user = _read_json(base / _USER_FILE)
    user_id, password = user.get("user_id"), user.get("password")
    return EmbeddedConnection(
        url=f"http://127.0.0.1:{port}",
        server_name=str(state.get("server_name") or EMBEDDED_SERVER_NAME),
        user_id=user_id if isinstance(user_id, str) else None,
        password=password if isinstance(password, str) else None,
    )


class EmbeddedHomeserver:
    """A Synapse subprocess owned by the daemon: `await start()`, `await ensure_user(...)`, `await stop()`."""

    def __init__(
        self,
        storage_root: Path,
        *,
        port: int | None = None,
        server_name: str = EMBEDDED_SERVER_NAME,
        account_prefix: str = DEFAULT_ACCOUNT_PREFIX,
        appservice: bool = False,
    ) -> None:
        """`account_prefix`: the bots' localpart prefix, whose accounts the appservice registration covers;
        `appservice`: register the daemon as an application service (else Synapse knows of none)."""
        self.base_dir = Path(storage_root).resolve() / HOMESERVER_DIRNAME
        self.appservice = appservice
        self.server_name = server_name
        self._account_prefix = account_prefix
        self._requested_port = port
        self._state: dict[str, Any] = {}
        self._synapse: SynapseProcess | None = None
        self.created = False

    # -- facts ---------------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The port Synapse listens on (known after `prepare()`)."""
        port = self._state.get("port")
        if not isinstance(port, int):
            msg = "the embedded homeserver is not prepared yet"
            raise EmbeddedHomeserverError(msg)
        return port

    @property
    def url(self) -> str:
        """The client-server API base URL on loopback."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def registration_shared_secret(self) -> str:
        """The secret bot accounts are registered with."""
        return str(self._state["registration_shared_secret"])

    @property
    def appservice_registration(self) -> Path:
        """The daemon's appservice registration (mode 0600: it holds the service's two tokens)."""
        return self.base_dir / _APPSERVICE_FILE

    @property
    def log_path(self) -> Path:
        """Synapse's log file (WARNING and above, rotated)."""
        return self.base_dir / LOG_FILENAME

    @property
    def user_file(self) -> Path:
        """Where the human account's user id and password are kept (mode 0600)."""
        return self.base_dir / _USER_FILE

    # -- preparation ---------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Create the data dir, keys and secrets on first use; pick the port; write Synapse's config."""
        if not synapse_installed():
            msg = (
                "no homeserver is configured and the embedded one needs matrix-synapse: "
                f"{install_extra_command('embedded')} (or set MATRIX_HOMESERVER to use your own homeserver)"
            )
            raise EmbeddedHomeserverError(msg)
        if self._synapse is not None and self._synapse.running:
            msg = "the embedded homeserver is running; stop it before preparing it again"
            raise EmbeddedHomeserverError(msg)
        private_dir(self.base_dir)
        state_path = self.base_dir / _STATE_FILE
        state = _read_json(state_path)
        self.created = not state
        for key in ("registration_shared_secret", "macaroon_secret_key", "form_secret", "as_token", "hs_token"):
            if not isinstance(state.get(key), str):
                state[key] = secrets.token_urlsafe(32)
        state["server_name"] = state.get("server_name") or self.server_name
        if state["server_name"] != self.server_name:
            msg = f"{self.base_dir} belongs to server {state['server_name']!r}, not {self.server_name!r}"
            raise EmbeddedHomeserverError(msg)
        # A Synapse left over from a daemon that was killed would hold the database and the port.
        stop_leftover(self.base_dir, timeout_s=_STOP_TIMEOUT_S)
        # Synapse's database, media and logs, as an older version left them (written with the default umask).
        tightened = make_private(self.base_dir)
        if tightened:
            logger.info("embedded homeserver files made private", files=len(tightened))
        state["port"] = self._choose_port(state.get("port"))
        state["appservice_port"] = self._appservice_port(state.get("appservice_port"), state["port"])
        self._state = state
        write_private_file(state_path, json.dumps(state, indent=2, sort_keys=True) + "\n")
        register_secret_values(
            [state[key] for key in ("registration_shared_secret", "macaroon_secret_key", "form_secret")]
            + [state["as_token"], state["hs_token"]]
        )
        registration = AppserviceRegistration.create(
            f"http://127.0.0.1:{state['appservice_port']}", self._account_prefix, self.server_name
        )
        registration = dataclasses.replace(registration, as_token=state["as_token"], hs_token=state["hs_token"])
        registration.write(self.appservice_registration)
        extra = synapse_appservice_settings(self.appservice_registration) if self.appservice else None
        write_synapse_files(self.base_dir, port=self.port, state=state, limiter=LimiterLevel.GENEROUS, extra=extra)
        self._synapse = SynapseProcess(self.base_dir, self.port)

    def _choose_port(self, last: Any) -> int:
        if self._requested_port is not None:
            if not port_available(self._requested_port):
                msg = f"port {self._requested_port} for the embedded homeserver is in use; choose another"
                raise EmbeddedHomeserverError(msg)
            return self._requested_port
        preferred = last if isinstance(last, int) else DEFAULT_EMBEDDED_PORT
        if port_available(preferred):
            return preferred
        port = free_port()
        logger.warning("embedded homeserver port taken; using another", wanted=preferred, port=port)
        return port

    @staticmethod
    def _appservice_port(last: Any, homeserver_port: int) -> int:
        """Where the daemon listens for transactions: the port used last time while it is free, else a new one."""
        if isinstance(last, int) and last != homeserver_port and port_available(last):
            return last
        return free_port()

    # -- process -------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Prepare if needed, start Synapse and wait until its client API answers."""
        if self._synapse is None:
            await asyncio.to_thread(self.prepare)
        synapse = self._prepared_synapse()
        if synapse.running:
            return
        started = time.monotonic()
        # Its own session, so Ctrl+C reaches only the daemon, which stops Synapse last; it dies with a
        # killed daemon. The wait runs in a worker thread and ends when `stop` ends Synapse.
        synapse.spawn(daemon=True)
        try:
            await asyncio.to_thread(synapse.wait_ready, started + _START_TIMEOUT_S)
        except SynapseError as exc:
            await self.stop()
            raise EmbeddedHomeserverError(str(exc)) from exc
        except BaseException:
            await self.stop()
            raise
        logger.info(
            "embedded homeserver started",
            url=self.url,
            first_run=self.created,
            seconds=round(time.monotonic() - started, 2),
        )

    async def stop(self) -> None:
        """SIGTERM Synapse and wait for it (then SIGKILL); the data dir stays for the next run."""
        if self._synapse is not None and await asyncio.to_thread(self._synapse.terminate, _STOP_TIMEOUT_S):
            logger.info("embedded homeserver stopped")

    def _prepared_synapse(self) -> SynapseProcess:
        if self._synapse is None:
            msg = "the embedded homeserver is not prepared yet"
            raise EmbeddedHomeserverError(msg)
        return self._synapse

    async def __aenter__(self) -> EmbeddedHomeserver:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- accounts ------------------------------------------------------------------------------------
    async def ensure_user(self, user_id: str) -> HumanAccount:
        """The human account `user_id`: read back from the data dir, or registered now with a new password."""
        localpart, _, server = user_id.removeprefix("@").partition(":")
        if not user_id.startswith("@") or server != self.server_name or not localpart:
            msg = f"the embedded homeserver is {self.server_name!r}; the human user must be @<name>:{self.server_name}"
            raise EmbeddedHomeserverError(msg)
        stored = _read_json(self.user_file)
        if stored.get("user_id") == user_id and isinstance(stored.get("password"), str):
            register_secret_values([stored["password"]])
            return HumanAccount(user_id, stored["password"], created=False)
        password = secrets.token_urlsafe(12)
        register_secret_values([password])
        # On disk before the account exists, so an interrupted first run can still sign in later.
        write_private_file(self.user_file, json.dumps({"user_id": user_id, "password": password}, indent=2) + "\n")
        status, body = await asyncio.to_thread(self._register, localpart, password)
        if status != 200:
            if body.get("errcode") == "M_USER_IN_USE":
                msg = (
                    f"{user_id} already exists on the embedded homeserver but its password is lost; "
                    f"set MINDROOM_USER to another @<name>:{self.server_name}"
                )
            else:
                msg = f"registering {user_id} failed: HTTP {status} {body.get('errcode', '')}".rstrip()
            raise EmbeddedHomeserverError(msg)
        logger.info("embedded homeserver user created", user_id=user_id)
        return HumanAccount(user_id, password, created=True)

    def _register(self, localpart: str, password: str) -> tuple[int, dict[str, Any]]:
        endpoint = f"{self.url}/_synapse/admin/v1/register"
        status, body = http_json(endpoint)
        nonce = body.get("nonce")
        if status != 200 or not isinstance(nonce, str):
            return status, body
        mac = registration_mac(self.registration_shared_secret, nonce, localpart, password, admin=False)
        payload = {"nonce": nonce, "username": localpart, "password": password, "admin": False, "mac": mac}
        return http_json(endpoint, payload)
