"""Voice replies' cost to a text message: `e2e_latency`'s one-agent turn without a speech service, and with
`voice.tts` and `voice.replies: true` set (the scripted server's `/audio/speech` answering), in turn, round after
round (`BENCH_ROUNDS`, 3 by default) on one homeserver, one scripted model and one human client.

Text messages only: a text turn never reaches the speech service, so the two should match. Prints each round,
the median per variant of p50, p95 and CPU per message with the ratio to the first, and the speech requests the
text turns made (0 expected).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from e2e_latency import MESSAGES, daemon_single  # noqa: E402

from mindroom.testing.homeserver import TestHomeserver  # noqa: E402
from mindroom.testing.model_server import ScriptedModelServer, Text  # noqa: E402
from tests.integration.support import HumanClient  # noqa: E402


def _variants(model: ScriptedModelServer) -> dict[str, dict[str, Any]]:
    return {"no-speech": {}, "speech": {"voice": {"tts": {"host": model.url, "model": "tts-x"}, "replies": True}}}


async def main() -> int:
    rounds = int(os.environ.get("BENCH_ROUNDS", "3"))
    with tempfile.TemporaryDirectory() as tmp, TestHomeserver() as hs, ScriptedModelServer() as model:
        variants = _variants(model)
        results: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
        model.set_default(Text("pong"))
        user = hs.register_user(f"bench{secrets.token_hex(3)}", "bench-pass")
        human = HumanClient(hs.url, user.user_id, user.password)
        await human.start()
        try:
            for index in range(rounds):
                for name, sections in variants.items():
                    result = await daemon_single(hs, model, human, Path(tmp), sections=sections)
                    results[name].append(result)
                    print(
                        f"round {index + 1} {name:<10} p50 {result['p50']:7.1f} ms  p95 {result['p95']:7.1f} ms  "
                        f"CPU {result['cpu_ms']:5.1f} ms/msg",
                        flush=True,
                    )
        finally:
            await human.close()
        speech_requests = len(model.speech.requests)
    print(f"messages per round: {MESSAGES}, rounds: {rounds}")
    medians = {
        name: {key: statistics.median(r[key] for r in runs) for key in ("p50", "p95", "cpu_ms")}
        for name, runs in results.items()
    }
    first = next(iter(medians))
    for name, m in medians.items():
        base = medians[first]
        print(
            f"{name:<10} median p50 {m['p50']:7.1f} ms ({_ratio(m['p50'], base['p50'])}x {first})  "
            f"p95 {m['p95']:7.1f} ms  CPU {m['cpu_ms']:5.1f} ms/msg ({_ratio(m['cpu_ms'], base['cpu_ms'])}x)"
        )
    print(f"speech requests made by text turns: {speech_requests}")
    return 0 if speech_requests == 0 else 1


def _ratio(value: float, base: float) -> str:
    # CPU time is counted in clock ticks: a tiny run can measure none for the baseline.
    return f"{value / base:.2f}" if base else "n/a "


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
