"""Message-to-reply latency: a bare matrix-nio echo bot against the daemon, on a real Synapse.

Both run as subprocesses against the same test homeserver; the model is the scripted server with
instant replies. Prints p50/p95 for each, the ratio daemon/bare, the daemon's CPU time per message,
its RSS after the run and its cold start (process start to "daemon ready"). Then a burst: 200
messages over 4 rooms, first to one echo bot in all 4, then to the daemon (4 agents): messages per
second for each and their ratio; every message answered exactly once.

With `BENCH_VOICE=1` it runs the daemon a second time with voice replies configured (`voice.tts` at the scripted
server's speech endpoint, `voice.replies: true`) for the same text messages: its p50 and CPU beside (b), and the
speech requests those text turns made (0: a text turn never reaches the speech service). `voice_replies.py`
repeats that pair round after round.

With `BENCH_API=1` it also runs the HTTP app's pair in the same run: the daemon with `--no-api`, then with
the app on and a dashboard open (polling `/api/overview` every 2 s, as the page does): CPU per Matrix
message for each. Then a `/v1` completion through the official `openai` client against the same daemon and
the same scripted generation: its latency beside the Matrix turn's, and its CPU.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mindroom.testing.homeserver import TestHomeserver  # noqa: E402
from mindroom.testing.model_server import ScriptedModelServer, Text  # noqa: E402
from tests.integration.support import HumanClient, thread_replies  # noqa: E402

MESSAGES = int(os.environ.get("BENCH_MESSAGES", "60"))
BURST = int(os.environ.get("BENCH_BURST", "200"))
NOOP_EVENTS = ("message:received", "message:enrich", "message:before_response", "message:after_response")


def _noop_plugin(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "mindroom.plugin.json").write_text(json.dumps({"name": "noop", "hooks_module": "hooks.py"}))
    lines = ["from mindroom.hooks import hook", ""]
    for event in NOOP_EVENTS:
        for index in range(3):
            name = f"{event.split(':')[1]}_{index}"
            lines += [f"@hook({event!r}, name={name!r})", f"async def {name}(ctx):", "    return None", ""]
    (folder / "hooks.py").write_text("\n".join(lines))


def _proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def _proc_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _latencies(human: HumanClient, room_id: str, responder: str, count: int) -> list[float]:
    samples = []
    for index in range(count):
        start = time.perf_counter()
        event_id = await human.send(room_id, f"ping {index}")
        await human.wait_for(thread_replies(event_id, responder), timeout=30)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


async def _wait_joined(human: HumanClient, room_id: str) -> None:
    for _ in range(300):
        rooms = await human.client.joined_rooms()
        if room_id in getattr(rooms, "rooms", []):
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(room_id)


def _start_daemon(
    workdir: Path, hs: TestHomeserver, prefix: str, extra_env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], float]:
    env = dict(os.environ)
    env.update(extra_env or {"MINDROOM_API": "false"})
    env.update(
        MATRIX_HOMESERVER=hs.url,
        MATRIX_SERVER_NAME=hs.server_name,
        MATRIX_REGISTRATION_SHARED_SECRET=hs.registration_shared_secret,
        MINDROOM_STORAGE_PATH=str(workdir / "data"),
        MINDROOM_ACCOUNT_PREFIX=prefix,
    )
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "mindroom", "run", "--config", str(workdir / "config.yaml"), "--json-logs"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        env=env,
        cwd=workdir,
    )
    assert process.stderr is not None
    lines: list[bytes] = []
    for raw in process.stderr:
        if b"daemon ready" in raw:
            return process, time.perf_counter() - started
        lines = [*lines[-19:], raw]
    said = b"".join(lines).decode(errors="replace")
    raise RuntimeError(f"daemon exited ({process.wait()}) before it was ready; its last lines:\n{said}")


def _drain(process: subprocess.Popen[bytes]) -> None:
    import threading

    def pump() -> None:
        assert process.stderr is not None
        for _ in process.stderr:
            pass

    threading.Thread(target=pump, daemon=True).start()


def _config(base_url: str, user: str, agents: dict[str, str]) -> dict[str, Any]:
    model = {"provider": "openai", "id": "bench", "extra_kwargs": {"base_url": base_url, "max_retries": 0}}
    return {
        "models": {"default": model},
        "agents": {
            name: {"display_name": name.title(), "role": "Benchmarks.", "model": "default", "rooms": [room]}
            for name, room in agents.items()
        },
        "router": {"model": "default"},
        "authorization": {"global_users": [user], "room_permissions": {}, "default_room_access": False},
        "room_defaults": {"invite_users": [user]},
        "defaults": {"enable_streaming": False},
        "plugins": ["./plugins/noop"],
    }


def _start_echo(hs: TestHomeserver, bot: Any) -> subprocess.Popen[bytes]:
    """The echo bot as a subprocess, returned once it has synced."""
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "benchmarks" / "echo_bot.py"), hs.url, bot.user_id, bot.password],
        stdout=subprocess.PIPE,
    )
    assert process.stdout is not None
    process.stdout.readline()
    return process


async def bare_bot(hs: TestHomeserver, human: HumanClient) -> tuple[list[float], float]:
    """The echo bot's latencies, and its CPU time per message."""
    tag = secrets.token_hex(3)
    bot = hs.register_user(f"echo{tag}", "echo-pass")
    room = await human.client.room_create(name=f"echo{tag}", invite=[bot.user_id])
    process = _start_echo(hs, bot)
    try:
        await _wait_member(human, room.room_id, bot.user_id)
        await _latencies(human, room.room_id, bot.user_id, 5)  # warm-up
        cpu_before = _proc_cpu_s(process.pid)
        samples = await _latencies(human, room.room_id, bot.user_id, MESSAGES)
        return samples, (_proc_cpu_s(process.pid) - cpu_before) / MESSAGES * 1000
    finally:
        process.terminate()
        process.wait(10)


async def bare_burst(hs: TestHomeserver, human: HumanClient) -> dict[str, float]:
    """The same burst as `burst`, to one echo bot in 4 rooms: the floor for throughput."""
    tag = secrets.token_hex(3)
    bot = hs.register_user(f"echoburst{tag}", "echo-pass")
    rooms = [(await human.client.room_create(name=f"eb{tag}{i}", invite=[bot.user_id])).room_id for i in range(4)]
    process = _start_echo(hs, bot)
    try:
        for room_id in rooms:
            await _wait_member(human, room_id, bot.user_id)
        sent: list[str] = []
        start = time.perf_counter()
        for index in range(BURST):
            sent.append(await human.send(rooms[index % 4], f"burst {index}"))
        deadline = time.monotonic() + 60 + BURST * 0.5
        while time.monotonic() < deadline and not all(human.matching(thread_replies(e, bot.user_id)) for e in sent):
            await asyncio.sleep(0.1)
        elapsed = time.perf_counter() - start
    finally:
        process.terminate()
        process.wait(10)
    answered = sum(1 for e in sent if human.matching(thread_replies(e, bot.user_id)))
    return {"answered": answered, "seconds": round(elapsed, 1), "per_s": answered / elapsed}


async def _wait_member(human: HumanClient, room_id: str, user_id: str) -> None:
    for _ in range(200):
        members = await human.client.joined_members(room_id)
        if any(m.user_id == user_id for m in getattr(members, "members", [])):
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(room_id)


async def daemon_single(
    hs: TestHomeserver,
    model: ScriptedModelServer,
    human: HumanClient,
    root: Path,
    env: dict[str, str] | None = None,
    defaults: dict[str, Any] | None = None,
    sections: dict[str, Any] | None = None,
) -> dict[str, float]:
    """One agent with the no-op hooks: latencies, CPU per message, RSS, cold start; `env` adds to the daemon's,
    `defaults` to its config's `defaults:`, `sections` top-level sections (`voice:`) to its config."""
    tag = secrets.token_hex(3)
    workdir = root / f"single{tag}"
    _noop_plugin(workdir / "plugins" / "noop")
    room_key = f"lat{tag}"
    config = _config(model.base_url, human.user_id, {"solo": room_key})
    config["defaults"].update(defaults or {})
    config.update(sections or {})
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    process, cold_start = _start_daemon(workdir, hs, f"b{tag}_", {"MINDROOM_API": "false", **(env or {})})
    _drain(process)
    try:
        alias = f"#{room_key}:{hs.server_name}"
        resolved = await human.client.room_resolve_alias(alias)
        room_id = resolved.room_id
        await _wait_joined(human, room_id)
        responder = f"@b{tag}_solo:{hs.server_name}"
        await _latencies(human, room_id, responder, 5)  # warm-up
        cpu_before = _proc_cpu_s(process.pid)
        samples = await _latencies(human, room_id, responder, MESSAGES)
        cpu_ms = (_proc_cpu_s(process.pid) - cpu_before) / MESSAGES * 1000
        rss = _proc_rss_mb(process.pid)
    finally:
        process.terminate()
        code = process.wait(30)
    return {
        "p50": _pct(samples, 0.5),
        "p95": _pct(samples, 0.95),
        "cpu_ms": cpu_ms,
        "rss_mb": rss,
        "cold_start_s": cold_start,
        "exit_code": code,
    }


async def burst(hs: TestHomeserver, model: ScriptedModelServer, human: HumanClient, root: Path) -> dict[str, int]:
    tag = secrets.token_hex(3)
    workdir = root / f"burst{tag}"
    _noop_plugin(workdir / "plugins" / "noop")
    agents = {f"agent{i}": f"burst{tag}{i}" for i in range(4)}
    (workdir / "config.yaml").write_text(yaml.safe_dump(_config(model.base_url, human.user_id, agents)))
    process, _ = _start_daemon(workdir, hs, f"u{tag}_")
    _drain(process)
    try:
        rooms = {}
        for agent, key in agents.items():
            resolved = await human.client.room_resolve_alias(f"#{key}:{hs.server_name}")
            rooms[agent] = resolved.room_id
            await _wait_joined(human, resolved.room_id)
        sent: dict[str, str] = {}
        start = time.perf_counter()
        for index in range(BURST):
            agent = f"agent{index % 4}"
            sent[await human.send(rooms[agent], f"burst {index}")] = f"@u{tag}_{agent}:{hs.server_name}"
        deadline = time.monotonic() + 60 + BURST * 0.5
        while time.monotonic() < deadline:
            answered = {eid for eid in sent if human.matching(thread_replies(eid, sent[eid]))}
            if len(answered) == BURST:
                break
            await asyncio.sleep(0.1)
        elapsed = time.perf_counter() - start
        rss_after_burst = _proc_rss_mb(process.pid)
        await asyncio.sleep(3)
        counts = Counter(
            ev["content"]["m.relates_to"]["event_id"]
            for ev in human.events
            if ev.get("type") == "m.room.message"
            and ev.get("sender") in sent.values()
            and ev["content"].get("m.relates_to", {}).get("rel_type") == "m.thread"
        )
    finally:
        process.terminate()
        process.wait(30)
    return {
        "sent": BURST,
        "answered": sum(1 for eid in sent if counts.get(eid, 0) >= 1),
        "answered_twice": sum(1 for eid in sent if counts.get(eid, 0) > 1),
        "seconds": round(elapsed, 1),
        "rss_mb": round(rss_after_burst),
    }


API_KEY = "bench-dashboard-key"
V1_KEY = "bench-v1-key"


async def _dashboard(url: str, stop: asyncio.Event) -> int:
    """An open dashboard: one `/api/overview` every 2 s until `stop`; returns how many it read."""
    import httpx

    reads = 0
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {API_KEY}"}) as client:
        while not stop.is_set():
            (await client.get("/api/overview")).raise_for_status()
            reads += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 2.0)
    return reads


async def _api_daemon(
    hs: TestHomeserver, model: ScriptedModelServer, human: HumanClient, root: Path, *, api: bool
) -> dict[str, float]:
    """One daemon (the app on or off): Matrix latency and CPU per message; with the app, a dashboard polling
    meanwhile, then `/v1` completions of the same generation."""
    from openai import AsyncOpenAI

    tag = secrets.token_hex(3)
    workdir = root / f"api{tag}"
    _noop_plugin(workdir / "plugins" / "noop")
    room_key = f"api{tag}"
    (workdir / "config.yaml").write_text(yaml.safe_dump(_config(model.base_url, human.user_id, {"solo": room_key})))
    port = _free_port()
    env = {
        "MINDROOM_API_PORT": str(port),
        "MINDROOM_API_KEY": API_KEY,
        "OPENAI_COMPAT_API_KEYS": V1_KEY,
        "OPENAI_COMPAT_RATE_LIMIT": "100000",  # the benchmark sends completions back to back
    }
    process, _cold = _start_daemon(workdir, hs, f"p{tag}_", env if api else None)
    _drain(process)
    result: dict[str, float] = {}
    try:
        room_id = (await human.client.room_resolve_alias(f"#{room_key}:{hs.server_name}")).room_id
        await _wait_joined(human, room_id)
        responder = f"@p{tag}_solo:{hs.server_name}"
        await _latencies(human, room_id, responder, 5)  # warm-up
        stop = asyncio.Event()
        poller = asyncio.create_task(_dashboard(f"http://127.0.0.1:{port}", stop)) if api else None
        cpu_before = _proc_cpu_s(process.pid)
        samples = await _latencies(human, room_id, responder, MESSAGES)
        result["cpu_ms"] = (_proc_cpu_s(process.pid) - cpu_before) / MESSAGES * 1000
        stop.set()
        result["dashboard_reads"] = float(await poller) if poller is not None else 0.0
        result["matrix_p50"], result["matrix_p95"] = _pct(samples, 0.5), _pct(samples, 0.95)
        if api:
            client = AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=V1_KEY, max_retries=0)
            try:
                timings = []
                cpu_before = _proc_cpu_s(process.pid)
                for index in range(MESSAGES + 5):
                    started = time.perf_counter()
                    await client.chat.completions.create(
                        model="solo", messages=[{"role": "user", "content": f"ping {index}"}]
                    )
                    if index >= 5:  # the first five warm up
                        timings.append((time.perf_counter() - started) * 1000)
                    else:
                        cpu_before = _proc_cpu_s(process.pid)
                result["v1_cpu_ms"] = (_proc_cpu_s(process.pid) - cpu_before) / MESSAGES * 1000
                result["v1_p50"], result["v1_p95"] = _pct(timings, 0.5), _pct(timings, 0.95)
            finally:
                await client.close()
    finally:
        process.terminate()
        process.wait(30)
    return result


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def api_pair(hs: TestHomeserver, model: ScriptedModelServer, human: HumanClient, root: Path) -> None:
    """The HTTP app's cost, measured in one run: `--no-api` and the app with a dashboard open, alternating for
    `BENCH_API_ROUNDS` rounds (default 4), so a slower minute of the machine weighs on both alike."""
    rounds = int(os.environ.get("BENCH_API_ROUNDS", "4"))
    offs, ons = [], []
    for index in range(rounds):  # the order flips every round: neither side always runs on a busier homeserver
        for api in (False, True) if index % 2 == 0 else (True, False):
            (ons if api else offs).append(await _api_daemon(hs, model, human, root, api=api))

    def mean(results: list[dict[str, float]], key: str) -> float:
        return sum(result[key] for result in results) / len(results)

    off = {key: mean(offs, key) for key in offs[0]}
    on = {key: mean(ons, key) for key in ons[0]}
    print(f"API pair: {rounds} rounds of {MESSAGES} messages each, alternating; means")
    print(f"{'':<44}{'p50 ms':>10}{'p95 ms':>10}{'CPU ms/msg':>12}")
    print(f"{'Matrix message, --no-api':<44}{off['matrix_p50']:>10.1f}{off['matrix_p95']:>10.1f}{off['cpu_ms']:>12.2f}")
    label = f"Matrix message, API + dashboard ({on['dashboard_reads']:.0f} reads)"
    print(f"{label:<44}{on['matrix_p50']:>10.1f}{on['matrix_p95']:>10.1f}{on['cpu_ms']:>12.2f}")
    print(f"{'/v1 completion (openai client)':<44}{on['v1_p50']:>10.1f}{on['v1_p95']:>10.1f}{on['v1_cpu_ms']:>12.2f}")
    per_round = ", ".join(f"{b['cpu_ms'] - a['cpu_ms']:+.2f}" for a, b in zip(offs, ons, strict=True))
    print(
        f"CPU per Matrix message, API and dashboard on vs --no-api: {on['cpu_ms'] - off['cpu_ms']:+.2f} ms"
        f" (per round: {per_round})"
    )
    print(f"/v1 overhead over the same generation in a Matrix turn (p50): {on['v1_p50'] - on['matrix_p50']:+.1f} ms")


async def alternating_rounds(
    hs: TestHomeserver,
    model: ScriptedModelServer,
    human: HumanClient,
    workdir: Path,
    variants: dict[str, dict[str, Any]],
) -> dict[str, list[dict[str, float]]]:
    """`daemon_single` with each variant's keyword arguments in turn, round after round (`BENCH_ROUNDS`, 3 by
    default), printing each run; every variant's results."""
    rounds = int(os.environ.get("BENCH_ROUNDS", "3"))
    results: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    for index in range(rounds):
        for name, options in variants.items():
            result = await daemon_single(hs, model, human, workdir, **options)
            results[name].append(result)
            print(
                f"round {index + 1} {name:<10} p50 {result['p50']:7.1f} ms  p95 {result['p95']:7.1f} ms  "
                f"CPU {result['cpu_ms']:5.1f} ms/msg",
                flush=True,
            )
    print(f"messages per round: {MESSAGES}, rounds: {rounds}")
    return results


def print_medians(results: dict[str, list[dict[str, float]]]) -> None:
    """Each variant's median p50, p95 and CPU per message, with its ratios to the first variant's."""
    medians = {
        name: {key: statistics.median(r[key] for r in runs) for key in ("p50", "p95", "cpu_ms")}
        for name, runs in results.items()
    }
    first = next(iter(medians))
    base = medians[first]
    for name, m in medians.items():
        print(
            f"{name:<10} median p50 {m['p50']:7.1f} ms ({ratio(m['p50'], base['p50'])}x {first})  "
            f"p95 {m['p95']:7.1f} ms  CPU {m['cpu_ms']:5.1f} ms/msg ({ratio(m['cpu_ms'], base['cpu_ms'])}x)"
        )


def ratio(value: float, base: float) -> str:
    """`value / base` to two places; "n/a" when CPU time counted in clock ticks measured none for the base."""
    return f"{value / base:.2f}" if base else "n/a "


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp, TestHomeserver() as hs, ScriptedModelServer() as model:
        model.set_default(Text("pong"))
        user = hs.register_user(f"bench{secrets.token_hex(3)}", "bench-pass")
        human = HumanClient(hs.url, user.user_id, user.password)
        await human.start()
        try:
            if os.environ.get("BENCH_API"):
                await api_pair(hs, model, human, Path(tmp))
                if os.environ.get("BENCH_API_ONLY"):
                    return 0
            bare, bare_cpu_ms = await bare_bot(hs, human)
            daemon = await daemon_single(hs, model, human, Path(tmp))
            voice = None
            if os.environ.get("BENCH_VOICE"):
                speech = {"voice": {"tts": {"host": model.url, "model": "tts-x"}, "replies": True}}
                voice = await daemon_single(hs, model, human, Path(tmp), sections=speech)
            no_burst = bool(os.environ.get("BENCH_NO_BURST"))
            bare_burst_result = {"answered": 0, "seconds": 0, "per_s": 0.0} if no_burst else await bare_burst(hs, human)
            burst_result = (
                {"sent": 0, "answered": 0, "answered_twice": 0, "seconds": 0}
                if no_burst
                else await burst(hs, model, human, Path(tmp))
            )
        finally:
            await human.close()
    bare_p50, bare_p95 = _pct(bare, 0.5), _pct(bare, 0.95)
    ratio = daemon["p50"] / bare_p50
    print(f"messages per run: {MESSAGES}")
    print(f"{'':<28}{'p50 ms':>10}{'p95 ms':>10}")
    print(f"{'(a) bare matrix-nio echo bot':<28}{bare_p50:>10.1f}{bare_p95:>10.1f}")
    print(f"{'(b) daemon, 1 agent, 12 hooks':<28}{daemon['p50']:>10.1f}{daemon['p95']:>10.1f}")
    print(f"ratio b/a at p50: {ratio:.2f} (target <= 1.10)")
    print(f"CPU per message: daemon {daemon['cpu_ms']:.1f} ms (target <= 8), echo bot {bare_cpu_ms:.1f} ms")
    if voice is not None:
        print(f"{'(c) (b) with voice replies set':<28}{voice['p50']:>10.1f}{voice['p95']:>10.1f}")
        cpu_ratio = f"{voice['cpu_ms'] / daemon['cpu_ms']:.2f}x" if daemon["cpu_ms"] else "n/a"
        print(
            f"voice replies set, text messages: p50 {voice['p50'] / daemon['p50']:.2f}x (b), CPU {voice['cpu_ms']:.1f}"
            f" ms/msg ({cpu_ratio} (b)), speech requests {len(model.speech.requests)} (0 expected)"
        )
    print(f"daemon RSS after run: {daemon['rss_mb']:.0f} MB")
    print(f"cold start to ready: {daemon['cold_start_s']:.2f} s (target <= 1.5)")
    print(f"daemon exit code on SIGTERM: {daemon['exit_code']}")
    print(
        f"burst: {burst_result['sent']} sent over 4 rooms / 4 agents, {burst_result['answered']} answered, "
        f"{burst_result['answered_twice']} answered twice, in {burst_result['seconds']} s, "
        f"daemon RSS after the burst {burst_result.get('rss_mb', 0)} MB (target <= 120)"
    )
    daemon_per_s = burst_result["answered"] / burst_result["seconds"] if burst_result["seconds"] else 0.0
    print(
        f"burst throughput: echo bot {bare_burst_result['per_s']:.1f} msg/s "
        f"({bare_burst_result['answered']} in {bare_burst_result['seconds']} s), daemon {daemon_per_s:.1f} msg/s, "
        f"ratio {daemon_per_s / bare_burst_result['per_s'] if bare_burst_result['per_s'] else 0:.2f} (target >= 0.8)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
