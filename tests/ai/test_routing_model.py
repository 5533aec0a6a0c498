"""The router model picks one agent by name, or None when its answer names none (or it fails)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mindroom.ai import choose_agent
from mindroom.ai.routing_model import parse_agent_choice
from mindroom.config.main import ModelConfig
from mindroom.hooks.enrichment import ENRICHMENT_TAG, EnrichmentItem, append_enrichment
from mindroom.testing.model_server import HttpError, ScriptedModelServer, Text, last_user_message

CANDIDATES = [("general", "Answers anything."), ("coder", "Writes and reviews code."), ("chef", "Cooks.")]


@pytest.mark.asyncio
async def test_choose_agent_returns_scripted_choice(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(Text("coder"))
    message = append_enrichment("Fix my Python bug", [EnrichmentItem(key="k", text="ctx")])

    assert await choose_agent(scripted_model, CANDIDATES, message, env={}) == "coder"

    prompt = last_user_message(model_server.requests[0])
    assert "coder: Writes and reviews code." in prompt
    assert "Fix my Python bug" in prompt
    assert ENRICHMENT_TAG not in prompt


@pytest.mark.asyncio
async def test_choose_agent_returns_none_for_garbage(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(Text("I would ask the sommelier."))

    assert await choose_agent(scripted_model, CANDIDATES, "Wine pairing?", env={}) is None


@pytest.mark.asyncio
async def test_choose_agent_returns_none_when_model_fails(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(HttpError(500, "down"))

    assert await choose_agent(scripted_model, CANDIDATES, "Anyone?", env={}) is None


@pytest.mark.asyncio
async def test_choose_agent_keeps_no_history(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(Text("chef"), Text("general"))

    assert await choose_agent(scripted_model, CANDIDATES, "Pasta?", env={}) == "chef"
    assert await choose_agent(scripted_model, CANDIDATES, "Weather?", env={}) == "general"

    second = model_server.requests[1]["messages"]
    assert [message["role"] for message in second] == ["system", "user"]


@pytest.mark.asyncio
async def test_choose_agent_without_candidates_asks_nobody(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    assert await choose_agent(scripted_model, [], "Hello", env={}) is None
    assert model_server.requests == []


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("coder", "coder"),
        ("  **Coder**.\n", "coder"),
        ("`chef`", "chef"),
        ("@general", "general"),
        ("The best agent is coder.", "coder"),
        ("coder or chef", None),
        ("coders", None),
        ("", None),
    ],
)
def test_parse_agent_choice(reply: str, expected: str | None) -> None:
    assert parse_agent_choice(reply, [name for name, _role in CANDIDATES]) == expected
