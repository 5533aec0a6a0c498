"""What model-call hooks cost per round-trip, as ratios against a baseline measured in the same run.

One round-trip is one `ainvoke` of a model the daemon builds (the class `mindroom.ai.models.build_model` makes),
with a request the size of a real turn's: a system prompt, 20 messages of history, 10 tool schemas. The provider
answers at once (a canned reply), so the figures are the host's own cost, not the network's:

- `seam, no hooks`: the turn has no model-call hook; against the provider call the class made before the seam
  existed (its retrying call). This is what every agent without such plugins pays: one context-variable lookup.
- `no-op gate`, `no-op gate + observer`, `rewriting gate`: the turn's hooks run; against the same baseline.

Then one real round-trip to the scripted OpenAI-compatible server on loopback (agno's OpenAI client, HTTP),
without and with the rewriting gate, for scale. Baseline and measured alternate round by round; the ratio is the
median of the rounds' ratios. Prints microseconds and ratios; exits 1 when the seam without hooks costs more than
5 % (a smoke run, `BENCH_SMOKE=1`, only shows it runs).
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

from agno.models.base import Model
from agno.models.message import Message
from agno.models.response import ModelResponse

from mindroom.ai.failures import reporting_class
from mindroom.ai.model_hooks import model_hooks_for_turn
from mindroom.ai.models import build_model
from mindroom.config.main import ModelConfig
from mindroom.config.plugin import PluginEntryConfig
from mindroom.hooks import EVENT_MODEL_AFTER_CALL, EVENT_MODEL_BEFORE_CALL, HookRegistry, hook
from mindroom.logging_config import configure_logging
from mindroom.testing.model_server import ScriptedModelServer, Text
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "7"))
CALLS = int(os.environ.get("BENCH_CALLS", "2000"))
HTTP_CALLS = int(os.environ.get("BENCH_HTTP_CALLS", "200"))
SMOKE = bool(os.environ.get("BENCH_SMOKE"))
SEAM_TARGET = 1.05


class _Canned(Model):
    """A provider that answers every request at once."""

    def invoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return ModelResponse(role="assistant", content="ok")

    async def ainvoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return ModelResponse(role="assistant", content="ok")

    def invoke_stream(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def ainvoke_stream(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return ModelResponse()

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return ModelResponse()


class _Plugin:
    def __init__(self, callbacks: list[Any]) -> None:
        self.name = "bench"
        self.discovered_hooks = tuple(callbacks)
        self.entry_config = PluginEntryConfig(path="./plugins/bench")
        self.plugin_order = 0


def _request() -> dict[str, Any]:
    text = "A sentence of an ordinary conversation, long enough to be typical. " * 6
    messages = [Message(role="system", content="You are a helpful assistant. " * 20)]
    messages += [Message(role="user" if i % 2 == 0 else "assistant", content=text) for i in range(20)]
    tools = [
        {
            "type": "function",
            "function": {
                "name": f"tool_{i}",
                "description": "Does one thing well.",
                "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
            },
        }
        for i in range(10)
    ]
    return {"messages": messages, "assistant_message": Message(role="assistant"), "tools": tools, "tool_choice": None}


def _noop(event: str, name: str) -> Any:
    async def noop(ctx: Any) -> None:
        return None

    return hook(event, name=name)(noop)


async def _rewrite(ctx: Any) -> None:
    ctx.messages.append({"role": "user", "content": "Answer briefly."})


HOOKS: dict[str, list[Any]] = {
    "no-op gate": [_noop(EVENT_MODEL_BEFORE_CALL, "gate")],
    "no-op gate + observer": [_noop(EVENT_MODEL_BEFORE_CALL, "gate"), _noop(EVENT_MODEL_AFTER_CALL, "watch")],
    "rewriting gate": [hook(EVENT_MODEL_BEFORE_CALL, name="rewrite")(_rewrite)],
}


async def _block(call: Callable[[], Awaitable[Any]], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        await call()
    return (time.perf_counter() - start) / calls


async def _paired(
    baseline: Callable[[], Awaitable[Any]], measured: Callable[[], Awaitable[Any]], calls: int, hooks: HookRegistry
) -> tuple[float, float, float]:
    """Seconds per call of each (medians) and the median of the per-round ratios: the two alternate round by
    round, so both meet the machine in the same state."""
    base, hooked, ratios = [], [], []
    for _ in range(ROUNDS):
        one = await _block(baseline, calls)
        with bind_runtime_context(_bound(hooks)), model_hooks_for_turn("bench"):
            two = await _block(measured, calls)
        base.append(one)
        hooked.append(two)
        ratios.append(two / one)
    return statistics.median(hooked), statistics.median(base), statistics.median(ratios)


def _bound(registry: HookRegistry) -> ToolRuntimeContext:
    return ToolRuntimeContext(registry=registry, agent_name="bench", room_id="!bench:localhost")


async def _seam(calls: int) -> tuple[list[tuple[str, float, float, float]], bool]:
    model: Any = reporting_class(_Canned)(id="bench")
    request = _request()

    async def baseline() -> None:
        await model._retried_invoke(**request)  # the class's provider call as it was before the seam

    async def through_seam() -> None:
        await model.ainvoke(**request)

    seam = await _paired(baseline, through_seam, calls, HookRegistry.empty())
    rows = [("seam, no hooks", *seam)]
    for label, callbacks in HOOKS.items():
        registry = HookRegistry.from_plugins([_Plugin(callbacks)])
        rows.append((label, *await _paired(baseline, through_seam, calls, registry)))
    return rows, seam[2] <= SEAM_TARGET


async def _http(calls: int) -> list[tuple[str, float, float, float]]:
    server = ScriptedModelServer()
    server.start()
    try:
        server.set_default(Text("ok"))
        config = ModelConfig(
            provider="openai", id="bench", extra_kwargs={"base_url": server.base_url, "max_retries": 0}
        )
        model: Any = build_model(config, env={})
        request = _request()

        async def round_trip() -> None:
            await model.ainvoke(**{**request, "assistant_message": Message(role="assistant")})

        await round_trip()  # the client's connection pool, warm
        registry = HookRegistry.from_plugins([_Plugin(HOOKS["rewriting gate"])])
        return [("HTTP round-trip, rewriting gate", *await _paired(round_trip, round_trip, calls, registry))]
    finally:
        server.stop()


async def main() -> int:
    configure_logging("WARNING", json=True)
    calls = CALLS if not SMOKE else 50
    rows, seam_ok = await _seam(calls)
    rows += await _http(HTTP_CALLS if not SMOKE else 5)
    print(f"{'per round-trip':<34}{'us':>10}{'baseline us':>13}{'added us':>10}{'ratio':>8}")
    for label, measured, base, ratio in rows:
        print(f"{label:<34}{measured * 1e6:>10.1f}{base * 1e6:>13.1f}{(measured - base) * 1e6:>10.1f}"
              f"{ratio:>8.3f}")  # fmt: skip
    print(f"seam without hooks within {SEAM_TARGET:.2f}x of the baseline: {'ok' if seam_ok else 'MISS'}")
    return 0 if seam_ok or SMOKE else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
