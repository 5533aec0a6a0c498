"""What recording usage costs a message: the CPU of the turn's two calls (`turn_model` before the model runs,
`record_turn` after) plus the batched write of its record to SQLite, per message.

Three cases in one run, each over `BENCH_MESSAGES` messages (default 20000), `BENCH_ROUNDS` rounds (default
5, median): a model with no `pricing` and no `budgets` (what every agent pays), a priced model under a
budget, and the baseline a turn paid before (the model looked up by name, nothing recorded). Prints CPU
microseconds per message, the write included (it runs on the ledger's thread; process CPU counts it), and
the difference to the baseline. Run: `.venv/bin/python benchmarks/usage_recording.py`.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from mindroom.bots.usage.ledger import UsageLedger
from mindroom.bots.usage.turns import record_turn, turn_model
from mindroom.config.main import Config
from mindroom.hooks.context import MessageEnvelope
from mindroom.hooks.transport import ResponseUsage
from mindroom.state.sqlite.usage import SqliteUsageStore

MODEL = {"provider": "openai", "id": "m"}


def _config(priced: bool) -> Config:
    raw: dict[str, Any] = {
        "models": {"default": {**MODEL, **({"pricing": {"input": 3.0, "output": 15.0}} if priced else {})}},
        "agents": {"helper": {"display_name": "Helper"}},
    }
    if priced:
        raw["models"]["local"] = MODEL
        raw["budgets"] = {"monthly_limit_usd": 1e9, "fallback_model": "local"}
    return Config.model_validate(raw)


def _envelope(n: int) -> MessageEnvelope:
    return MessageEnvelope(
        source_event_id=f"$e{n}",
        room_id="!room:localhost",
        thread_id="$root",
        resolved_thread_id="$root",
        requester_id=f"@person{n % 50}:localhost",
        sender_id=f"@person{n % 50}:localhost",
        body="hi",
        attachment_ids=(),
        mentioned_agents=(),
        agent_name="helper",
        source_kind="message",
    )


async def _round(folder: Path, config: Config | None, messages: int) -> float:
    """CPU µs per message: the turn's calls, then every record written (as the ledger's task writes them)."""
    store = SqliteUsageStore(folder / f"usage-{time.monotonic_ns()}.db")
    ledger = UsageLedger(store, lambda: 90, flush_s=3600)
    await ledger.start()
    await asyncio.sleep(0)  # the writer's task starts waiting for its round
    envelopes = [_envelope(n) for n in range(messages)]
    usage = ResponseUsage(1200, 80, 300, "m")
    started = time.process_time()
    for n, envelope in enumerate(envelopes, 1):
        if config is None:  # the baseline: what a turn did before usage was recorded
            _BASE.models.get("default")
            continue
        name, _model, _ = turn_model(config, "default", envelope.requester_id, ledger)
        record_turn(ledger, config, "helper", envelope, name, usage, 1)
        if n % 200 == 0:  # the batch size at which the ledger writes without waiting for its round
            await ledger.flush()
    await ledger.flush()
    spent = time.process_time() - started
    await ledger.stop()
    store.close()
    return spent / messages * 1e6


_BASE = _config(priced=False)


async def main() -> None:
    """Print CPU per message for each case and the difference to the baseline."""
    messages = int(os.environ.get("BENCH_MESSAGES", "20000"))
    rounds = int(os.environ.get("BENCH_ROUNDS", "5"))
    cases = {"baseline (nothing recorded)": None, "unpriced, no budgets": _BASE, "priced, budgets": _config(True)}
    results: dict[str, list[float]] = {label: [] for label in cases}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(rounds):  # the cases alternate within each round, so drift hits them alike
            for label, config in cases.items():
                results[label].append(await _round(Path(folder), config, messages))
    base = statistics.median(results["baseline (nothing recorded)"])
    print(f"usage recording: {rounds} rounds of {messages} messages, median CPU per message, write included")
    for label in cases:
        value = statistics.median(results[label])
        print(f"{label:<30} {value:8.2f} µs   +{(value - base) / 1000:.4f} ms over the baseline")


if __name__ == "__main__":
    asyncio.run(main())
