"""Thread summaries' cost to a message: `e2e_latency`'s one-agent turn without a summary model, with one whose
threshold no thread reaches, and with one summarizing every thread after its first answer, in turn, round
after round (`BENCH_ROUNDS`, 3 by default) on one homeserver, one scripted model and one human client.

Each message starts a thread, so with `thread_summary_first_threshold: 1` every answer is followed by a
summary (a model call and a notice). Prints each round and the median per variant of p50, p95 and CPU per
message (the daemon's whole CPU, the summaries' included), with the ratio to the first variant.
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

VARIANTS: dict[str, dict[str, Any]] = {
    "none": {},
    "unreached": {"thread_summary_model": "default", "thread_summary_first_threshold": 1000},
    "every": {"thread_summary_model": "default", "thread_summary_first_threshold": 1},
}


async def main() -> int:
    rounds = int(os.environ.get("BENCH_ROUNDS", "3"))
    results: dict[str, list[dict[str, float]]] = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory() as tmp, TestHomeserver() as hs, ScriptedModelServer() as model:
        model.set_default(Text("pong"))
        user = hs.register_user(f"bench{secrets.token_hex(3)}", "bench-pass")
        human = HumanClient(hs.url, user.user_id, user.password)
        await human.start()
        try:
            for index in range(rounds):
                for name, defaults in VARIANTS.items():
                    result = await daemon_single(hs, model, human, Path(tmp), defaults=defaults)
                    results[name].append(result)
                    print(
                        f"round {index + 1} {name:<10} p50 {result['p50']:7.1f} ms  p95 {result['p95']:7.1f} ms  "
                        f"CPU {result['cpu_ms']:5.1f} ms/msg",
                        flush=True,
                    )
        finally:
            await human.close()
    print(f"messages per round: {MESSAGES}, rounds: {rounds}")
    medians = {
        name: {key: statistics.median(r[key] for r in runs) for key in ("p50", "p95", "cpu_ms")}
        for name, runs in results.items()
    }
    base = medians["none"]
    for name, m in medians.items():
        print(
            f"{name:<10} median p50 {m['p50']:7.1f} ms ({_ratio(m['p50'], base['p50'])}x none)  "
            f"p95 {m['p95']:7.1f} ms  CPU {m['cpu_ms']:5.1f} ms/msg ({_ratio(m['cpu_ms'], base['cpu_ms'])}x)"
        )
    return 0


def _ratio(value: float, base: float) -> str:
    # CPU time is counted in clock ticks: a tiny run can measure none for the baseline.
    return f"{value / base:.2f}" if base else "n/a "


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
