"""The `homeassistant` tool: states and service calls on the operator's Home Assistant, with the token from the
environment only; only the configured host and port are reached, a redirect is never followed, and without a
URL or token the agent runs without the tool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mindroom.ai.tools import foreign_tool_specs
from mindroom.cli.app import app
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.tool_system.builtin.homeassistant import call_service, get_entity_state, list_entities
from mindroom.tool_system.catalog import build_tool_catalog
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError
from tests.tool_system.builtin.home_server import TOKEN, home_server

pytestmark = pytest.mark.asyncio


def turn(tmp_path: Path, env: dict[str, str], entry: object = "homeassistant"):
    config = Config.model_validate({"agents": {"home": {"display_name": "Home", "tools": [entry]}}})
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path, env)
    return bind_runtime_context(
        ToolRuntimeContext(None, "home", "!room:hs", "$root", "@alice:hs", config=config, runtime_paths=paths)
    )


async def test_homeassistant_lists_reads_and_calls_services_with_the_bearer_token(tmp_path: Path):
    with home_server() as home, turn(tmp_path, {"HOMEASSISTANT_URL": home.base, "HOMEASSISTANT_TOKEN": TOKEN}):
        listed = json.loads(await list_entities())
        lights = json.loads(await list_entities("light"))
        state = json.loads(await get_entity_state("sensor.hall_temperature"))
        called = json.loads(await call_service("light", "turn_on", "light.kitchen", '{"brightness": 128}'))

    assert [e["entity_id"] for e in listed["entities"]] == ["light.kitchen", "sensor.hall_temperature"]
    assert listed["entities"][0] == {"entity_id": "light.kitchen", "state": "off", "friendly_name": "Kitchen light"}
    assert [e["entity_id"] for e in lights["entities"]] == ["light.kitchen"]
    assert state["entity"]["state"] == "21.5" and state["entity"]["attributes"]["unit"] == "C"
    assert called["service"] == "light.turn_on" and called["changed"][0]["state"] == "on"
    assert home.calls == [
        ("GET", "/api/states", None),
        ("GET", "/api/states", None),
        ("GET", "/api/states/sensor.hall_temperature", None),
        ("POST", "/api/services/light/turn_on", {"brightness": 128, "entity_id": "light.kitchen"}),
    ]


async def test_homeassistant_reads_the_url_from_the_agent_entry_and_the_token_from_its_file(tmp_path: Path):
    token_file = tmp_path / "ha-token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    with home_server() as home:
        entry = {"homeassistant": {"HOMEASSISTANT_URL": home.base + "/"}}
        with turn(tmp_path, {"HOMEASSISTANT_TOKEN_FILE": str(token_file)}, entry):
            state = json.loads(await get_entity_state("light.kitchen"))
        with turn(tmp_path, {}, {"homeassistant": {"HOMEASSISTANT_TOKEN": TOKEN}}), pytest.raises(ToolError) as bad:
            await list_entities()

    assert state["entity"]["entity_id"] == "light.kitchen"
    assert "'HOMEASSISTANT_TOKEN' is a credential" in str(bad.value) and TOKEN not in str(bad.value)
    assert str(bad.value).startswith("agents.home.tools: 'homeassistant'")


async def test_homeassistant_a_wrong_token_is_a_clear_error_without_the_token(tmp_path: Path):
    wrong = "ha-wrong-token-9876543210fedcba"
    with (
        home_server() as home,
        turn(tmp_path, {"HOMEASSISTANT_URL": home.base, "HOMEASSISTANT_TOKEN": wrong}),
        pytest.raises(ToolError) as refused,
    ):
        await call_service("light", "turn_on", "light.kitchen")

    assert "refused the access token (HOMEASSISTANT_TOKEN): HTTP 401" in str(refused.value)
    assert wrong not in str(refused.value) and TOKEN not in str(refused.value)
    assert home.calls == [("POST", "/api/services/light/turn_on", {"entity_id": "light.kitchen"})]


async def test_homeassistant_never_follows_a_redirect_to_another_host_or_port(tmp_path: Path):
    with home_server() as home, turn(tmp_path, {"HOMEASSISTANT_URL": home.base, "HOMEASSISTANT_TOKEN": TOKEN}):
        for target in (
            f"http://homeassistant.local.evil.example:{home.port}/api/states",
            f"http://127.0.0.1:{home.port + 1}/api/states",
            "/api/states/light.kitchen",  # even on the same host: what was asked for is answered, or nothing
        ):
            home.redirect_to = target
            with pytest.raises(ToolError, match="redirects are not followed"):
                await list_entities()

    assert home.calls == [("GET", "/api/states", None)] * 3


@pytest.mark.parametrize(
    ("entity_id", "domain"),
    [
        ("light.kitchen/../../config", "light"),
        ("light.kitchen@homeassistant.local.evil.example", "light"),
        ("light.kitchen?x=1", "light"),
        ("light.kitchen", "light/../../states"),
        ("light.kitchen", "Light"),
    ],
)
async def test_homeassistant_refuses_names_that_would_leave_the_api_path(tmp_path: Path, entity_id, domain):
    with home_server() as home, turn(tmp_path, {"HOMEASSISTANT_URL": home.base, "HOMEASSISTANT_TOKEN": TOKEN}):
        with pytest.raises(ToolError, match=r"is not an? (entity id|domain name)"):
            await call_service(domain, "turn_on", entity_id)
        with pytest.raises(ToolError, match="is not an entity id"):
            await get_entity_state(entity_id if entity_id != "light.kitchen" else "light.kitchen/x")

    assert home.calls == []


@pytest.mark.parametrize("url", ["http://169.254.169.254:8123", "http://169.254.10.20:8123", "ftp://127.0.0.1/"])
async def test_homeassistant_never_reaches_metadata_or_link_local_even_when_configured(tmp_path: Path, url):
    with turn(tmp_path, {"HOMEASSISTANT_URL": url, "HOMEASSISTANT_TOKEN": TOKEN}), pytest.raises(ToolError) as refused:
        await list_entities()

    assert "never reached" in str(refused.value) or "is not an http(s) URL" in str(refused.value)
    assert TOKEN not in str(refused.value)


def catalog_for(tmp_path: Path, env: dict[str, str], entry: object = "homeassistant"):
    config = Config.model_validate({"agents": {"a": {"display_name": "A", "tools": ["calculator", entry]}}})
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path / "data", env)
    return build_tool_catalog(config, [], adapt=foreign_tool_specs, runtime_paths=paths)


async def test_homeassistant_without_url_or_token_leaves_the_agent_running_without_it(tmp_path: Path):
    names = ["calculator", "homeassistant"]
    bare = catalog_for(tmp_path, {})
    no_token = catalog_for(tmp_path, {"HOMEASSISTANT_URL": "http://homeassistant.local:8123"})
    entry = {"homeassistant": {"HOMEASSISTANT_URL": "http://homeassistant.local:8123"}}
    ready = catalog_for(tmp_path, {"HOMEASSISTANT_TOKEN": TOKEN}, entry)

    assert [s.name for s in bare.tools_for(names, AgentToolEnvironment("a", tmp_path))] == ["calculate"]
    assert [(u.tool, u.reason) for u in bare.unavailable] == [
        ("homeassistant", "missing credential HOMEASSISTANT_URL, HOMEASSISTANT_TOKEN")
    ]
    assert "HOMEASSISTANT_TOKEN_FILE" in bare.unavailable[0].fix
    assert [u.reason for u in no_token.unavailable] == ["missing credential HOMEASSISTANT_TOKEN"]
    assert ready.unavailable == ()
    assert [s.name for s in ready.tools_for(names, AgentToolEnvironment("a", tmp_path))] == [
        "calculate",
        "list_entities",
        "get_entity_state",
        "call_service",
    ]


async def test_homeassistant_tools_list_names_the_missing_variables(tmp_path: Path, monkeypatch):
    config = tmp_path / "config.yaml"
    config.write_text("agents:\n  a:\n    display_name: A\n    tools: [homeassistant]\n")
    for name in ("HOMEASSISTANT_URL", "HOMEASSISTANT_TOKEN", "HOMEASSISTANT_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)

    result = CliRunner().invoke(app, ["tools", "list", "-c", str(config), "--json"])

    assert result.exit_code == 0, result.output
    row = next(row for row in json.loads(result.output) if row["name"] == "homeassistant")
    assert row["status"] == "missing credential" and row["used_by"] == ["a"]
    assert row["detail"].startswith("HOMEASSISTANT_URL, HOMEASSISTANT_TOKEN: set HOMEASSISTANT_URL")


async def test_homeassistant_an_agent_with_its_own_url_gets_it_and_one_without_does_not(tmp_path: Path):
    own = {"homeassistant": {"HOMEASSISTANT_URL": "http://homeassistant.local:8123"}}
    agents = {
        "house": {"display_name": "House", "tools": ["calculator", own]},
        "other": {"display_name": "Other", "tools": ["calculator", "homeassistant"]},
    }
    config = Config.model_validate({"agents": agents})
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path / "data", {"HOMEASSISTANT_TOKEN": TOKEN})
    catalog = build_tool_catalog(config, [], adapt=foreign_tool_specs, runtime_paths=paths)
    names = ["calculator", "homeassistant"]

    house = catalog.tools_for(names, AgentToolEnvironment("house", tmp_path))
    other = catalog.tools_for(names, AgentToolEnvironment("other", tmp_path))

    assert [s.name for s in house] == ["calculate", "list_entities", "get_entity_state", "call_service"]
    assert [s.name for s in other] == ["calculate"]
    assert [(u.agent, u.reason) for u in catalog.unavailable] == [("other", "missing credential HOMEASSISTANT_URL")]
