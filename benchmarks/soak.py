"""Soak: thousands of messages at a steady rate; does memory, descriptors or the task count keep growing?

The daemon runs as a subprocess on a real Synapse with the scripted model (instant replies). A person
sends `BENCH_SOAK_MESSAGES` (default 3000) messages at `BENCH_SOAK_RATE` per second (default 15), each
in a new thread, over two rooms and two agents. Every 500 messages the daemon's metrics endpoint is read:
resident memory, open descriptors and event-loop tasks. Printed: one row per checkpoint, then the growth
after warm-up (the first checkpoint) per 1,000 messages, and how many messages were answered.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import socket
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.e2e_latency import _config, _drain, _noop_plugin, _start_daemon, _wait_joined  # noqa: E402
from mindroom.testing.homeserver import TestHomeserver  # noqa: E402
from mindroom.testing.model_server import ScriptedModelServer, Text  # noqa: E402
from tests.integration.support import HumanClient, thread_replies  # noqa: E402

MESSAGES = int(os.environ.get("BENCH_SOAK_MESSAGES", "3000"))
RATE = float(os.environ.get("BENCH_SOAK_RATE", "15"))
CHECKPOINT = 500
_GAUGES = ("mindroom_process_resident_memory_bytes", "mindroom_process_open_fds", "mindroom_asyncio_tasks")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _scrape(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    values = {}
    for name in _GAUGES:
        match = re.search(rf"^{name} ([0-9.e+]+)$", text, re.MULTILINE)
        values[name] = float(match.group(1)) if match else float("nan")
    return values


async def soak(hs: TestHomeserver, model: ScriptedModelServer, human: HumanClient, root: Path) -> None:
    tag = secrets.token_hex(3)
    workdir = root / f"soak{tag}"
    _noop_plugin(workdir / "plugins" / "noop")
    agents = {"alpha": f"soak{tag}a", "beta": f"soak{tag}b"}
    (workdir / "config.yaml").write_text(yaml.safe_dump(_config(model.base_url, human.user_id, agents)))
    port = _free_port()
    os.environ["MINDROOM_METRICS_PORT"] = str(port)
    process, _ = _start_daemon(workdir, hs, f"s{tag}_")
    _drain(process)
    rows: list[tuple[int, dict[str, float]]] = []
    sent: dict[str, str] = {}
    try:
        rooms = {}
        for agent, key in agents.items():
            rooms[agent] = (await human.client.room_resolve_alias(f"#{key}:{hs.server_name}")).room_id
            await _wait_joined(human, rooms[agent])
        rows.append((0, _scrape(port)))
        start = time.monotonic()
        for index in range(MESSAGES):
            agent = "alpha" if index % 2 == 0 else "beta"
            sent[await human.send(rooms[agent], f"soak {index}")] = f"@s{tag}_{agent}:{hs.server_name}"
            await asyncio.sleep(max(0.0, start + (index + 1) / RATE - time.monotonic()))
            if (index + 1) % CHECKPOINT == 0:
                rows.append((index + 1, await asyncio.to_thread(_scrape, port)))
                print(_row(*rows[-1]), flush=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if all(human.matching(thread_replies(eid, who)) for eid, who in sent.items()):
                break
            await asyncio.sleep(1)
    finally:
        process.terminate()
        process.wait(30)
    answered = sum(1 for eid, who in sent.items() if human.matching(thread_replies(eid, who)))
    _report(rows, answered)


def _row(count: int, values: dict[str, float]) -> str:
    rss, fds, tasks = (values[name] for name in _GAUGES)
    return f"{count:>8} messages  RSS {rss / 2**20:7.1f} MB  fds {fds:5.0f}  tasks {tasks:5.0f}"


def _report(rows: list[tuple[int, dict[str, float]]], answered: int) -> None:
    print(f"sent {MESSAGES} at {RATE:g}/s; answered {answered}")
    if len(rows) < 3:
        return
    (warm_count, warm), (last_count, last) = rows[1], rows[-1]
    per_thousand = 1000 / (last_count - warm_count)
    rss_growth = (last[_GAUGES[0]] - warm[_GAUGES[0]]) / 2**20 * per_thousand
    print(f"after warm-up ({warm_count} messages), per 1,000 messages:")
    print(f"  RSS growth {rss_growth:+.2f} MB (target <= 5 MB)")
    print(f"  descriptors {last[_GAUGES[1]] - warm[_GAUGES[1]]:+.0f} over the run (target 0)")
    print(f"  tasks {last[_GAUGES[2]] - warm[_GAUGES[2]]:+.0f} over the run (target 0)")


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp, TestHomeserver() as hs, ScriptedModelServer() as model:
        model.set_default(Text("pong"))
        user = hs.register_user(f"soak{secrets.token_hex(3)}", "soak-pass")
        human = HumanClient(hs.url, user.user_id, user.password)
        await human.start()
        try:
            await soak(hs, model, human, Path(tmp))
        finally:
            await human.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
