"""Fault matrix on a real Synapse: every hook mode x every fault kind, plus a homeserver outage and kill -9.

One daemon runs one agent per cell, each allowed only its cell's faulty plugin (per-agent plugin
allowlist), and a baseline agent with no plugins; one more row is a tool call that would burn minutes of
CPU (`round(1, -10**8)` to the calculator). Each cell gets a few messages in turn; the table
shows answers delivered, crashes (a bot's sync loop or the daemon died) and extra p50 latency against
the baseline. Then: Synapse stopped for 10 s with answers in flight, and a daemon subprocess killed
with SIGKILL mid-work and restarted. Target: every cell answered, 0 crashes, 0 lost, 0 doubled.
`FAULT_MESSAGES` (per cell, default 3), `FAULT_MODES` and `FAULT_KINDS` (comma-separated names, default all)
and `FAULT_OUTAGE_S` (default 10) set the size.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
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

from mindroom.config.environment import DaemonEnvironment, HomeserverSettings  # noqa: E402
from mindroom.daemon.orchestrator import Orchestrator  # noqa: E402
from mindroom.logging_config import configure_logging  # noqa: E402
from mindroom.testing.homeserver import TestHomeserver  # noqa: E402
from mindroom.testing.model_server import Delay, ScriptedModelServer, Text, ToolCall  # noqa: E402
from tests.integration.support import HumanClient, thread_replies  # noqa: E402

PER_CELL = int(os.environ.get("FAULT_MESSAGES", "3"))
MODES = {
    "observer": "message:received",
    "collector": "message:enrich",
    "transformer": "message:before_response",
    "gate": "tool:before_call",
}
FAULTS = {
    "raise": ("", "raise RuntimeError('injected fault')"),
    "timeout": ("timeout_ms=200, ", "await asyncio.sleep(5)"),
    "hang": (
        "timeout_ms=200, ",
        "while True:\n        try:\n            await asyncio.sleep(3600)\n        except asyncio.CancelledError:\n"
        "            pass",
    ),
    "sys.exit": ("", "sys.exit(1)"),
    "block 1s": ("", "time.sleep(1)"),
    "garbage": ("", "return object()"),
}
OUTAGE_S = float(os.environ.get("FAULT_OUTAGE_S", "10"))


def _chosen(table: dict[str, Any], variable: str) -> dict[str, Any]:
    """The entries of `table` that `variable` names (comma-separated; unset: all), or an error naming the rest."""
    names = [name.strip() for name in os.environ.get(variable, "").split(",") if name.strip()]
    unknown = [name for name in names if name not in table]
    if unknown:
        raise SystemExit(f"{variable}: unknown {', '.join(unknown)}; choose from {', '.join(table)}")
    return {name: table[name] for name in names} if names else table


MODES = _chosen(MODES, "FAULT_MODES")
FAULTS = _chosen(FAULTS, "FAULT_KINDS")


def _plugin(folder: Path, name: str, event: str, decorator_args: str, body: str) -> None:
    folder.mkdir(parents=True)
    (folder / "mindroom.plugin.json").write_text(json.dumps({"name": name, "hooks_module": "hooks.py"}))
    (folder / "hooks.py").write_text(
        "import asyncio, sys, time\nfrom mindroom.hooks import hook\n\n"
        f"@hook({event!r}, {decorator_args}name='fault')\nasync def fault(ctx):\n    {body}\n"
    )


def _model(base_url: str, model_id: str) -> dict[str, Any]:
    return {"provider": "openai", "id": model_id, "extra_kwargs": {"base_url": base_url, "max_retries": 0}}


async def _ask(human: HumanClient, room_id: str, responder: str, text: str, timeout: float = 20.0) -> float | None:
    start = time.perf_counter()
    event_id = await human.send(room_id, text)
    try:
        await human.wait_for(thread_replies(event_id, responder), timeout=timeout)
    except TimeoutError:
        return None
    return (time.perf_counter() - start) * 1000


async def _joined(human: HumanClient, room_id: str) -> None:
    for _ in range(300):
        if room_id in getattr(await human.client.joined_rooms(), "rooms", []):
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(room_id)


def _sync_alive(daemon: Orchestrator) -> bool:
    return daemon.running is not None and all(
        bot._sync_task is not None and not bot._sync_task.done() for bot in daemon.bots.values()
    )


async def matrix_run(hs: TestHomeserver, model: ScriptedModelServer, human: HumanClient, root: Path) -> list[str]:
    tag = secrets.token_hex(2)
    plugins, agents = [], {}
    cells = [(mode, fault) for mode in MODES for fault in FAULTS]
    for index, (mode, fault) in enumerate(cells):
        name = f"fault{index}"
        args, body = FAULTS[fault]
        _plugin(root / "plugins" / name, name, MODES[mode], args, body)
        plugins.append(f"plugins/{name}")
        agents[f"cell{index}"] = {
            "display_name": f"{mode} {fault}",
            "model": "tools" if mode == "gate" else "default",
            "tools": ["calculator"] if mode == "gate" else [],
            "plugins": [name],
            "rooms": [f"fm{tag}c{index}"],
        }
    agents["baseline"] = {"display_name": "Baseline", "model": "default", "plugins": [], "rooms": [f"fm{tag}base"]}
    # A tool call whose arguments would cost minutes of CPU (10**(10**8)): it must be refused, not stall the bots.
    agents["bomb"] = {
        "display_name": "Calculator bomb",
        "model": "bomb",
        "tools": ["calculator"],
        "plugins": [],
        "rooms": [f"fm{tag}bomb"],
    }
    config = {
        "models": {
            "default": _model(model.base_url, "plain"),
            "tools": _model(model.base_url, "tool-user"),
            "bomb": _model(model.base_url, "bomb"),
        },
        "agents": agents,
        "router": {"model": "default", "plugins": []},
        "authorization": {"global_users": [human.user_id]},
        "room_defaults": {"invite_users": [human.user_id]},
        "defaults": {"enable_streaming": False, "max_concurrent_turns_per_agent": 2},
        "plugins": plugins,
    }
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    model.set_default(Text("answer"), model="plain")
    model.set_default(ToolCall("calculate", {"expression": "6*7"}), model="tool-user")
    model.when(lambda r: r.get("model") == "tool-user" and r["messages"][-1].get("role") == "tool", Text("42"))
    model.set_default(ToolCall("calculate", {"expression": "round(1, -10**8)"}), model="bomb")
    model.when(lambda r: r.get("model") == "bomb" and r["messages"][-1].get("role") == "tool", Text("refused"))
    homeserver = HomeserverSettings(hs.url, hs.server_name, hs.registration_shared_secret, f"fm{tag}_")
    daemon = Orchestrator(
        DaemonEnvironment((root / "config.yaml").resolve(), (root / "data").resolve(), {}, homeserver)
    )
    await daemon.start()
    running = daemon.running
    assert running is not None
    rows = []
    try:

        async def cell(agent: str) -> tuple[int, list[float]]:
            room_id = running.directory.room_ids[agents[agent]["rooms"][0]]
            await _joined(human, room_id)
            responder = running.directory.bot_user_ids[agent]
            latencies = [await _ask(human, room_id, responder, f"question {i}") for i in range(PER_CELL)]
            return sum(lat is not None for lat in latencies), [lat for lat in latencies if lat is not None]

        _, base = await cell("baseline")
        base_p50 = statistics.median(base)
        rows.append(f"{'mode':<12}{'fault':<10}{'answered':>10}{'crashes':>9}{'extra p50 ms':>14}")
        for index, (mode, fault) in enumerate(cells):
            answered, latencies = await cell(f"cell{index}")
            crashed = 0 if _sync_alive(daemon) else 1
            extra = statistics.median(latencies) - base_p50 if latencies else float("nan")
            rows.append(f"{mode:<12}{fault:<10}{answered:>7}/{PER_CELL:<2}{crashed:>9}{extra:>14.0f}")
        answered, latencies = await cell("bomb")
        crashed = 0 if _sync_alive(daemon) else 1
        extra = statistics.median(latencies) - base_p50 if latencies else float("nan")
        rows.append(f"{'tool call':<12}{'calc bomb':<10}{answered:>7}/{PER_CELL:<2}{crashed:>9}{extra:>14.0f}")
        rows.append(f"(baseline p50 {base_p50:.0f} ms; daemon alive at the end: {_sync_alive(daemon)})")
    finally:
        await daemon.stop()
    return rows


async def outage_run(hs: TestHomeserver, model: ScriptedModelServer, human: HumanClient, root: Path) -> str:
    tag = secrets.token_hex(2)
    room = f"out{tag}"
    config = {
        "models": {"default": _model(model.base_url, "slow")},
        "agents": {"solo": {"display_name": "Solo", "model": "default", "rooms": [room]}},
        "authorization": {"global_users": [human.user_id]},
        "room_defaults": {"invite_users": [human.user_id]},
        "defaults": {"enable_streaming": False},
    }
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    model.set_default(Delay(2.0, Text("answered through the outage")), model="slow")
    homeserver = HomeserverSettings(hs.url, hs.server_name, hs.registration_shared_secret, f"out{tag}_")
    daemon = Orchestrator(
        DaemonEnvironment((root / "config.yaml").resolve(), (root / "data").resolve(), {}, homeserver)
    )
    await daemon.start()
    assert daemon.running is not None
    room_id = daemon.running.directory.room_ids[room]
    responder = daemon.running.directory.bot_user_ids["solo"]
    await _joined(human, room_id)
    sent = [await human.send(room_id, f"before outage {i}") for i in range(5)]
    await asyncio.to_thread(hs.stop)
    await asyncio.sleep(OUTAGE_S)
    await asyncio.to_thread(hs.start)
    sent += [await human.send(room_id, f"after outage {i}") for i in range(5)]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not all(human.matching(thread_replies(e, responder)) for e in sent):
        await asyncio.sleep(0.5)
    await asyncio.sleep(3)
    counts = [len(human.matching(thread_replies(e, responder))) for e in sent]
    await daemon.stop()
    return (
        f"outage (Synapse down {OUTAGE_S:g} s, answers in flight): sent {len(sent)}, "
        f"answered {sum(c >= 1 for c in counts)}, lost {sum(c == 0 for c in counts)}, "
        f"doubled {sum(c > 1 for c in counts)}"
    )


async def kill9_run(hs: TestHomeserver, model: ScriptedModelServer, human: HumanClient, root: Path) -> str:
    tag = secrets.token_hex(2)
    room = f"k9{tag}"
    config = {
        "models": {"default": _model(model.base_url, "k9")},
        "agents": {"solo": {"display_name": "Solo", "model": "default", "rooms": [room]}},
        "authorization": {"global_users": [human.user_id]},
        "room_defaults": {"invite_users": [human.user_id]},
        "defaults": {"enable_streaming": False, "max_concurrent_turns_per_agent": 2},
    }
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    model.set_default(Delay(1.0, Text("answered")), model="k9")
    env = dict(os.environ)
    env.update(
        MATRIX_HOMESERVER=hs.url,
        MATRIX_SERVER_NAME=hs.server_name,
        MATRIX_REGISTRATION_SHARED_SECRET=hs.registration_shared_secret,
        MINDROOM_STORAGE_PATH=str(root / "data"),
        MINDROOM_ACCOUNT_PREFIX=f"k9{tag}_",
    )
    log = root / "daemon.log"

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-m", "mindroom", "run", "--config", str(root / "config.yaml"), "--json-logs"],
            stdout=subprocess.DEVNULL,
            stderr=log.open("ab"),
            env=env,
            cwd=root,
        )

    async def ready(count: int) -> None:
        while not (log.exists() and log.read_text().count("daemon ready") >= count):
            await asyncio.sleep(0.1)

    process = start()
    await asyncio.wait_for(ready(1), 60)
    resolved = await human.client.room_resolve_alias(f"#{room}:{hs.server_name}")
    room_id = resolved.room_id
    await _joined(human, room_id)
    responder = f"@k9{tag}_solo:{hs.server_name}"
    sent = [await human.send(room_id, f"message {i}") for i in range(8)]
    await asyncio.sleep(2.5)
    process.send_signal(signal.SIGKILL)
    process.wait(10)
    process = start()
    await asyncio.wait_for(ready(2), 60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(human.matching(thread_replies(e, responder)) for e in sent):
        await asyncio.sleep(0.5)
    await asyncio.sleep(3)
    process.terminate()
    process.wait(30)
    counts = Counter(len(human.matching(thread_replies(e, responder))) for e in sent)
    return (
        f"kill -9 mid-work, then restart: sent {len(sent)}, answered {len(sent) - counts[0]}, lost {counts[0]}, "
        f"doubled {sum(v for k, v in counts.items() if k > 1)}"
    )


async def main() -> int:
    configure_logging("ERROR")
    with tempfile.TemporaryDirectory() as tmp, TestHomeserver() as hs, ScriptedModelServer() as model:
        user = hs.register_user(f"fault{secrets.token_hex(3)}", "fault-pass")
        human = HumanClient(hs.url, user.user_id, user.password)
        await human.start()
        try:
            for directory in ("matrix", "outage", "kill9"):
                (Path(tmp) / directory).mkdir()
            rows = await matrix_run(hs, model, human, Path(tmp) / "matrix")
            outage = await outage_run(hs, model, human, Path(tmp) / "outage")
            kill9 = await kill9_run(hs, model, human, Path(tmp) / "kill9")
        finally:
            await human.close()
    print("\n".join(rows))
    print(outage)
    print(kill9)
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
