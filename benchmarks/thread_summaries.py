"""Thread summaries' cost to a message: `e2e_latency`'s one-agent turn without a summary model, with one whose
threshold no thread reaches, and with one summarizing every thread after its first answer, in turn, round
after round (`BENCH_ROUNDS`, 3 by default) on one homeserver, one scripted model and one human client.

Each message starts a thread, so with `thread_summary_first_threshold: 1` every answer is followed by a
summary (a model call and a notice). Prints each round and the median per variant of p50, p95 and CPU per
message (the daemon's whole CPU, the summaries' included), with the ratio to the first variant.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from e2e_latency import alternating_rounds, print_medians  # noqa: E402

from mindroom.testing.homeserver import TestHomeserver  # noqa: E402
from mindroom.testing.model_server import ScriptedModelServer, Text  # noqa: E402
from tests.integration.support import HumanClient  # noqa: E402

VARIANTS: dict[str, dict[str, Any]] = {
    "none": {},
    "unreached": {"thread_summary_model": "default", "thread_summary_first_threshold": 1000},
    "every": {"thread_summary_model": "default", "thread_summary_first_threshold": 1},
}


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp, TestHomeserver() as hs, ScriptedModelServer() as model:
        model.set_default(Text("pong"))
        user = hs.register_user(f"bench{secrets.token_hex(3)}", "bench-pass")
        human = HumanClient(hs.url, user.user_id, user.password)
        await human.start()
        try:
            variants = {name: {"defaults": defaults} for name, defaults in VARIANTS.items()}
            results = await alternating_rounds(hs, model, human, Path(tmp), variants)
        finally:
            await human.close()
    print_medians(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
