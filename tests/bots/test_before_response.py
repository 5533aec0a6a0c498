"""`message:before_response` sees the agent's generated answers only: an error reply and a message the
`send_matrix_message` tool posts do not pass it (the hooks spec: after generation, before the answer is sent)."""

from __future__ import annotations

from typing import Any

import pytest

from mindroom.hooks import (
    EVENT_MESSAGE_BEFORE_RESPONSE,
    EVENT_MESSAGE_CANCELLED,
    EVENT_TOOL_BEFORE_CALL,
    hook,
)
from mindroom.testing.model_server import HttpError, Text, ToolCall
from tests.bots.bench import ALICE, LOBBY, registry_of

pytestmark = pytest.mark.asyncio

HELPER = {"helper": {"display_name": "Helper", "rooms": ["lobby"], "tools": ["matrix"]}}


def recording_hooks(seen: list[tuple[str, str]]) -> Any:
    @hook(EVENT_MESSAGE_BEFORE_RESPONSE)
    async def shout(ctx: Any) -> None:
        seen.append(("before_response", ctx.draft.response_text))
        ctx.draft.response_text = ctx.draft.response_text.upper()

    @hook(EVENT_MESSAGE_CANCELLED)
    async def cancelled(ctx: Any) -> None:
        seen.append(("cancelled", ctx.info.failure_reason or ""))

    @hook(EVENT_TOOL_BEFORE_CALL)
    async def gate(ctx: Any) -> None:
        seen.append(("tool", str(ctx.arguments.get("text"))))

    return registry_of(shout, cancelled, gate)


async def test_before_response_an_error_reply_does_not_pass_it_and_is_reported_as_cancelled(make_bench, model_server):
    seen: list[tuple[str, str]] = []
    model_server.set_default(HttpError(500, "the model fell over"))
    bench = await make_bench(HELPER, registry=recording_hooks(seen))

    await bench.deliver(bench.server.message(LOBBY, ALICE, "hello?"))
    await bench.settle()

    [error] = bench.client("helper").messages
    assert error.body == "⚠️ The model is unavailable right now (HTTP 500)."  # as sent: no hook changed it
    assert seen == [("cancelled", "The model is unavailable right now (HTTP 500).")]


async def test_before_response_a_tool_message_does_not_pass_it_the_answer_does(make_bench, model_server):
    seen: list[tuple[str, str]] = []
    model_server.script(ToolCall("send_matrix_message", {"text": "a note on the side"}), Text("done"))
    bench = await make_bench(HELPER, registry=recording_hooks(seen))

    await bench.deliver(bench.server.message(LOBBY, ALICE, "leave a note"))
    await bench.settle()

    bodies = [m.body for m in bench.client("helper").messages]
    assert bodies == ["a note on the side", "DONE"]
    assert seen == [("tool", "a note on the side"), ("before_response", "done")]
