"""Answer latency in an encrypted room against a plain one, in the same run, for the daemon and a bare bot.

One daemon subprocess (one agent, the router, instant scripted replies) on a real Synapse, with two
managed rooms: `plain` and `vault` (`encrypted: true`); beside it the bare matrix-nio echo bot as an
encryption device, with a plain and an encrypted room of its own. The human is an encryption device
with its own store, as Element is. Messages alternate between the four rooms in blocks; the script
prints p50/p95 of message-to-answer time for each, the daemon/echo ratios, the difference encryption
makes for the daemon, and CPU time per message (from /proc, over each room's blocks only).
Set BENCH_MESSAGES (default 40 per room).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mindroom.testing.homeserver import TestHomeserver  # noqa: E402
from mindroom.testing.model_server import ScriptedModelServer, Text  # noqa: E402
from tests.integration.support import HumanClient, thread_replies  # noqa: E402

MESSAGES = int(os.environ.get("BENCH_MESSAGES", "40"))
BLOCK = 5
WARM_UP = 5


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _config(base_url: str, user: str, tag: str) -> dict[str, Any]:
    model = {"provider": "openai", "id": "bench", "extra_kwargs": {"base_url": base_url, "max_retries": 0}}
    rooms = [f"plain{tag}", f"vault{tag}"]
    return {
        "models": {"default": model},
        "agents": {"solo": {"display_name": "Solo", "role": "Benchmarks.", "model": "default", "rooms": rooms}},
        "router": {"model": "default"},
        "rooms": {rooms[0]: {"name": "Plain"}, rooms[1]: {"name": "Vault", "encrypted": True}},
        "authorization": {"global_users": [user], "room_permissions": {}, "default_room_access": False},
        "room_defaults": {"invite_users": [user]},
        "defaults": {"enable_streaming": False},
        "plugins": [],
    }


def _start_daemon(workdir: Path, hs: TestHomeserver, prefix: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.update(
        MATRIX_HOMESERVER=hs.url,
        MATRIX_SERVER_NAME=hs.server_name,
        MATRIX_REGISTRATION_SHARED_SECRET=hs.registration_shared_secret,
        MINDROOM_STORAGE_PATH=str(workdir / "data"),
        MINDROOM_ACCOUNT_PREFIX=prefix,
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "mindroom", "run", "--config", str(workdir / "config.yaml"), "--json-logs"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        env=env,
        cwd=workdir,
    )
    assert process.stderr is not None
    for raw in process.stderr:
        if b"daemon ready" in raw:
            threading.Thread(target=lambda: [None for _ in process.stderr or ()], daemon=True).start()
            return process
    raise RuntimeError("daemon exited before it was ready")


async def _one(human: HumanClient, room_id: str, responder: str, text: str) -> float:
    start = time.perf_counter()
    event_id = await human.send(room_id, text)
    await human.wait_for(thread_replies(event_id, responder), timeout=30)
    return (time.perf_counter() - start) * 1000


async def _echo_rooms(
    hs: TestHomeserver, human: HumanClient, tmp: Path, tag: str
) -> tuple[subprocess.Popen[bytes], str, dict[str, str]]:
    """The echo bot as an encryption device, with a plain and an encrypted room the human shares with it."""
    bot = hs.register_user(f"echo{tag}", "echo-pass")
    process = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "echo_bot.py"),
            hs.url,
            bot.user_id,
            bot.password,
            str(tmp / "echo"),
        ],
        stdout=subprocess.PIPE,
    )
    assert process.stdout is not None
    device_id = process.stdout.readline().decode().split()[-1]
    rooms = {
        "plain": await human.create_room([bot.user_id], encrypted=False),
        "encrypted": await human.create_room([bot.user_id], encrypted=True),
    }
    for room_id in rooms.values():
        await human.wait_for_member(room_id, bot.user_id)
    await human.wait_for_device(bot.user_id, device_id)
    return process, bot.user_id, rooms


async def main() -> int:
    tag = secrets.token_hex(3)
    with tempfile.TemporaryDirectory() as tmp, TestHomeserver() as hs, ScriptedModelServer() as model:
        model.set_default(Text("pong"))
        user = hs.register_user(f"bench{tag}", "bench-pass")
        human = HumanClient(hs.url, user.user_id, user.password, store_dir=Path(tmp) / "human")
        await human.start()
        workdir = Path(tmp) / "daemon"
        workdir.mkdir()
        (workdir / "config.yaml").write_text(yaml.safe_dump(_config(model.base_url, user.user_id, tag)))
        process = _start_daemon(workdir, hs, f"e{tag}_")
        responder = f"@e{tag}_solo:{hs.server_name}"
        echo, echo_user, echo_rooms = await _echo_rooms(hs, human, Path(tmp), tag)
        samples: dict[str, list[float]] = {}
        cpu_s: dict[str, float] = {}
        try:
            targets: dict[str, tuple[str, str, int]] = {}
            for kind, key in (("plain", f"plain{tag}"), ("encrypted", f"vault{tag}")):
                resolved = await human.client.room_resolve_alias(f"#{key}:{hs.server_name}")
                await human.wait_for_member(resolved.room_id, responder)
                targets[f"daemon {kind}"] = (resolved.room_id, responder, process.pid)
                targets[f"echo bot {kind}"] = (echo_rooms[kind], echo_user, echo.pid)
            samples = {name: [] for name in targets}
            cpu_s = dict.fromkeys(targets, 0.0)
            for name, (room_id, who, _) in targets.items():
                for index in range(WARM_UP):
                    await _one(human, room_id, who, f"warm-up {name} {index}")
            for block in range(0, MESSAGES, BLOCK):
                for name, (room_id, who, pid) in targets.items():
                    before = _cpu_s(pid)
                    for index in range(block, min(block + BLOCK, MESSAGES)):
                        samples[name].append(await _one(human, room_id, who, f"ping {name} {index}"))
                    await asyncio.sleep(0.3)  # the answer's own sync echo is part of the bot's cost
                    cpu_s[name] += _cpu_s(pid) - before
        finally:
            for proc in (process, echo):
                proc.terminate()
                proc.wait(30)
            await human.close()
    print(f"messages per room: {MESSAGES} (after {WARM_UP} warm-up each), one daemon with one agent, one echo bot")
    print(f"{'':<22}{'p50 ms':>10}{'p95 ms':>10}{'CPU ms/msg':>12}")
    for name, values in samples.items():
        cpu_ms = cpu_s[name] / len(values) * 1000
        print(f"{name:<22}{_pct(values, 0.5):>10.1f}{_pct(values, 0.95):>10.1f}{cpu_ms:>12.1f}")
    for kind in ("plain", "encrypted"):
        ratio = _pct(samples[f"daemon {kind}"], 0.5) / _pct(samples[f"echo bot {kind}"], 0.5)
        print(f"p50 ratio daemon / echo bot, {kind}: {ratio:.2f} (target <= 1.10)")
    extra = _pct(samples["daemon encrypted"], 0.5) - _pct(samples["daemon plain"], 0.5)
    extra_cpu = (cpu_s["daemon encrypted"] - cpu_s["daemon plain"]) / MESSAGES * 1000
    print(f"encryption adds {extra:.1f} ms at p50 and {extra_cpu:.1f} ms of daemon CPU per message")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
