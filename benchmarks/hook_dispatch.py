"""Per-emit overhead of the hook host, per mode, against a plain loop awaiting the same callbacks.

Timeouts, isolation and telemetry are all on (they cannot be turned off) and logging is at INFO.
Prints microseconds per no-op hook per emit, for 1 and 20 hooks, and the ratio to the baseline;
then the wall time of a collector of 10 hooks that each sleep 100 ms. Exits 1 when a target is missed, except
in a smoke run (`BENCH_SMOKE=1`, tiny sizes from `BENCH_ROUNDS` and `BENCH_EMITS`), which only shows it runs.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mindroom.config.plugin import PluginEntryConfig
from mindroom.hooks import (
    EVENT_MESSAGE_BEFORE_RESPONSE,
    EVENT_MESSAGE_ENRICH,
    EVENT_MESSAGE_RECEIVED,
    EVENT_TOOL_BEFORE_CALL,
    HookRegistry,
    hook,
)
from mindroom.hooks.execution import emit, emit_collect, emit_gate, emit_transform
from mindroom.logging_config import configure_logging
from mindroom.testing.contexts import make_hook_context

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "7"))
EMITS = int(os.environ.get("BENCH_EMITS", "4000"))
SMOKE = bool(os.environ.get("BENCH_SMOKE"))


class _Plugin:
    def __init__(self, name: str, callbacks: list[Any]) -> None:
        self.name = name
        self.discovered_hooks = tuple(callbacks)
        self.entry_config = PluginEntryConfig(path=f"./plugins/{name}")
        self.plugin_order = 0


def _noop_hooks(event: str, count: int) -> list[Any]:
    callbacks = []
    for index in range(count):

        async def noop(ctx: Any) -> None:
            return None

        callbacks.append(hook(event, name=f"noop_{index}")(noop))
    return callbacks


async def _time(fn: Callable[[], Awaitable[Any]], emits: int) -> float:
    best = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(emits):
            await fn()
        best.append((time.perf_counter() - start) / emits)
    return statistics.median(best)


MODES = {
    "observer": (EVENT_MESSAGE_RECEIVED, "MessageReceivedContext", emit),
    "collector": (EVENT_MESSAGE_ENRICH, "MessageEnrichContext", emit_collect),
    "transformer": (EVENT_MESSAGE_BEFORE_RESPONSE, "BeforeResponseContext", emit_transform),
    "gate": (EVENT_TOOL_BEFORE_CALL, "ToolBeforeCallContext", emit_gate),
}
# Microseconds per hook: every mode at most 5 at 20 hooks; a lone collector hook may take 8.
TARGET_US = {"observer": 5.0, "collector": 5.0, "transformer": 5.0, "gate": 5.0}
TARGET_US_ONE_HOOK = {**TARGET_US, "collector": 8.0}


async def main() -> int:
    configure_logging("INFO", json=True)
    storage = Path("/tmp/mindroom-bench-data")
    print(
        f"{'mode':<12}{'hooks':>6}{'engine us/hook':>16}{'target us/hook':>16}  verdict"
        f"{'plain us/hook':>15}{'overhead us/hook':>18}{'engine/plain':>14}"
    )
    worst_ok = True
    for mode, (event, ctx_type, emitter) in MODES.items():
        for count in (1, 20):
            callbacks = _noop_hooks(event, count)
            registry = HookRegistry.from_plugins([_Plugin("bench", callbacks)])
            ctx = make_hook_context(ctx_type, storage_root=storage)

            async def engine(
                emitter: Any = emitter, registry: HookRegistry = registry, ctx: Any = ctx, event: str = event
            ) -> None:
                await emitter(registry, event, ctx)

            async def plain(callbacks: list[Any] = callbacks, ctx: Any = ctx) -> None:
                for callback in callbacks:
                    await callback(ctx)

            emits = max(min(200, EMITS), EMITS // count)
            t_engine = await _time(engine, emits)
            t_plain = await _time(plain, emits)
            per_hook = t_engine / count * 1e6
            plain_per_hook = t_plain / count * 1e6
            overhead = per_hook - plain_per_hook
            target = (TARGET_US_ONE_HOOK if count == 1 else TARGET_US)[mode]
            ok = per_hook <= target
            worst_ok &= ok
            print(
                f"{mode:<12}{count:>6}{per_hook:>16.2f}{target:>16.1f}  {'ok' if ok else 'MISS':<7}"
                f"{plain_per_hook:>15.2f}{overhead:>18.2f}{t_engine / t_plain:>14.1f}"
            )

    sleepers = []
    for index in range(10):

        async def sleeper(ctx: Any) -> None:
            await asyncio.sleep(0.1)

        sleepers.append(hook(EVENT_MESSAGE_ENRICH, name=f"sleep_{index}")(sleeper))
    registry = HookRegistry.from_plugins([_Plugin("sleepers", sleepers)])
    ctx = make_hook_context("MessageEnrichContext", storage_root=storage)
    walls = []
    for _ in range(5):
        start = time.perf_counter()
        await emit_collect(registry, EVENT_MESSAGE_ENRICH, ctx)
        walls.append((time.perf_counter() - start) * 1000)
    wall = statistics.median(walls)
    ok = wall <= 130
    worst_ok &= ok
    print(f"collector of 10 hooks sleeping 100 ms each: {wall:.1f} ms (target <= 130 ms)  {'ok' if ok else 'MISS'}")
    return 0 if worst_ok or SMOKE else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
