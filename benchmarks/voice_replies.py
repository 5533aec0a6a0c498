"""Voice replies' cost to a text message: `e2e_latency`'s one-agent turn without a speech service, and with
`voice.tts` and `voice.replies: true` set (the scripted server's `/audio/speech` answering), in turn, round after
round (`BENCH_ROUNDS`, 3 by default) on one homeserver, one scripted model and one human client.

Text messages only: a text turn never reaches the speech service, so the two should match. Prints each round,
the median per variant of p50, p95 and CPU per message with the ratio to the first, and the speech requests the
text turns made (0 expected).
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


def _variants(model: ScriptedModelServer) -> dict[str, dict[str, Any]]:
    speech = {"voice": {"tts": {"host": model.url, "model": "tts-x"}, "replies": True}}
    return {"no-speech": {}, "speech": {"sections": speech}}


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp, TestHomeserver() as hs, ScriptedModelServer() as model:
        model.set_default(Text("pong"))
        user = hs.register_user(f"bench{secrets.token_hex(3)}", "bench-pass")
        human = HumanClient(hs.url, user.user_id, user.password)
        await human.start()
        try:
            results = await alternating_rounds(hs, model, human, Path(tmp), _variants(model))
        finally:
            await human.close()
        speech_requests = len(model.speech.requests)
    print_medians(results)
    print(f"speech requests made by text turns: {speech_requests}")
    return 0 if speech_requests == 0 else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
