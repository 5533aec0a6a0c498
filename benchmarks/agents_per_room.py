"""Many agents in one room: what each message costs as the room fills, each bot syncing vs appservice delivery.

For 1, 5 and 20 agents in one room (`BENCH_AGENTS`, default "1,5,20"), each message mentions the first agent
so only it answers. Each size runs twice in the same run against the same Synapse: the daemon with every bot
long-polling its own sync, then the daemon registered as an application service (Synapse pushes each event
once). Prints p50 and p95 from message to answer, the daemon's and Synapse's CPU time per message, and the
daemon's RSS and cold start. Reuses the subprocess harness of `e2e_latency.py`.

After each appservice run its bots are deactivated: the homeserver puts the one-time key count of every device
in the service's namespace in each transaction, and a daemon's own namespace holds only its own bots.
`BENCH_ROUNDS` (default 1) repeats everything, alternating, and prints the medians (the machine drifts).
With `BENCH_BEFORE=/path/to/older/checkout` each size also runs that tree's daemon (syncing), as `before`.
With `BENCH_ROUTED=1` each size and mode also runs with messages that mention nobody, so that the router
chooses (the scripted model names `agent0`). With `BENCH_SPREAD=1` it then starts 100 agents in 10 rooms
(`BENCH_SPREAD_AGENTS`, `BENCH_SPREAD_ROOMS`) in each mode and has the first agent of every room answer once:
cold start, RSS, and each room's latency.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import aiohttp
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.e2e_latency import (  # noqa: E402
    _config,
    _drain,
    _noop_plugin,
    _pct,
    _proc_cpu_s,
    _proc_rss_mb,
    _start_daemon,
    _wait_joined,
    _wait_member,
)
from mindroom.testing.homeserver import APPSERVICE_ACCOUNT_PREFIX, TestHomeserver  # noqa: E402
from mindroom.testing.model_server import ScriptedModelServer, Text  # noqa: E402
from tests.integration.support import HumanClient, thread_replies  # noqa: E402

MESSAGES = int(os.environ.get("BENCH_MESSAGES", "30"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "1"))
SIZES = [int(size) for size in os.environ.get("BENCH_AGENTS", "1,5,20").split(",")]
BEFORE = str(Path(os.environ["BENCH_BEFORE"]).resolve()) if os.environ.get("BENCH_BEFORE") else None
"""Another source tree (an older checkout) whose daemon also runs each size, syncing, as `before`."""
MODES = ("sync", "appservice", *(("before",) if BEFORE else ()))
SPREAD = bool(os.environ.get("BENCH_SPREAD"))
ROUTED = bool(os.environ.get("BENCH_ROUTED"))


async def _mention_latencies(
    human: HumanClient, room_id: str, agent: str, count: int, *, routed: bool = False
) -> list[float]:
    """Time to `agent`'s answer; `routed`: the message mentions nobody and the router picks the agent."""
    samples = []
    for index in range(count):
        start = time.perf_counter()
        if routed:
            event_id = await human.send(room_id, f"ping {index}")
        else:
            event_id = await human.send(room_id, f"{agent} ping {index}", mentions=[agent])
        await human.wait_for(thread_replies(event_id, agent), timeout=60)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


class _Admin:
    """A homeserver administrator that retires a finished run's bots: deactivated, their devices are gone, so
    the transactions of later runs do not carry their one-time key counts (the homeserver puts every device
    of the service's namespace in each; a daemon's own namespace holds only its bots)."""

    def __init__(self, hs: TestHomeserver) -> None:
        self.hs = hs
        self.name = f"benchadmin{secrets.token_hex(3)}"
        hs.register_user(self.name, "bench-admin-pass", admin=True)
        self._token = ""

    async def retire(self, user_ids: list[str]) -> None:
        async with aiohttp.ClientSession() as http:
            if not self._token:
                login = {"type": "m.login.password", "identifier": {"type": "m.id.user", "user": self.name}}
                async with http.post(
                    f"{self.hs.url}/_matrix/client/v3/login", json={**login, "password": "bench-admin-pass"}
                ) as reply:
                    reply.raise_for_status()
                    self._token = (await reply.json())["access_token"]
            headers = {"Authorization": f"Bearer {self._token}"}
            for user_id in user_ids:
                url = f"{self.hs.url}/_synapse/admin/v1/deactivate/{quote(user_id)}"
                async with http.post(url, json={"erase": False}, headers=headers) as reply:
                    reply.raise_for_status()


async def _quiet(*pids: int, window_s: float = 1.0, limit_s: float = 60.0) -> None:
    """Wait until each process spends under 3% of a CPU for `window_s` (at most `limit_s`): a size's bots
    upload keys and back them up after starting, and that work is not what a message costs."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        before = [_proc_cpu_s(pid) for pid in pids]
        await asyncio.sleep(window_s)
        if all(_proc_cpu_s(pid) - start < 0.03 * window_s for pid, start in zip(pids, before, strict=True)):
            return


def _synapse_pid(hs: TestHomeserver) -> int:
    return int((hs.base_dir / "homeserver.pid").read_text().strip())


async def one_room(
    hs: TestHomeserver,
    model: ScriptedModelServer,
    human: HumanClient,
    root: Path,
    agents: int,
    mode: str,
    admin: _Admin,
    *,
    routed: bool = False,
) -> dict[str, float]:
    """A daemon with `agents` agents in one room, receiving by `mode`: latency, CPU per message, RSS.

    `routed`: messages mention nobody; with more than one agent the router asks the model, which names
    `agent0` (the scripted reply to every request), and `agent0` answers.
    """
    tag = secrets.token_hex(3)
    workdir = root / f"{mode}{agents}{tag}"
    _noop_plugin(workdir / "plugins" / "noop")
    room_key = f"crowd{tag}"
    names = {f"agent{index}": room_key for index in range(agents)}
    (workdir / "config.yaml").write_text(yaml.safe_dump(_config(model.base_url, human.user_id, names)))
    env = {"MINDROOM_API": "false"}
    if mode == "appservice":
        registration = hs.appservice_registration
        assert registration is not None
        env["MATRIX_APPSERVICE_REGISTRATION"] = str(registration)
        prefix = f"{APPSERVICE_ACCOUNT_PREFIX}{tag}_"
    else:
        prefix = f"s{tag}_"
        if mode == "before":
            env["PYTHONPATH"] = BEFORE or ""
    process, cold_start = _start_daemon(workdir, hs, prefix, env)
    _drain(process)
    try:
        room_id = (await human.client.room_resolve_alias(f"#{room_key}:{hs.server_name}")).room_id
        await _wait_joined(human, room_id)
        for name in names:
            await _wait_member(human, room_id, f"@{prefix}{name}:{hs.server_name}")
        responder = f"@{prefix}agent0:{hs.server_name}"
        await _mention_latencies(human, room_id, responder, 5, routed=routed)  # warm-up
        synapse = _synapse_pid(hs)
        await _quiet(process.pid, synapse)  # the start's and warm-up's key uploads and backups are over
        daemon_before, synapse_before = _proc_cpu_s(process.pid), _proc_cpu_s(synapse)
        samples = await _mention_latencies(human, room_id, responder, MESSAGES, routed=routed)
        daemon_ms = (_proc_cpu_s(process.pid) - daemon_before) / MESSAGES * 1000
        synapse_ms = (_proc_cpu_s(synapse) - synapse_before) / MESSAGES * 1000
        rss = _proc_rss_mb(process.pid)
    finally:
        process.terminate()
        process.wait(60)
        if mode == "appservice":
            await admin.retire([f"@{prefix}{name}:{hs.server_name}" for name in [*names, "router"]])
    return {
        "p50": _pct(samples, 0.5),
        "p95": _pct(samples, 0.95),
        "daemon_ms": daemon_ms,
        "synapse_ms": synapse_ms,
        "rss_mb": rss,
        "cold_start_s": cold_start,
    }


async def spread(
    hs: TestHomeserver, model: ScriptedModelServer, human: HumanClient, root: Path, mode: str, admin: _Admin
) -> dict[str, float]:
    """Many agents over several rooms: cold start to ready, RSS, and one answer in each room."""
    agents, rooms = int(os.environ.get("BENCH_SPREAD_AGENTS", "100")), int(os.environ.get("BENCH_SPREAD_ROOMS", "10"))
    tag = secrets.token_hex(3)
    workdir = root / f"spread{mode}{tag}"
    _noop_plugin(workdir / "plugins" / "noop")
    names = {f"agent{index}": f"spread{tag}{index % rooms}" for index in range(agents)}
    (workdir / "config.yaml").write_text(yaml.safe_dump(_config(model.base_url, human.user_id, names)))
    env = {"MINDROOM_API": "false"}
    prefix = f"{APPSERVICE_ACCOUNT_PREFIX}{tag}_" if mode == "appservice" else f"s{tag}_"
    if mode == "appservice":
        env["MATRIX_APPSERVICE_REGISTRATION"] = str(hs.appservice_registration)
    process, cold_start = _start_daemon(workdir, hs, prefix, env)
    _drain(process)
    try:
        samples = []
        for room in range(rooms):
            room_id = (await human.client.room_resolve_alias(f"#spread{tag}{room}:{hs.server_name}")).room_id
            await _wait_joined(human, room_id)
            responder = f"@{prefix}agent{room}:{hs.server_name}"
            await _wait_member(human, room_id, responder)
            samples += await _mention_latencies(human, room_id, responder, 1)
        rss = _proc_rss_mb(process.pid)
    finally:
        process.terminate()
        process.wait(120)
        if mode == "appservice":
            await admin.retire([f"@{prefix}{name}:{hs.server_name}" for name in [*names, "router"]])
    return {"cold_start_s": cold_start, "rss_mb": rss, "p50": _pct(samples, 0.5), "max": max(samples)}


async def main() -> int:
    results: dict[tuple[int, str], dict[str, float]] = {}
    routed: dict[tuple[int, str], dict[str, float]] = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        TestHomeserver(appservice=True) as hs,
        ScriptedModelServer() as model,
    ):
        model.set_default(Text("agent0"))  # the agents' answer, and the router's choice when it asks
        user = hs.register_user(f"bench{secrets.token_hex(3)}", "bench-pass")
        human = HumanClient(hs.url, user.user_id, user.password)
        await human.start()
        admin = _Admin(hs)
        rounds: dict[tuple[int, str, bool], list[dict[str, float]]] = {}
        try:
            for turn in range(ROUNDS):
                for index, agents in enumerate(SIZES):
                    # The order flips with each size and round: no mode always runs on a Synapse that worked longer.
                    for mode in MODES if (index + turn) % 2 == 0 else MODES[::-1]:
                        for chooses in (False, True) if ROUTED else (False,):
                            row = await one_room(hs, model, human, Path(tmp), agents, mode, admin, routed=chooses)
                            rounds.setdefault((agents, mode, chooses), []).append(row)
                            what = f"{agents} agents, {mode}{', routed' if chooses else ''}"
                            print(f"round {turn + 1}: {what}: {_brief(row)}", file=sys.stderr, flush=True)
            for (agents, mode, chooses), rows in rounds.items():
                (routed if chooses else results)[agents, mode] = {
                    key: statistics.median(row[key] for row in rows) for key in rows[0]
                }
            delivered = ("sync", "appservice") if SPREAD else ()
            spreads = {mode: await spread(hs, model, human, Path(tmp), mode, admin) for mode in delivered}
        finally:
            await human.close()
    for mode, row in spreads.items():
        print(
            f"spread, {mode}: cold start {row['cold_start_s']:.1f} s, RSS {row['rss_mb']:.0f} MB,"
            f" one answer per room p50 {row['p50']:.0f} ms, max {row['max']:.0f} ms"
        )
    print(
        f"messages per run: {MESSAGES}, each mentioning the first agent; one Synapse, one run;"
        f" rounds: {ROUNDS} (each figure the median of its rounds)"
    )
    header = f"{'agents':>6} {'delivery':<11}{'p50 ms':>9}{'p95 ms':>9}{'daemon CPU':>12}{'Synapse CPU':>13}"
    print(header + f"{'RSS MB':>9}{'cold s':>8}")
    print(f"{'':>6} {'':<11}{'':>9}{'':>9}{'ms/msg':>12}{'ms/msg':>13}")
    for (agents, mode), row in sorted(results.items()):
        print(
            f"{agents:>6} {mode:<11}{row['p50']:>9.1f}{row['p95']:>9.1f}{row['daemon_ms']:>12.2f}"
            f"{row['synapse_ms']:>13.2f}{row['rss_mb']:>9.0f}{row['cold_start_s']:>8.2f}"
        )
    _ratios(results, "")
    if routed:
        print("the router chooses (no mention; with one agent it answers without asking):")
        for (agents, mode), row in sorted(routed.items()):
            print(
                f"{agents:>6} {mode:<11}{row['p50']:>9.1f}{row['p95']:>9.1f}{row['daemon_ms']:>12.2f}"
                f"{row['synapse_ms']:>13.2f}{row['rss_mb']:>9.0f}{row['cold_start_s']:>8.2f}"
            )
        _ratios(routed, ", router chooses")
    return 0


def _brief(row: dict[str, float]) -> str:
    return f"p50 {row['p50']:.1f} ms, daemon {row['daemon_ms']:.2f} ms/msg, Synapse {row['synapse_ms']:.2f} ms/msg"


def _ratios(results: dict[tuple[int, str], dict[str, float]], label: str) -> None:
    smallest, largest = min(SIZES), max(SIZES)

    def times(mode: str, key: str) -> str:
        low = results[smallest, mode][key]  # a few messages may cost less CPU than the clock's tick
        return f"x{results[largest, mode][key] / low:.2f}" if low else "x-"

    for mode in MODES:
        print(
            f"{mode}{label}: {largest} vs {smallest} agents: daemon CPU {times(mode, 'daemon_ms')}"
            f" (target <= 1.3), p50 {times(mode, 'p50')} (target <= 1.2),"
            f" Synapse CPU {times(mode, 'synapse_ms')} (target <= 1.5)"
        )


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
