"""Recovery after a homeserver outage: how soon the first answer comes once Synapse listens again.

A bare matrix-nio echo bot and the daemon (one agent, the router) run side by side against the same
real Synapse. Each round: both answer a warm-up message; the daemon gets messages whose answers are
still being generated (the scripted model takes 3 s for them); Synapse is stopped for OUTAGE_S seconds
and started again; the moment it answers HTTP again the human sends one message to each bot and times
the answer. At the end every message must have exactly one answer (nothing lost, nothing doubled).
Set BENCH_ROUNDS (default 3) and BENCH_OUTAGE_S (default 10).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from e2e_latency import _config, _drain, _noop_plugin, _start_daemon, _wait_joined  # noqa: E402

from mindroom.testing.homeserver import TestHomeserver  # noqa: E402
from mindroom.testing.model_server import Delay, ScriptedModelServer, Text  # noqa: E402
from tests.integration.support import HumanClient, thread_replies  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
OUTAGE_S = float(os.environ.get("BENCH_OUTAGE_S", "10"))
IN_FLIGHT = 3


async def _answered_after(human: HumanClient, room_id: str, responder: str, text: str, start: float) -> float:
    """Send `text` and poll the room's messages (not the human's sync, which has its own backoff) for the answer."""
    event_id = await human.send(room_id, text)
    answered = thread_replies(event_id, responder)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if any(answered(event) for event in await human.raw_timeline(room_id, limit=20)):
                return time.perf_counter() - start
        except Exception:  # the homeserver may still drop a connection from before the restart
            pass
        await asyncio.sleep(0.05)
    raise TimeoutError(text)


def _answered(human: HumanClient, sent: dict[str, str]) -> list[bool]:
    return [bool(human.matching(thread_replies(event_id, responder))) for event_id, responder in sent.items()]


def _mentions_in_flight(request: dict[str, object]) -> bool:
    messages = request.get("messages")
    return isinstance(messages, list) and bool(messages) and "in flight" in str(messages[-1])


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp, TestHomeserver() as hs, ScriptedModelServer() as model:
        model.set_default(Text("pong"))
        model.when(_mentions_in_flight, Delay(3.0, Text("answered across the outage")))
        tag = secrets.token_hex(3)
        user = hs.register_user(f"rec{tag}", "bench-pass")
        human = HumanClient(hs.url, user.user_id, user.password)
        await human.start()
        echo_user = hs.register_user(f"echo{tag}", "echo-pass")
        echo_room = (await human.client.room_create(name=f"echo{tag}", invite=[echo_user.user_id])).room_id
        echo = subprocess.Popen(
            [sys.executable, str(ROOT / "benchmarks" / "echo_bot.py"), hs.url, echo_user.user_id, echo_user.password],
            stdout=subprocess.PIPE,
        )
        workdir = Path(tmp) / "daemon"
        _noop_plugin(workdir / "plugins" / "noop")
        room_key = f"rec{tag}"
        (workdir / "config.yaml").write_text(yaml.safe_dump(_config(model.base_url, user.user_id, {"solo": room_key})))
        daemon, _ = _start_daemon(workdir, hs, f"r{tag}_")
        _drain(daemon)
        sent: dict[str, str] = {}
        echo_s: list[float] = []
        daemon_s: list[float] = []
        try:
            assert echo.stdout is not None
            echo.stdout.readline()
            await _wait_joined(human, echo_room)
            daemon_room = (await human.client.room_resolve_alias(f"#{room_key}:{hs.server_name}")).room_id
            await _wait_joined(human, daemon_room)
            responder = f"@r{tag}_solo:{hs.server_name}"
            for round_index in range(ROUNDS):
                await _answered_after(human, echo_room, echo_user.user_id, "warm", time.perf_counter())
                await _answered_after(human, daemon_room, responder, "warm", time.perf_counter())
                for index in range(IN_FLIGHT):
                    sent[await human.send(daemon_room, f"in flight {round_index}.{index}")] = responder
                await asyncio.sleep(0.5)  # the daemon has them and is generating
                await asyncio.to_thread(hs.stop)
                await asyncio.sleep(OUTAGE_S)
                await asyncio.to_thread(hs.start)
                back = time.perf_counter()
                echo_task = asyncio.create_task(
                    _answered_after(human, echo_room, echo_user.user_id, f"after {round_index}", back)
                )
                daemon_s.append(await _answered_after(human, daemon_room, responder, f"after {round_index}", back))
                echo_s.append(await echo_task)
                print(f"round {round_index + 1}: echo bot {echo_s[-1]:.2f} s, daemon {daemon_s[-1]:.2f} s", flush=True)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not all(
                human.matching(thread_replies(e, r)) for e, r in sent.items()
            ):
                await asyncio.sleep(0.5)
            await asyncio.sleep(3)
            counts = Counter(
                ev["content"]["m.relates_to"]["event_id"]
                for ev in human.events
                if ev.get("type") == "m.room.message"
                and ev.get("sender") == responder
                and ev["content"].get("m.relates_to", {}).get("rel_type") == "m.thread"
            )
        finally:
            await human.close()
            for process in (echo, daemon):
                process.terminate()
                process.wait(30)
    lost = sum(1 for event_id in sent if counts.get(event_id, 0) == 0)
    doubled = sum(1 for event_id in sent if counts.get(event_id, 0) > 1)
    print(f"outage {OUTAGE_S:.0f} s, {ROUNDS} rounds; first answer after Synapse listens again:")
    print(f"  echo bot: {', '.join(f'{s:.2f}' for s in echo_s)} s (max {max(echo_s):.2f})")
    print(f"  daemon:   {', '.join(f'{s:.2f}' for s in daemon_s)} s (max {max(daemon_s):.2f}, target <= 2)")
    print(f"answers in flight during the outages: {len(sent)} sent, {lost} lost, {doubled} doubled")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
