"""`mindroom doctor`'s state checks: the backend, whether this user can use it, and who holds its lock.

They never take the lock: a daemon holding it still holds it after the check, on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import yaml
from typer.testing import CliRunner

from mindroom.cli import app
from mindroom.cli.doctor_state import check_sqlite_state
from mindroom.state.sqlite.backend import SqliteState, lock_held
from tests.state.postgres_server import TestPostgres, postgres_server, postgres_url

__all__ = ["postgres_server", "postgres_url"]

runner = CliRunner()
_NOBODY = 65534
_HOLD = (
    "import asyncio, sys\n"
    "from pathlib import Path\n"
    "from mindroom.state.sqlite.backend import SqliteState\n"
    "async def main():\n"
    "    state = SqliteState(Path(sys.argv[1]))\n"
    "    await state.acquire()\n"
    "    print('locked', flush=True)\n"
    "    await asyncio.to_thread(sys.stdin.read)\n"
    "    await state.close()\n"
    "asyncio.run(main())\n"
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("MATRIX_", "OPENAI_", "ANTHROPIC_", "OLLAMA_", "MINDROOM_")):
            monkeypatch.delenv(name)


def _config(folder: Path, database_url: str | None = None) -> Path:
    config: dict[str, object] = {
        "models": {"default": {"provider": "offline", "id": "offline"}},
        "agents": {"assistant": {"display_name": "Assistant", "rooms": ["lobby"]}},
    }
    if database_url is not None:
        config["storage"] = {"database_url": database_url}
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def _doctor(config: Path) -> tuple[str, dict[str, str]]:
    result = runner.invoke(
        app, ["doctor", "-c", str(config), "--storage-path", str(config.parent / "data"), "--no-model-call"]
    )
    lines = {}
    for line in result.output.splitlines():
        status, _, rest = line.partition("  ")
        name, _, _ = rest.partition(":")
        lines[name.strip()] = f"{status.strip()} {rest}"
    return result.output, lines


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- SQLite --------------------------------------------------------------------------------------------------


@pytest.fixture
def sqlite_holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the data directory's state lock, as `mindroom run` takes it."""
    process = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(tmp_path / "data")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert process.stdout is not None
    for line in process.stdout:  # its log line comes first
        if line.strip() == "locked":
            break
    else:
        pytest.fail(f"the holder did not take the lock (exit {process.wait(10)})")
    yield process
    if process.poll() is None:
        process.kill()
    process.wait(10)


async def _run_once(storage: Path) -> None:
    state = SqliteState(storage)
    await state.acquire()
    await state.open_stores()
    await state.close()


def test_doctor_state_on_sqlite_names_the_files_and_a_free_lock(tmp_path):
    config = _config(tmp_path)
    asyncio.run(_run_once(tmp_path / "data"))
    state_dir = tmp_path / "data" / "state"

    _, lines = _doctor(config)

    assert lines["state"].startswith("ok") and f"SQLite in {state_dir}: 9 databases" in lines["state"]
    assert "readable and private" in lines["state"]
    assert lines["state lock"].startswith("ok") and "free: no daemon runs on this state" in lines["state lock"]
    assert f"the last was host {socket.gethostname()}, pid {os.getpid()}" in lines["state lock"]


def test_doctor_state_warns_when_other_users_may_read_the_sqlite_files(tmp_path):
    config = _config(tmp_path)
    asyncio.run(_run_once(tmp_path / "data"))
    state_dir = tmp_path / "data" / "state"
    (state_dir / "rooms.db").chmod(0o644)

    _, lines = _doctor(config)

    assert lines["state"].startswith("warn") and "other users may read 1 of its paths (rooms.db)" in lines["state"]
    assert f"fix: chmod -R go-rwx {state_dir}" in lines["state"]


def test_doctor_state_names_the_daemon_holding_the_sqlite_lock_and_leaves_it_held(tmp_path, sqlite_holder):
    config = _config(tmp_path)
    lock = tmp_path / "data" / "state" / "daemon.lock"
    written = lock.read_bytes()

    output, lines = _doctor(config)

    held = f"held by a running daemon: host {socket.gethostname()}, pid {sqlite_holder.pid}, since "
    assert lines["state lock"].startswith("ok") and held in lines["state lock"], output
    assert lines["state"].startswith("ok")
    # The holder still holds the lock, and its name is untouched.
    assert lock_held(lock) and lock.read_bytes() == written
    second = SqliteState(tmp_path / "data")
    holder = asyncio.run(second.try_lock())
    assert not second.locked and holder is not None and holder.pid == sqlite_holder.pid

    assert sqlite_holder.stdin is not None
    sqlite_holder.stdin.close()
    assert sqlite_holder.wait(10) == 0
    assert not lock_held(lock)


def _check_as_another_user(state_dir: Path) -> list[dict[str, str]]:
    """`check_sqlite_state` run by a user who may not enter `state_dir` (as `nobody` when the tests run as root)."""
    if os.geteuid() != 0:
        return [{"status": r.status, "detail": r.detail, "fix": r.fix} for r in check_sqlite_state(state_dir)]
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child process
        code = 1
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(_NOBODY)
            os.setuid(_NOBODY)
            results = [{"status": r.status, "detail": r.detail, "fix": r.fix} for r in check_sqlite_state(state_dir)]
            os.write(write, json.dumps(results).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return json.loads(data)  # type: ignore[no-any-return]


def test_doctor_state_fails_on_a_state_dir_this_user_cannot_read(tmp_path):
    base = Path(tempfile.mkdtemp(prefix="mindroom-doctor-"))  # outside the 0700 pytest folder, for `nobody`
    try:
        base.chmod(0o755)
        asyncio.run(_run_once(base / "data"))
        (base / "data").chmod(0o755)
        state_dir = base / "data" / "state"
        state_dir.chmod(0o000)

        state, lock = _check_as_another_user(state_dir)

        assert (
            state["status"] == "fail"
            and f"SQLite in {state_dir}: cannot read it (Permission denied)" in state["detail"]
        )
        assert f"chown -R <the daemon's user> {state_dir}" in state["fix"]
        assert lock["status"] == "warn" and "cannot tell whether a daemon holds" in lock["detail"]
    finally:
        (base / "data" / "state").chmod(0o700)
        subprocess.run(["rm", "-rf", str(base)], check=True)


# -- PostgreSQL ----------------------------------------------------------------------------------------------


def test_doctor_state_names_an_unreachable_database_without_its_password(tmp_path, monkeypatch):
    password = "pg-password-do-not-print-5151"
    port = _closed_port()
    config = _config(tmp_path, f"postgresql://mindroom:{password}@127.0.0.1:{port}/mindroom")
    config.chmod(0o644)

    output, lines = _doctor(config)

    assert lines["state"].startswith("FAIL")
    where = f"PostgreSQL at 127.0.0.1:{port}, database mindroom, user mindroom: cannot connect"
    assert where in lines["state"]
    assert "fix: check MINDROOM_DATABASE_URL (or storage.database_url)" in lines["state"]
    assert lines["state lock"].startswith("warn") and "cannot tell" in lines["state lock"]
    assert lines["state password"].startswith("warn") and f"chmod 600 {config}" in lines["state password"]
    assert password not in output


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_doctor_state_on_postgres_reads_the_schema_and_the_lock_without_taking_it(
    postgres_server: TestPostgres, postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from mindroom.state.location import open_state_backend

    monkeypatch.setenv("MINDROOM_DATABASE_URL", postgres_url)
    config = _config(tmp_path)
    database = postgres_url.rsplit("/", 1)[1]
    where = f"at 127.0.0.1:{postgres_server.port}, database {database}, user postgres"

    # A database no daemon has used yet: reachable, the schema comes with the first start, nobody holds it.
    output, lines = await asyncio.to_thread(_doctor, config)
    assert lines["state"].startswith("warn") and f"{where}: reachable; schema mindroom is not there yet" in output
    assert "created on first start" in lines["state"]
    assert lines["state lock"].startswith("ok") and "free: no daemon runs on this state" in lines["state lock"]
    outputs = [output]

    daemon = open_state_backend(tmp_path / "data", postgres_url)
    await daemon.acquire()
    role = f"doctor_{secrets.token_hex(4)}"
    role_password = secrets.token_urlsafe(12)
    try:
        output, lines = await asyncio.to_thread(_doctor, config)
        outputs.append(output)
        held = f"held by a running daemon: host {socket.gethostname()}, pid {os.getpid()}, since "
        assert lines["state lock"].startswith("ok") and held in lines["state lock"], output
        assert "database session " in lines["state lock"] and "(mindroom, user postgres" in lines["state lock"]
        assert lines["state"].startswith("ok") and f"{where}: schema mindroom, " in lines["state"]
        # Still the daemon's: its session kept the lock, and another daemon is refused.
        assert daemon.locked and await daemon.read_holder() is not None
        second = open_state_backend(tmp_path / "data", postgres_url)
        try:
            assert await second.try_lock() is not None and not second.locked
        finally:
            await second.close()

        # A database user without the rights the daemon's start needs is told which GRANT it lacks.
        with psycopg.connect(postgres_server.admin_url, autocommit=True) as admin:
            admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{role_password}'")  # type: ignore[arg-type]
        limited = postgres_url.replace(f"postgres:{postgres_server.password}@", f"{role}:{role_password}@")
        monkeypatch.setenv("MINDROOM_DATABASE_URL", limited)
        output, lines = await asyncio.to_thread(_doctor, config)
        outputs.append(output)
        assert lines["state"].startswith("FAIL") and f"fix: GRANT CREATE ON DATABASE {database} TO {role}" in output
        assert lines["state lock"].startswith("warn") and "cannot read mindroom.lock_holder" in lines["state lock"]
        assert daemon.locked and await daemon.read_holder() is not None
    finally:
        await daemon.close()
        with psycopg.connect(postgres_server.admin_url, autocommit=True) as admin:
            admin.execute(f"DROP ROLE IF EXISTS {role}")  # type: ignore[arg-type]

    for text in outputs:
        assert postgres_server.password not in text and role_password not in text
