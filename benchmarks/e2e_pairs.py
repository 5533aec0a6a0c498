"""Same-run pairs of `e2e_latency`'s one-agent turn: the daemon from other source trees beside this one.

`BENCH_VARIANTS="before=/path/to/older/checkout,after=."` runs the one-agent daemon of each tree in turn, round
after round (`BENCH_ROUNDS`, 3 by default), on one homeserver, one scripted model and one human client, so each
pair shares the machine's state of the moment. The trees are put first on the daemon's `PYTHONPATH`. Prints each
round and, per variant, the median over rounds of p50, p95 and CPU per message, and each variant's ratio to the
first one.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from e2e_latency import MESSAGES, daemon_single, ratio  # noqa: E402

from mindroom.testing.homeserver import TestHomeserver  # noqa: E402
from mindroom.testing.model_server import ScriptedModelServer, Text  # noqa: E402
from tests.integration.support import HumanClient  # noqa: E402


def _variants() -> list[tuple[str, Path]]:
    spec = os.environ.get("BENCH_VARIANTS", f"this={ROOT}")
    pairs = [item.split("=", 1) for item in spec.split(",") if item.strip()]
    return [(name.strip(), Path(path).resolve()) for name, path in pairs]


async def main() -> int:
    variants = _variants()
    rounds = int(os.environ.get("BENCH_ROUNDS", "3"))
    results: dict[str, list[dict[str, float]]] = {name: [] for name, _ in variants}
    with tempfile.TemporaryDirectory() as tmp, TestHomeserver() as hs, ScriptedModelServer() as model:
        model.set_default(Text("pong"))
        user = hs.register_user(f"bench{secrets.token_hex(3)}", "bench-pass")
        human = HumanClient(hs.url, user.user_id, user.password)
        await human.start()
        try:
            for index in range(rounds):
                for name, tree in variants:
                    result = await daemon_single(hs, model, human, Path(tmp), {"PYTHONPATH": str(tree)})
                    results[name].append(result)
                    print(
                        f"round {index + 1} {name:<10} p50 {result['p50']:7.1f} ms  p95 {result['p95']:7.1f} ms  "
                        f"CPU {result['cpu_ms']:5.1f} ms/msg  RSS {result['rss_mb']:4.0f} MB",
                        flush=True,
                    )
        finally:
            await human.close()
    print(f"messages per round: {MESSAGES}, rounds: {rounds}")
    first = variants[0][0]
    medians = {
        name: {key: statistics.median(r[key] for r in runs) for key in ("p50", "p95", "cpu_ms", "rss_mb")}
        for name, runs in results.items()
    }
    for name, _ in variants:
        m, base = medians[name], medians[first]
        print(
            f"{name:<10} median p50 {m['p50']:7.1f} ms ({ratio(m['p50'], base['p50'])}x {first})  "
            f"p95 {m['p95']:7.1f} ms  CPU {m['cpu_ms']:5.1f} ms/msg ({ratio(m['cpu_ms'], base['cpu_ms'])}x)  "
            f"RSS {m['rss_mb']:4.0f} MB"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
