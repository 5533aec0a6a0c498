"""Every answer's token usage reaches `message:after_response` and the bot's counters; a prompt too long for
the model is folded with the compaction hooks before the one retry."""

from __future__ import annotations

from typing import Any

import pytest

from mindroom.daemon.metrics import MetricsCollector
from mindroom.hooks import (
    EVENT_COMPACTION_AFTER,
    EVENT_COMPACTION_BEFORE,
    EVENT_MESSAGE_AFTER_RESPONSE,
    ResponseUsage,
    hook,
)
from mindroom.testing.model_api import word_count
from mindroom.testing.model_api_openai import ChatCompletionsApi
from mindroom.testing.model_server import ContextOverflow, ScriptedModelServer, Stream, Text, ToolCall
from tests.bots.bench import ALICE, LOBBY, registry_of
from tests.daemon.test_metrics import _sample

pytestmark = pytest.mark.asyncio

HELPER = {"display_name": "Helper", "rooms": ["lobby"]}
LONG = "word " * 300


def _read(requests: list[dict[str, Any]]) -> int:
    """What the scripted server counts as the input tokens of `requests`."""
    return sum(word_count(ChatCompletionsApi().texts(request)) for request in requests)


def _usage_registry(seen: list[Any]):
    @hook(EVENT_MESSAGE_AFTER_RESPONSE)
    async def note(ctx):
        seen.append(ctx.result.usage)

    return registry_of(note)


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "streamed"])
async def test_usage_of_an_answer_reaches_after_response_and_the_bots_counts(
    make_bench, model_server: ScriptedModelServer, streaming: bool
):
    seen: list[Any] = []
    bench = await make_bench(
        {"helper": HELPER}, registry=_usage_registry(seen), defaults={"enable_streaming": streaming}
    )
    model_server.set_cached_tokens(2)
    reply = Stream(["three ", "words ", "here"]) if streaming else Text("three words here")
    model_server.set_default(reply)

    await bench.deliver(bench.server.message(LOBBY, ALICE, "count for me"))
    await bench.settle()

    [request] = model_server.requests
    expected = ResponseUsage(_read([request]), 3, 2, "agent-model")
    assert seen == [expected]
    assert expected.total_tokens == expected.input_tokens + 3
    assert bench.bots["helper"].metrics.tokens == {"agent-model": (expected.input_tokens, 3, 2)}


async def test_usage_counts_every_model_call_of_a_turn_and_adds_up_over_turns(
    make_bench, model_server: ScriptedModelServer
):
    seen: list[Any] = []
    bench = await make_bench({"helper": {**HELPER, "tools": ["calculator"]}}, registry=_usage_registry(seen))
    model_server.script(ToolCall("add", {"a": 1, "b": 2}), Text("three it is"), Text("again"))

    await bench.deliver(bench.server.message(LOBBY, ALICE, "add one and two"))
    await bench.settle()
    await bench.deliver(bench.server.message(LOBBY, ALICE, "once more"))
    await bench.settle()

    first, second, third = model_server.requests
    assert [usage.input_tokens for usage in seen] == [_read([first, second]), _read([third])]
    assert [usage.output_tokens for usage in seen] == [3, 1]  # the tool call writes no words
    metrics = bench.bots["helper"].metrics
    assert metrics.tokens == {"agent-model": (_read([first, second, third]), 4, 0)}
    text = MetricsCollector(lambda: bench.daemon).render()
    labels = {"agent": "helper", "model": "agent-model"}
    assert _sample(text, "mindroom_model_tokens_total", kind="input", **labels) == _read([first, second, third])
    assert _sample(text, "mindroom_model_tokens_total", kind="output", **labels) == 4
    assert _sample(text, "mindroom_model_tokens_total", kind="cached", **labels) == 0


async def test_usage_of_a_failed_turn_is_not_counted(make_bench, model_server: ScriptedModelServer):
    seen: list[Any] = []
    bench = await make_bench({"helper": HELPER}, registry=_usage_registry(seen))
    model_server.set_default(ContextOverflow())  # no history to fold: the turn fails

    await bench.deliver(bench.server.message(LOBBY, ALICE, "far too long"))
    await bench.settle()

    assert seen == []
    assert bench.bots["helper"].metrics.tokens == {}


async def test_usage_a_prompt_too_long_is_folded_with_the_compaction_hooks_then_retried(
    make_bench, model_server: ScriptedModelServer
):
    fired: list[tuple[str, int, int | None]] = []

    @hook(EVENT_COMPACTION_BEFORE)
    async def before(ctx):
        fired.append((ctx.event_name, ctx.token_count_before, ctx.token_count_after))

    @hook(EVENT_COMPACTION_AFTER)
    async def after(ctx):
        fired.append((ctx.event_name, ctx.token_count_before, ctx.token_count_after))

    bench = await make_bench({"helper": HELPER}, registry=registry_of(before, after))
    root = bench.server.message(LOBBY, ALICE, "question 0 " + LONG)
    model_server.set_default(Text("answer " + LONG))
    await bench.deliver(root)
    await bench.settle()
    for index in (1, 2):
        await bench.deliver(bench.server.message(LOBBY, ALICE, f"question {index} " + LONG, thread_root=root.event_id))
        await bench.settle()
    assert fired == []  # under the history budget: nothing folded before the answers
    model_server.reset()
    model_server.script(ContextOverflow(), Text("the summary so far"), Text("fits now"))

    await bench.deliver(bench.server.message(LOBBY, ALICE, "and now?", thread_root=root.event_id))
    await bench.settle()

    assert bench.client("helper").messages[-1].body == "fits now"
    assert [event for event, _before, _after in fired] == ["compaction:before", "compaction:after"]
    (_, history, _), (_, folded_from, folded_to) = fired
    assert folded_from == history and folded_to is not None and folded_to <= history // 2
    refused, _summarise, retried = model_server.requests
    assert any("the summary so far" in str(message.get("content")) for message in retried["messages"])
    assert len(retried["messages"]) < len(refused["messages"])
