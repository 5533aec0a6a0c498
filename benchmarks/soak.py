"""Soak: thousands of messages at a steady rate; does memory, descriptors or the task count keep growing?

The daemon runs as a subprocess on a real Synapse with the scripted model (instant replies), in each delivery
mode (`BENCH_SOAK_MODES`, default "sync,appservice"): every bot long-polling its own sync, then the daemon
registered as the homeserver's application service. A person sends `BENCH_SOAK_MESSAGES` (default 3000)
messages at `BENCH_SOAK_RATE` per second (default 15), each in a new thread, over two rooms and two agents.
Every `BENCH_SOAK_CHECKPOINT` messages (default 500) the daemon's `/metrics` is read with the API key the
benchmark gives it: resident memory, open descriptors and event-loop tasks. Printed per mode: one row per
checkpoint, the growth after warm-up (the first checkpoint) per 1,000 messages, and how many messages were
answered, and the rate achieved (each send waits for the homeserver, so a slow one lowers it). Exits 1 when a
message went unanswered.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.agents_per_room import _Admin  # noqa: E402
from benchmarks.e2e_latency import _config, _drain, _free_port, _noop_plugin, _start_daemon, _wait_joined  # noqa: E402
from mindroom.testing.homeserver import APPSERVICE_ACCOUNT_PREFIX, TestHomeserver  # noqa: E402
from mindroom.testing.model_server import ScriptedModelServer, Text  # noqa: E402
from tests.integration.support import HumanClient  # noqa: E402

MESSAGES = int(os.environ.get("BENCH_SOAK_MESSAGES", "3000"))
RATE = float(os.environ.get("BENCH_SOAK_RATE", "15"))
CHECKPOINT = int(os.environ.get("BENCH_SOAK_CHECKPOINT", "500"))
MODES = tuple(mode.strip() for mode in os.environ.get("BENCH_SOAK_MODES", "sync,appservice").split(",") if mode)
DRAIN_S = 60.0
_GAUGES = ("mindroom_process_resident_memory_bytes", "mindroom_process_open_fds", "mindroom_asyncio_tasks")

Row = tuple[int, dict[str, float]]


@dataclass(frozen=True)
class Soaked:
    """One mode's run: the checkpoints (messages sent, gauges), messages sent and answered, sends per second."""

    rows: list[Row]
    sent: int
    answered: int
    rate: float


def _scrape(port: int, key: str) -> dict[str, float]:
    """The daemon's gauges, read from `/metrics` with its API key."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read().decode()
    values = {}
    for name in _GAUGES:
        match = re.search(rf"^{name} ([0-9.e+]+)$", text, re.MULTILINE)
        if match is None:
            raise RuntimeError(f"/metrics has no {name}")
        values[name] = float(match.group(1))
    return values


def _answered(human: HumanClient, sent: dict[str, str]) -> int:
    """How many of the messages `sent` (event id -> the agent that answers it) have their answer in the thread."""
    answers = set()
    for event in human.events:
        relation = event.get("content", {}).get("m.relates_to", {})
        if isinstance(relation, dict) and relation.get("rel_type") == "m.thread":
            answers.add((relation.get("event_id"), event.get("sender")))
    return sum(1 for event_id, agent in sent.items() if (event_id, agent) in answers)


async def soak(
    hs: TestHomeserver, model: ScriptedModelServer, human: HumanClient, root: Path, mode: str, admin: _Admin
) -> Soaked:
    """One daemon, delivered to by `mode`, under the steady stream."""
    tag = secrets.token_hex(3)
    workdir = root / f"soak{mode}{tag}"
    _noop_plugin(workdir / "plugins" / "noop")
    agents = {"alpha": f"soak{tag}a", "beta": f"soak{tag}b"}
    (workdir / "config.yaml").write_text(yaml.safe_dump(_config(model.base_url, human.user_id, agents)))
    port, key = _free_port(), secrets.token_urlsafe(32)
    env = {"MINDROOM_API": "true", "MINDROOM_API_PORT": str(port), "MINDROOM_API_KEY": key}
    if mode == "appservice":
        registration = hs.appservice_registration
        assert registration is not None
        env["MATRIX_APPSERVICE_REGISTRATION"] = str(registration)
        prefix = f"{APPSERVICE_ACCOUNT_PREFIX}{tag}_"
    else:
        prefix = f"s{tag}_"
    process, _ = _start_daemon(workdir, hs, prefix, env)
    _drain(process)
    rows: list[Row] = []
    sent: dict[str, str] = {}
    try:
        rooms = {}
        for agent, room_key in agents.items():
            rooms[agent] = (await human.client.room_resolve_alias(f"#{room_key}:{hs.server_name}")).room_id
            await _wait_joined(human, rooms[agent])
        rows.append((0, await asyncio.to_thread(_scrape, port, key)))
        print(f"{mode}: {_row(*rows[-1])}", flush=True)
        start = time.monotonic()
        for index in range(MESSAGES):
            agent = "alpha" if index % 2 == 0 else "beta"
            sent[await human.send(rooms[agent], f"soak {index}")] = f"@{prefix}{agent}:{hs.server_name}"
            await asyncio.sleep(max(0.0, start + (index + 1) / RATE - time.monotonic()))
            if (index + 1) % CHECKPOINT == 0:
                rows.append((index + 1, await asyncio.to_thread(_scrape, port, key)))
                print(f"{mode}: {_row(*rows[-1])}", flush=True)
        sending_s = time.monotonic() - start
        deadline = time.monotonic() + DRAIN_S
        while time.monotonic() < deadline and _answered(human, sent) < len(sent):
            await asyncio.sleep(1)
    finally:
        process.terminate()
        process.wait(30)
        if mode == "appservice":  # its bots' devices would otherwise ride along in every later transaction
            await admin.retire([f"@{prefix}{name}:{hs.server_name}" for name in [*agents, "router"]])
    return Soaked(rows, len(sent), _answered(human, sent), len(sent) / sending_s if sent else 0.0)


def _row(count: int, values: dict[str, float]) -> str:
    rss, fds, tasks = (values[name] for name in _GAUGES)
    return f"{count:>8} messages  RSS {rss / 2**20:7.1f} MB  fds {fds:5.0f}  tasks {tasks:5.0f}"


def _report(mode: str, soaked: Soaked) -> None:
    rows = soaked.rows
    print(f"{mode}: sent {soaked.sent} at {RATE:g}/s (achieved {soaked.rate:.1f}/s); answered {soaked.answered}")
    for row in rows:
        print(f"  {_row(*row)}")
    if len(rows) < 3:
        return
    (warm_count, warm), (last_count, last) = rows[1], rows[-1]
    per_thousand = 1000 / (last_count - warm_count)
    rss_growth = (last[_GAUGES[0]] - warm[_GAUGES[0]]) / 2**20 * per_thousand
    print(f"{mode}: after warm-up ({warm_count} messages), per 1,000 messages:")
    print(f"  RSS growth {rss_growth:+.2f} MB (target <= 5 MB)")
    print(f"  descriptors {last[_GAUGES[1]] - warm[_GAUGES[1]]:+.0f} over the run (target 0)")
    print(f"  tasks {last[_GAUGES[2]] - warm[_GAUGES[2]]:+.0f} over the run (target 0)")


async def main() -> int:
    unknown = set(MODES) - {"sync", "appservice"}
    if unknown or not MODES:
        print(f"BENCH_SOAK_MODES: choose from sync, appservice (not {sorted(unknown) or 'nothing'})", file=sys.stderr)
        return 2
    results: dict[str, Soaked] = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        TestHomeserver(appservice=True) as hs,
        ScriptedModelServer() as model,
    ):
        model.set_default(Text("pong"))
        user = hs.register_user(f"soak{secrets.token_hex(3)}", "soak-pass")
        human = HumanClient(hs.url, user.user_id, user.password)
        await human.start()
        admin = _Admin(hs)
        try:
            for mode in MODES:
                results[mode] = await soak(hs, model, human, Path(tmp), mode, admin)
        finally:
            await human.close()
    print(f"messages per mode: {MESSAGES}, checkpoint every {CHECKPOINT}")
    for mode, soaked in results.items():
        _report(mode, soaked)
    return 0 if all(soaked.answered == soaked.sent for soaked in results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
