"""End-to-end harness: the daemon in-process against the session's real Synapse and a scripted model."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from mindroom.config.environment import DaemonEnvironment, HomeserverSettings
from mindroom.daemon.orchestrator import Orchestrator
from mindroom.homeserver.synapse import free_port
from mindroom.homeserver.tether import spawn_module
from mindroom.testing.homeserver import APPSERVICE_ACCOUNT_PREFIX, TestHomeserver
from mindroom.testing.model_server import ScriptedModelServer
from tests.integration.support import PATIENCE_S, HumanClient, ReloadLog, eventually

pytestmark = pytest.mark.integration


class E2E:
    """One test's world: unique names, a human user, config files, and the daemon under test."""

    def __init__(
        self, homeserver: TestHomeserver, model_server: ScriptedModelServer, root: Path, delivery: str = "sync"
    ) -> None:
        self.delivery = delivery
        """`sync` (each bot syncs) or `appservice` (the homeserver's transactions bring every event once)."""
        if delivery == "appservice" and homeserver.appservice_registration is None:
            pytest.skip("the test homeserver has no application service")
        self.homeserver = homeserver
        self.model_server = model_server
        self.root = root
        self.uid = secrets.token_hex(3)
        self.config_dir = root / "deploy"
        self.config_dir.mkdir()
        self.storage = root / "data"
        self.daemon: Orchestrator | None = None
        self.reloads = ReloadLog()
        self.humans: list[HumanClient] = []
        self.processes: list[DaemonProcess] = []

    @property
    def account_prefix(self) -> str:
        """The bot accounts' localpart prefix for this test (`@<prefix><agent>:<server>`)."""
        if self.delivery == "appservice":
            return f"{APPSERVICE_ACCOUNT_PREFIX}{self.uid}_"
        return f"mr{self.uid}_"

    @property
    def appservice_registration(self) -> Path | None:
        """The registration file the daemon gets in appservice mode (None in sync mode)."""
        return self.homeserver.appservice_registration if self.delivery == "appservice" else None

    def spawn(self, config: dict[str, Any] | Path, **env: str) -> DaemonProcess:
        """A daemon subprocess for `config` (started by the caller, killed at teardown if still running)."""
        path = config if isinstance(config, Path) else self.write_config(config)
        process = DaemonProcess(self, path, env)
        self.processes.append(process)
        return process

    def name(self, base: str) -> str:
        """A name unique to this test (agents and rooms share one homeserver across the session)."""
        return f"{base}{self.uid}"

    async def human(self, base: str = "alice", *, encrypted: bool = False) -> HumanClient:
        """A person's account and client; `encrypted`: a full encryption device with a store of its own."""
        user = self.homeserver.register_user(self.name(base), "secret-pass-" + self.uid)
        store = self.root / "human-crypto" / f"{base}-{secrets.token_hex(4)}" if encrypted else None
        client = HumanClient(self.homeserver.url, user.user_id, user.password, store_dir=store)
        await client.start()
        self.humans.append(client)
        return client

    def models(self) -> dict[str, Any]:
        base_url = self.model_server.base_url
        return {
            "default": {
                "provider": "openai",
                "id": "agent-model",
                "extra_kwargs": {"base_url": base_url, "max_retries": 0},
            },
            "routing": {
                "provider": "openai",
                "id": "router-model",
                "extra_kwargs": {"base_url": base_url, "max_retries": 0},
            },
        }

    def write_config(self, config: dict[str, Any]) -> Path:
        path = self.config_dir / "config.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    def basic_config(self, users: list[str], agents: dict[str, dict[str, Any]], **extra: Any) -> dict[str, Any]:
        config: dict[str, Any] = {
            "models": self.models(),
            "agents": agents,
            "router": {"model": "routing"},
            "authorization": {"global_users": users, "room_permissions": {}, "default_room_access": False},
            "room_defaults": {"invite_users": users},
            "defaults": {"enable_streaming": False},
            "plugins": [],
        }
        config.update(extra)
        return config

    def plugin(self, folder: str, hooks_source: str, name: str | None = None) -> Path:
        path = self.config_dir / "plugins" / folder
        path.mkdir(parents=True, exist_ok=True)
        manifest = {"name": name or folder, "hooks_module": "hooks.py"}
        (path / "mindroom.plugin.json").write_text(json.dumps(manifest))
        (path / "hooks.py").write_text(hooks_source)
        return path

    async def start(self, config: dict[str, Any], **options: Any) -> Orchestrator:
        """Write the config and start the daemon in-process (`options` go to `Orchestrator`, e.g. `watch=False`)."""
        path = self.write_config(config)
        self.daemon = Orchestrator(self.environment(path), on_reload=self.reloads.add, **options)
        try:
            await self.daemon.start()
        except BaseException:
            await self.daemon.stop("start failed")
            raise
        return self.daemon

    def environment(self, config_path: Path) -> DaemonEnvironment:
        """The daemon's environment: this test's data dir and homeserver, no process environment."""
        homeserver = HomeserverSettings(
            self.homeserver.url,
            self.homeserver.server_name,
            self.homeserver.registration_shared_secret,
            account_prefix=self.account_prefix,
            appservice_registration=self.appservice_registration,
        )
        return DaemonEnvironment(config_path.resolve(), self.storage.resolve(), {}, homeserver)

    async def migrate_state(self, url: str) -> subprocess.CompletedProcess[str]:
        """`mindroom state migrate --to url` on this world's config and data, as an operator runs it."""
        return await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "mindroom", "state", "migrate", "--to", url,
             "--config", str(self.config_dir / "config.yaml")],
            capture_output=True, text=True, timeout=120, cwd=self.config_dir,
            env={**os.environ, "MINDROOM_STORAGE_PATH": str(self.storage)},
        )  # fmt: skip

    async def stop(self) -> None:
        if self.daemon is not None:
            await self.daemon.stop()
            self.daemon = None

    def room_id(self, key: str) -> str:
        assert self.daemon is not None and self.daemon.running is not None
        return self.daemon.running.directory.room_ids[key]

    def user_id(self, entity: str) -> str:
        assert self.daemon is not None and self.daemon.running is not None
        return self.daemon.running.directory.bot_user_ids[entity]

    async def idle(self) -> None:
        """Until no bot of the in-process daemon is handling an event: all it received is fully handled."""

        def idle() -> bool:
            assert self.daemon is not None
            return all(bot.in_flight == 0 for bot in self.daemon.bots.values())

        await eventually(idle, "the daemon's bots finishing what they received")

    async def settle(self, human: HumanClient, *room_ids: str) -> None:
        """Until the in-process daemon is idle and `human` has seen all it sent to `room_ids`.

        Call it after a sign that the daemon received the events in question (its answer to a later
        message): then a check that something did not happen is final, with no quiet spell to outlast.
        """
        await self.idle()
        for room_id in room_ids:
            await human.sync_past(room_id)

    async def joined(self, human: HumanClient, room_id: str, timeout: float = PATIENCE_S) -> None:
        """Wait until the human has joined (the harness accepts invites automatically)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while asyncio.get_running_loop().time() < deadline:
            response = await human.client.joined_rooms()
            if room_id in getattr(response, "rooms", []):
                return
            await asyncio.sleep(0.1)
        raise TimeoutError(f"{human.user_id} did not join {room_id}")

    async def close(self) -> None:
        for process in self.processes:
            process.close()
        await self.stop()
        for human in self.humans:
            await human.close()


class DaemonProcess:
    """`python -m mindroom run` as a child process on the test homeserver; stderr is appended to one log file,
    so a restarted daemon's output follows the first run's."""

    def __init__(self, e2e: E2E, config_path: Path, env: dict[str, str]) -> None:
        self.e2e = e2e
        self.config_path = config_path
        self.env = env
        self.log_path = e2e.root / "daemon.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, args: tuple[str, ...] = ()) -> None:
        """`mindroom run` with this world's environment, `self.env` over it, and `args` after the config."""
        hs = self.e2e.homeserver
        environment = {
            **os.environ,
            "MATRIX_HOMESERVER": hs.url,
            "MATRIX_SERVER_NAME": hs.server_name,
            "MATRIX_REGISTRATION_SHARED_SECRET": hs.registration_shared_secret,
            "MINDROOM_STORAGE_PATH": str(self.e2e.storage),
            "MINDROOM_ACCOUNT_PREFIX": self.e2e.account_prefix,
            "MINDROOM_LOG_JSON": "1",
            "MINDROOM_API_PORT": str(free_port()),  # the daemon serves its API as in production, on a free port
            **(
                {"MATRIX_APPSERVICE_REGISTRATION": str(registration)}
                if (registration := self.e2e.appservice_registration)
                else {}
            ),
            **self.env,
        }
        with self.log_path.open("ab") as log:
            # Tethered to the test process: a killed test run leaves no daemon behind.
            self.process = spawn_module(
                "mindroom", ["run", "--config", str(self.config_path), *args],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                env=environment, cwd=self.e2e.config_dir,
            )  # fmt: skip

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    async def wait_for_line(self, text: str, *, count: int = 1, timeout: float = 2 * PATIENCE_S) -> None:
        """Wait until `text` has appeared `count` times in the output (a restart counts again)."""
        deadline = time.monotonic() + timeout
        while self.output().count(text) < count:
            assert self.process is not None
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise TimeoutError(f"no {text!r} in the daemon's output:\n{self.output()[-3000:]}")
            await asyncio.sleep(0.1)

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    async def terminate(self, timeout: float = PATIENCE_S) -> int:
        """SIGTERM, then the exit code."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return await asyncio.to_thread(self.process.wait, timeout)

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


DELIVERY = os.environ.get("MINDROOM_TEST_DELIVERY", "sync")
"""How the daemons of the `e2e` fixture receive events: `sync` (default) or `appservice` (the whole suite
can run on either: `MINDROOM_TEST_DELIVERY=appservice pytest -m integration`)."""


@pytest_asyncio.fixture
async def e2e(
    matrix_homeserver: TestHomeserver, model_server: ScriptedModelServer, tmp_path: Path
) -> AsyncIterator[E2E]:
    world = E2E(matrix_homeserver, model_server, tmp_path, DELIVERY)
    try:
        yield world
    finally:
        await world.close()


@pytest_asyncio.fixture(params=["sync", "appservice"])
async def each_delivery(
    request: pytest.FixtureRequest, matrix_homeserver: TestHomeserver, model_server: ScriptedModelServer, tmp_path: Path
) -> AsyncIterator[E2E]:
    """One test world per way of receiving: each bot's own sync, and the appservice's transactions."""
    world = E2E(matrix_homeserver, model_server, tmp_path, request.param)
    try:
        yield world
    finally:
        await world.close()
