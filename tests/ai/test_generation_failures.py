"""Generation failures: each provider error becomes a short `GenerationError` and one log line."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from mindroom.ai import GenerationError, generate, load_history
from mindroom.config.main import ModelConfig
from mindroom.hooks.enrichment import EnrichmentItem, append_enrichment
from mindroom.testing.model_server import Hang, HttpError, ScriptedModelServer, Text
from tests.ai.test_generation import ENV, collect, make_request, roles_and_texts, with_options


@pytest.mark.asyncio
async def test_generate_http_500_raises_generation_error(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    secret = "sk-proj-abcdefghijklmnopqrstuvwxyz"
    model_server.script(HttpError(500, f"upstream exploded, key {secret}"))
    message = append_enrichment("hello", [EnrichmentItem(key="k", text="private context")])

    with pytest.raises(GenerationError) as caught:
        await generate(make_request(scripted_model, message), storage_root=storage_root, env=ENV)

    assert str(caught.value) == "The model is unavailable right now (HTTP 500)."
    assert caught.value.status_code == 500
    assert caught.value.kind == "http"
    assert secret not in str(caught.value)
    assert await load_history("helper", "thread-1", storage_root=storage_root) == []

    model_server.script(Text("recovered"))
    result = await generate(make_request(scripted_model, "again"), storage_root=storage_root, env=ENV)
    assert result.text == "recovered"
    assert roles_and_texts(model_server.requests[1])[1:] == [("user", "again")]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("status", "kind", "text"),
    [
        (401, "rejected", "The model rejected the credentials (HTTP 401)."),
        (429, "rate_limited", "The model is rate-limited right now (HTTP 429)."),
        (404, "http", "The model is unavailable right now (HTTP 404)."),
        (502, "http", "The model is unavailable right now (HTTP 502)."),
    ],
)
async def test_generate_http_status_maps_to_short_message(
    model_server: ScriptedModelServer,
    scripted_model: ModelConfig,
    storage_root: Path,
    status: int,
    kind: str,
    text: str,
) -> None:
    model_server.script(HttpError(status, "provider said no"))

    with pytest.raises(GenerationError) as caught:
        await generate(make_request(scripted_model, "hi"), storage_root=storage_root, env=ENV)

    assert (caught.value.kind, str(caught.value), caught.value.status_code) == (kind, text, status)


@pytest.mark.asyncio
async def test_generate_failure_is_logged_with_agent_and_error(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(HttpError(502, "provider said no"))

    with capture_logs() as logs, pytest.raises(GenerationError):
        await generate(make_request(scripted_model, "hi"), storage_root=storage_root, env=ENV)

    (logged,) = [entry for entry in logs if entry["event"] == "generation failed"]
    assert (logged["agent"], logged["kind"], logged["status_code"]) == ("helper", "http", 502)
    assert "provider said no" in logged["error"]


@pytest.mark.asyncio
async def test_stream_generate_http_error_raises_generation_error(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(HttpError(503, "overloaded"))

    with pytest.raises(GenerationError, match=r"HTTP 503"):
        await collect(make_request(scripted_model, "hi"), storage_root)


@pytest.mark.asyncio
async def test_generate_connection_refused_raises_generation_error(storage_root: Path) -> None:
    server = ScriptedModelServer().start()
    server.stop()
    model = ModelConfig(provider="openai", id="gone", extra_kwargs={"base_url": server.base_url, "max_retries": 0})

    with pytest.raises(GenerationError) as caught:
        await generate(make_request(model, "anyone there?"), storage_root=storage_root, env=ENV)
    assert caught.value.kind == "unreachable"
    assert str(caught.value) == "The model is unreachable right now."

    with pytest.raises(GenerationError, match="unreachable"):
        await collect(make_request(model, "anyone there?"), storage_root)


@pytest.mark.asyncio
async def test_generate_timeout_raises_generation_error(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(Hang())
    model = with_options(scripted_model, timeout=0.3)

    with pytest.raises(GenerationError) as caught:
        await generate(make_request(model, "slow?"), storage_root=storage_root, env=ENV)

    assert caught.value.kind == "timeout"
    assert str(caught.value) == "The model did not answer in time."


@pytest.mark.asyncio
async def test_generate_missing_api_key_raises_generation_error(storage_root: Path) -> None:
    model = ModelConfig(provider="openai", id="gpt-test")

    with pytest.raises(GenerationError) as caught:
        await generate(make_request(model, "hi"), storage_root=storage_root, env=ENV)

    assert caught.value.kind == "misconfigured"
