"""What providers do to a turn, handled: rate limits and 5xx retried with backoff, stalled streams cut and retried
once while nothing was shown, and the turn's retry budget respected."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from mindroom.ai import GenerationError, generate, stream_generate
from mindroom.ai.resilience import CallPolicy, RetryBudget, call_with_retries, retry_after_s, retryable
from mindroom.config.main import ModelConfig
from mindroom.testing.model_server import HttpError, ScriptedModelServer, Stall, Stream, Text
from tests.ai.test_generation import ENV, collect, make_request, with_options

pytestmark = pytest.mark.asyncio


def retrying(model: ModelConfig, retries: int = 2, **fields: object) -> ModelConfig:
    return with_options(model, max_retries=retries).model_copy(update=fields)


async def test_generate_rate_limit_then_success_waits_as_asked(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(HttpError(429, "slow down", retry_after_s=0.3), Text("made it"))
    started = time.monotonic()

    result = await generate(make_request(retrying(scripted_model), "hi"), storage_root=storage_root, env=ENV)

    assert result.text == "made it"
    assert len(model_server.requests) == 2
    assert time.monotonic() - started >= 0.3  # the provider's Retry-After, not the default backoff


async def test_generate_server_error_then_success(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(HttpError(500, "boom"), HttpError(503, "busy"), Text("third time lucky"))

    result = await generate(make_request(retrying(scripted_model), "hi"), storage_root=storage_root, env=ENV)

    assert result.text == "third time lucky"
    assert len(model_server.requests) == 3


async def test_generate_gives_up_after_max_retries_with_the_last_status(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.set_default(HttpError(503, "down"))

    with pytest.raises(GenerationError) as caught:
        await generate(make_request(retrying(scripted_model, 1), "hi"), storage_root=storage_root, env=ENV)

    assert caught.value.status_code == 503
    assert len(model_server.requests) == 2


async def test_generate_client_error_is_not_retried(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(HttpError(400, "bad request"), Text("never asked"))

    with pytest.raises(GenerationError):
        await generate(make_request(retrying(scripted_model), "hi"), storage_root=storage_root, env=ENV)

    assert len(model_server.requests) == 1


async def test_stream_stalled_before_anything_was_shown_is_cut_and_retried(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    # The limit leaves a loaded machine time to bring the retry's first chunk within it.
    model = retrying(scripted_model, 0, stream_idle_timeout_seconds=2.0)
    model_server.script(Stall(), Stream(["fresh ", "answer"]))  # silent until the server stops

    # The stall never ends by itself: an answer at all means it was cut at the idle limit (the guard only
    # keeps a broken cut from hanging the suite).
    deltas = await asyncio.wait_for(collect(make_request(model, "hi"), storage_root), 120)

    assert "".join(deltas) == "fresh answer"
    assert len(model_server.requests) == 2


async def test_stream_stalled_after_text_was_shown_fails_without_repeating_it(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model = retrying(scripted_model, 2, stream_idle_timeout_seconds=2.0)
    model_server.script(Stall(["half an "], seconds=30), Text("a second answer"))
    shown: list[str] = []

    async def read() -> None:
        async for delta in stream_generate(make_request(model, "hi"), storage_root=storage_root, env=ENV):
            shown.append(delta)

    with pytest.raises(GenerationError) as caught:
        await read()

    assert caught.value.kind == "stalled"
    assert str(caught.value) == "The model went silent part-way through its answer."
    assert shown == ["half an "]
    assert len(model_server.requests) == 1


async def test_stream_stalled_twice_fails_after_one_retry(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model = retrying(scripted_model, 2, stream_idle_timeout_seconds=0.3)
    model_server.set_default(Stall(seconds=30))

    with pytest.raises(GenerationError) as caught:
        await collect(make_request(model, "hi"), storage_root)

    assert caught.value.kind == "stalled"
    assert len(model_server.requests) == 2


async def test_anthropic_overloaded_is_retried(model_server: ScriptedModelServer, storage_root: Path) -> None:
    model = ModelConfig(provider="anthropic", id="claude-x", host=model_server.url, api_key="k")
    model_server.script(HttpError(529, "overloaded", retry_after_s=0), Text("calm again"))

    result = await generate(make_request(model, "hi"), storage_root=storage_root, env=ENV)

    assert result.text == "calm again"
    assert len(model_server.requests_to("anthropic")) == 2


async def test_ollama_server_error_is_retried(model_server: ScriptedModelServer, storage_root: Path) -> None:
    model = ModelConfig(provider="ollama", id="llama-x", host=model_server.url)
    model_server.script(HttpError(500, "loading", retry_after_s=0), Stream(["local ", "answer"]))

    deltas = await collect(make_request(model, "hi"), storage_root)

    assert "".join(deltas) == "local answer"
    assert len(model_server.requests_to("ollama")) == 2


class _Failure(Exception):
    def __init__(self, status: int, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"status {status}")
        self.status_code = status
        self.response = type("Response", (), {"headers": headers or {}, "status_code": status})()


async def test_retries_stop_when_the_turn_budget_is_spent() -> None:
    calls = 0

    async def failing() -> str:
        nonlocal calls
        calls += 1
        raise _Failure(429, {"retry-after": "0.2"})

    budget = RetryBudget(0.3)
    with pytest.raises(_Failure):
        await call_with_retries(failing, CallPolicy(max_retries=5), budget, "m")

    assert calls == 2  # one wait of 0.2 s fits the 0.3 s budget, the second does not
    assert budget.remaining_s == pytest.approx(0.1)


async def test_retryable_and_retry_after_read_the_error_chain() -> None:
    wrapped = RuntimeError("wrapper")
    wrapped.__cause__ = _Failure(503, {"retry-after": "2"})

    assert retryable(wrapped) and retry_after_s(wrapped) == 2.0
    assert not retryable(_Failure(404))
    assert retryable(ConnectionError("reset"))
    assert not retryable(TimeoutError())
