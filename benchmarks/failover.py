"""Failover and the cost of PostgreSQL state, on a real Synapse and a real PostgreSQL.

1. Latency: the daemon (1 agent, instant model replies) on SQLite state and on PostgreSQL state, in the
   same run and alternating (SQLite, PostgreSQL, SQLite, PostgreSQL) so load from elsewhere hits both
   alike: message-to-reply p50/p95 and the daemon's CPU time per message (plus the database server's
   on PostgreSQL).
2. Failover: an active daemon and a `--standby` on the same PostgreSQL state; a stream of messages; the
   active one is killed with SIGKILL mid-stream. Prints the takeover time (kill to the standby's first
   answer) and messages sent, answered, lost and doubled. Target: takeover < 10 s, 0 lost, 0 doubled.
   `FAILOVER_SQLITE=1` runs the same on SQLite state too (one data directory, `flock`).
   `FAILOVER_ENCRYPTED=1` runs it once more in an encrypted room, with an encryption-capable human and a
   standby on "another machine": an empty data directory and only the recovery key
   (`MINDROOM_RECOVERY_KEY_FILE`); the bots' devices and keys come from the database.
   `FAILOVER_ONLY=1` skips the latency part.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mindroom.state.location import open_state_backend  # noqa: E402
from mindroom.testing.homeserver import TestHomeserver  # noqa: E402
from mindroom.testing.model_server import Delay, ScriptedModelServer, Text  # noqa: E402
from tests.integration.support import HumanClient, thread_replies  # noqa: E402
from tests.state.postgres_server import TestPostgres  # noqa: E402

MESSAGES = int(os.environ.get("BENCH_MESSAGES", "60"))
STREAM = int(os.environ.get("FAILOVER_MESSAGES", "40"))
KILL_AT = int(os.environ.get("FAILOVER_KILL_AT", "15"))
INTERVAL_S = float(os.environ.get("FAILOVER_INTERVAL_S", "0.25"))


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _server_cpu_s(server: TestPostgres | None) -> float:
    """CPU of the PostgreSQL server and all its backends (children of the postmaster)."""
    if server is None or server.process is None:
        return 0.0
    total = 0.0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == server.process.pid or int(entry.name) == server.process.pid:
                total += (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Daemon:
    """`python -m mindroom run` as a subprocess; its stderr lines are kept to wait for log lines."""

    def __init__(self, workdir: Path, hs: TestHomeserver, prefix: str, env: dict[str, str], *, standby: bool) -> None:
        environment = dict(os.environ)
        environment.update(
            MATRIX_HOMESERVER=hs.url,
            MATRIX_SERVER_NAME=hs.server_name,
            MATRIX_REGISTRATION_SHARED_SECRET=hs.registration_shared_secret,
            MINDROOM_STORAGE_PATH=str(workdir / "data"),
            MINDROOM_ACCOUNT_PREFIX=prefix,
            **env,
        )
        command = [sys.executable, "-m", "mindroom", "run", "--config", str(workdir / "config.yaml"), "--json-logs"]
        self.process = subprocess.Popen(
            [*command, *(["--standby"] if standby else [])],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=environment, cwd=workdir,
        )  # fmt: skip
        self.lines: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stderr is not None
        for raw in self.process.stderr:
            self.lines.append(raw.decode(errors="replace"))

    async def wait_for(self, text: str, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"no {text!r}:\n{''.join(self.lines[-30:])}")
            await asyncio.sleep(0.05)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()


def _config(workdir: Path, base_url: str, user: str, agent: str, room: str, *, encrypted: bool = False) -> None:
    model = {"provider": "openai", "id": "bench", "extra_kwargs": {"base_url": base_url, "max_retries": 0}}
    config: dict[str, Any] = {
        "models": {"default": model},
        "agents": {agent: {"display_name": agent.title(), "role": "Benchmarks.", "rooms": [room]}},
        "router": {"model": "default"},
        "authorization": {"global_users": [user], "room_permissions": {}, "default_room_access": False},
        "room_defaults": {"invite_users": [user]},
        "defaults": {"enable_streaming": False},
    }
    if encrypted:
        config["rooms"] = {room: {"name": "Failover", "encrypted": True}}
    workdir.mkdir(parents=True)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))


async def _room(human: HumanClient, hs: TestHomeserver, key: str) -> str:
    room_id = str((await human.client.room_resolve_alias(f"#{key}:{hs.server_name}")).room_id)
    for _ in range(300):
        if room_id in getattr(await human.client.joined_rooms(), "rooms", []):
            return room_id
        await asyncio.sleep(0.1)
    raise TimeoutError(room_id)


async def latency(
    hs: TestHomeserver, human: HumanClient, root: Path, base_url: str, env: dict[str, str], pg: TestPostgres | None
) -> tuple[list[float], float, float]:
    """Samples (ms), daemon CPU seconds and database CPU seconds for `MESSAGES // 2` messages."""
    tag = secrets.token_hex(3)
    workdir = root / f"latency{tag}"
    _config(workdir, base_url, human.user_id, "solo", f"lat{tag}")
    daemon = Daemon(workdir, hs, f"l{tag}_", env, standby=False)
    try:
        await daemon.wait_for("daemon ready")
        room_id = await _room(human, hs, f"lat{tag}")
        responder = f"@l{tag}_solo:{hs.server_name}"

        async def one(index: int) -> float:
            start = time.perf_counter()
            event_id = await human.send(room_id, f"ping {index}")
            await human.wait_for(thread_replies(event_id, responder), timeout=30)
            return (time.perf_counter() - start) * 1000

        for index in range(5):
            await one(index)  # warm-up
        cpu, server_cpu = _cpu_s(daemon.process.pid), _server_cpu_s(pg)
        samples = [await one(index) for index in range(MESSAGES // 2)]
        cpu_s = _cpu_s(daemon.process.pid) - cpu
        server_s = _server_cpu_s(pg) - server_cpu
    finally:
        daemon.stop()
    return samples, cpu_s, server_s


def _summary(rounds: list[tuple[list[float], float, float]]) -> dict[str, float]:
    samples = [sample for round_samples, _cpu, _db in rounds for sample in round_samples]
    return {
        "p50": _pct(samples, 0.5),
        "p95": _pct(samples, 0.95),
        "cpu_ms": sum(cpu for _s, cpu, _db in rounds) / len(samples) * 1000,
        "db_cpu_ms": sum(db for _s, _cpu, db in rounds) / len(samples) * 1000,
    }


async def journal_cost(root: Path, url: str | None, count: int = 2000) -> float:
    """Microseconds the event loop spends on one turn's journal writes (claim, then complete)."""
    state = open_state_backend(root / secrets.token_hex(3), url)
    await state.acquire()
    journal = (await state.open_stores()).journal
    event = {"event_id": "$x", "content": {"body": "a message of ordinary length " * 4}}
    started = time.perf_counter()
    for index in range(count):
        journal.claim("agent", f"$e{index}", event)
        journal.complete("agent", f"$e{index}")
    elapsed = time.perf_counter() - started
    await state.close()
    return elapsed / count * 1e6


async def failover(
    hs: TestHomeserver, human: HumanClient, root: Path, base_url: str, env: dict[str, str], *, encrypted: bool = False
) -> dict[str, float]:
    tag = secrets.token_hex(3)
    workdir = root / f"failover{tag}"
    agent, room = "solo", f"fo{tag}"
    _config(workdir, base_url, human.user_id, agent, room, encrypted=encrypted)
    active = Daemon(workdir, hs, f"f{tag}_", env, standby=False)
    standby: Daemon | None = None
    try:
        await active.wait_for("daemon ready")
        standby_dir, standby_env = workdir, env
        if encrypted:  # "another machine": its own empty data directory, and the recovery key
            standby_dir = root / f"failover{tag}-standby"
            standby_dir.mkdir()
            shutil.copy(workdir / "config.yaml", standby_dir / "config.yaml")
            shutil.copy(workdir / "data" / "crypto" / "recovery-key", root / f"recovery-key-{tag}")
            standby_env = {**env, "MINDROOM_RECOVERY_KEY_FILE": str(root / f"recovery-key-{tag}")}
        standby = Daemon(standby_dir, hs, f"f{tag}_", standby_env, standby=True)
        await standby.wait_for("standby: waiting for the active daemon to stop")
        room_id = await _room(human, hs, room)
        responder = f"@f{tag}_{agent}:{hs.server_name}"
        if encrypted:
            await human.wait_for_member(room_id, responder)
        sent: list[str] = []
        killed_at_ms = 0
        for index in range(STREAM):
            sent.append(await human.send(room_id, f"message {index}"))
            if index == KILL_AT:
                active.process.send_signal(signal.SIGKILL)
                killed_at_ms = int(time.time() * 1000)
            await asyncio.sleep(INTERVAL_S)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if all(human.matching(thread_replies(event_id, responder)) for event_id in sent):
                break
            await asyncio.sleep(0.25)
        await asyncio.sleep(3.0)  # late duplicates would show up here
        counts = Counter(
            ev["content"]["m.relates_to"]["event_id"]
            for ev in human.events
            if ev.get("sender") == responder and ev["content"].get("m.relates_to", {}).get("rel_type") == "m.thread"
        )
        answers_after = [
            ev["origin_server_ts"]
            for ev in human.events
            if ev.get("sender") == responder and ev.get("origin_server_ts", 0) >= killed_at_ms
        ]
    finally:
        active.stop()
        if standby is not None:
            standby.stop()
    return {
        "takeover_s": (min(answers_after) - killed_at_ms) / 1000 if answers_after else float("nan"),
        "sent": len(sent),
        "answered": sum(1 for event_id in sent if counts.get(event_id, 0) >= 1),
        "lost": sum(1 for event_id in sent if counts.get(event_id, 0) == 0),
        "doubled": sum(1 for event_id in sent if counts.get(event_id, 0) > 1),
    }


async def main() -> int:
    pg = TestPostgres()
    pg.wait()
    try:
        with tempfile.TemporaryDirectory() as tmp, TestHomeserver() as hs, ScriptedModelServer() as model:
            model.set_default(Text("pong"))
            user = hs.register_user(f"bench{secrets.token_hex(3)}", "bench-pass")
            encrypted = bool(os.environ.get("FAILOVER_ENCRYPTED"))
            store = Path(tmp) / "human-crypto" if encrypted else None
            human = HumanClient(hs.url, user.user_id, user.password, store_dir=store)
            await human.start()
            on_sqlite = on_pg = None
            try:
                if not os.environ.get("FAILOVER_ONLY"):
                    sqlite_rounds, pg_rounds = [], []
                    for _round in range(2):
                        sqlite_rounds.append(await latency(hs, human, Path(tmp), model.base_url, {}, None))
                        on_pg_env = {"MINDROOM_DATABASE_URL": pg.create_database()}
                        pg_rounds.append(await latency(hs, human, Path(tmp), model.base_url, on_pg_env, pg))
                    on_sqlite, on_pg = _summary(sqlite_rounds), _summary(pg_rounds)
                    journal_us = {
                        "sqlite": await journal_cost(Path(tmp), None),
                        "postgresql": await journal_cost(Path(tmp), pg.create_database()),
                    }
                model.set_default(Delay(0.3, Text("answered")))
                failover_env = {"MINDROOM_DATABASE_URL": pg.create_database()}
                runs = {"postgresql": await failover(hs, human, Path(tmp), model.base_url, failover_env)}
                if os.environ.get("FAILOVER_SQLITE"):
                    runs["sqlite"] = await failover(hs, human, Path(tmp), model.base_url, {})
                if encrypted:
                    encrypted_env = {"MINDROOM_DATABASE_URL": pg.create_database()}
                    runs["postgresql, encrypted room, standby on an empty data directory"] = await failover(
                        hs, human, Path(tmp), model.base_url, encrypted_env, encrypted=True
                    )
            finally:
                await human.close()
    finally:
        pg.stop()
    if on_sqlite is not None and on_pg is not None:
        print(f"latency: {MESSAGES} messages each (two alternating rounds), 1 agent, instant model replies")
        print(f"{'state':<12}{'p50 ms':>10}{'p95 ms':>10}{'daemon CPU ms/msg':>20}{'database CPU ms/msg':>22}")
        for name, result in (("sqlite", on_sqlite), ("postgresql", on_pg)):
            print(
                f"{name:<12}{result['p50']:>10.1f}{result['p95']:>10.1f}{result['cpu_ms']:>20.2f}"
                f"{result['db_cpu_ms'] if name == 'postgresql' else float('nan'):>22.2f}"
            )
        print(
            "journal writes of one turn (claim + complete) on the event loop: sqlite"
            f" {journal_us['sqlite']:.0f} µs, postgresql {journal_us['postgresql']:.0f} µs (queued to its writer)"
        )
    for name, run in runs.items():
        print(
            f"failover ({name}): kill -9 at message {KILL_AT + 1} of {run['sent']}, one every {INTERVAL_S} s; "
            f"takeover (kill to the standby's first answer) {run['takeover_s']:.2f} s (target < 10)"
        )
        print(
            f"  sent {run['sent']}, answered {run['answered']}, lost {run['lost']}, doubled {run['doubled']}"
            " (target: 0 lost, 0 doubled)"
        )
    return 0 if all(run["lost"] == 0 and run["doubled"] == 0 for run in runs.values()) else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
