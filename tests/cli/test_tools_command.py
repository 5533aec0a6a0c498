"""`mindroom tools list` and the doctor's tool lines: what can run here, and the fix for what cannot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mindroom.cli.app import app
from mindroom.cli.doctor_result import CheckStatus
from mindroom.cli.doctor_tools import check_mcp_servers, check_toolkits
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.daemon.start_check import check_start
from tests.integration.mcp_servers import time_server_command
from tests.tool_system.test_tool_names import mindroom_catalogue

ROOT = Path(__file__).resolve().parents[2]

CONFIG = """
agents:
  a:
    display_name: A
    tools: [reasoning, tavily, mcp_clock, external_trigger_manager, matrix_voice_message]
mcp_servers:
  clock: {transport: stdio, command: mcp-server-time}
"""


def test_tools_list_says_available_missing_package_or_credential(tmp_path: Path, monkeypatch):
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    monkeypatch.delenv("OPENWEATHER_API_KEY", raising=False)

    result = CliRunner().invoke(app, ["tools", "list", "-c", str(config), "--json"])

    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.output)}
    assert rows["reasoning"]["status"] == "available" and rows["reasoning"]["used_by"] == ["a"]
    assert rows["tavily"]["status"] == "missing package"
    assert rows["tavily"]["detail"] == (
        f"tavily-python: mindroom tools install tavily (or: pip install -e '{ROOT}[tools-search]')"
    )
    assert (
        rows["openweather"]["status"] == "missing credential" and "OPENWEATHER_API_KEY" in rows["openweather"]["detail"]
    )
    assert rows["mcp_clock"] == {
        "name": "mcp_clock", "kind": "mcp server", "status": "configured", "detail": "stdio, enabled", "used_by": ["a"]
    }  # fmt: skip
    assert rows["python"]["status"] == "not offered"
    assert rows["shell"]["kind"] == "built-in group"
    assert (rows["external_trigger_manager"]["status"], rows["external_trigger_manager"]["used_by"]) == (
        "comes with external triggers",
        ["a"],
    )
    assert (rows["matrix_voice_message"]["status"], rows["matrix_voice_message"]["kind"]) == (
        "available",
        "built-in group",
    )
    assert rows["desktop"]["status"] == "not offered" and "hosted service" in rows["desktop"]["detail"]
    # The Google client libraries are in the test extra: what gmail lacks here is a person's connection.
    assert rows["gmail"]["status"] == "missing credential"
    assert rows["gmail"]["detail"].startswith("needs a connection: google_gmail (oauth_providers.google_gmail:")


def test_tools_list_names_every_tool_of_mindroom_catalogue(tmp_path: Path):
    result = CliRunner().invoke(app, ["tools", "list", "-c", str(tmp_path / "none.yaml"), "--json"])

    assert result.exit_code == 0, result.output
    statuses = {row["name"]: row["status"] for row in json.loads(result.output)}
    known = ("available", "missing package", "missing credential", "not offered")
    assert {
        name: statuses.get(name)
        for name in mindroom_catalogue()
        if not (statuses.get(name) in known or str(statuses.get(name)).startswith("comes with "))
    } == {}


def test_tools_list_table_shows_the_install_command(tmp_path: Path):
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)

    result = CliRunner().invoke(app, ["tools", "list", "-c", str(config)])

    assert result.exit_code == 0
    assert "mindroom tools install wikipedia (or: pip install -e" in result.output
    assert "mindroom[" not in result.output  # MindRoom's own distribution on the package index is never named


def _doctor_tool_lines(tmp_path: Path, tools: list[str]) -> list:
    (tmp_path / "config.yaml").write_text(json.dumps({"agents": {"a": {"display_name": "A", "tools": tools}}}))
    checked = check_start(RuntimePaths(tmp_path / "config.yaml", tmp_path / "data", {}))
    assert checked.config is not None
    return check_toolkits(checked.config, {}, checked)


def test_doctor_warns_of_each_tool_that_cannot_run_and_fails_what_run_refuses(tmp_path: Path):
    tavily, tags = _doctor_tool_lines(tmp_path, ["tavily", "reasoning", "external_trigger_manager"])

    assert (tavily.status, tavily.detail) == (
        CheckStatus.WARN,
        "agents.a.tools: 'tavily' cannot run here (missing package tavily-python); the agent runs without it",
    )
    assert tavily.fix == f"mindroom tools install tavily (or: pip install -e '{ROOT}[tools-search]')"
    assert (tags.status, tags.fix) == (CheckStatus.WARN, "nothing meanwhile")
    (refused,) = _doctor_tool_lines(tmp_path, ["reasoning", "agent_vault_access"])
    assert refused.status is CheckStatus.FAIL and "'agent_vault_access' is not offered here" in refused.detail
    (unknown,) = _doctor_tool_lines(tmp_path, ["reasoning", "reasonings"])
    assert (unknown.status, unknown.detail) == (
        CheckStatus.FAIL,
        "agents.a.tools[1] (line 1): unknown tool 'reasonings'",
    )
    ok = _doctor_tool_lines(tmp_path, ["reasoning"])
    assert [(r.status, r.detail) for r in ok] == [
        (CheckStatus.PASS, "1 agno toolkits named by agents can run: reasoning")
    ]


@pytest.mark.asyncio
async def test_doctor_starts_each_mcp_server_and_says_which_fails_and_why(tmp_path: Path):
    servers = {
        "clock": {"transport": "stdio", "command": time_server_command()},
        "gone": {"transport": "stdio", "command": str(tmp_path / "missing-server")},
        "notes": {"transport": "streamable-http", "url": "https://notes.example.org/mcp", "auth": {"type": "oauth"}},
    }
    config = Config.model_validate({"mcp_servers": servers})

    results = await check_mcp_servers(config, RuntimePaths(tmp_path / "config.yaml", tmp_path / "data", {}))

    by_name = {r.name: r for r in results}
    assert by_name["mcp server clock"].status is CheckStatus.PASS
    assert by_name["mcp server clock"].detail == "started and listed 2 tools"
    assert (by_name["mcp server notes"].status, by_name["mcp server notes"].detail) == (
        CheckStatus.PASS,  # never connected without a person's token: nothing to list (and no request made)
        "acts with each person's OAuth connection (auth: oauth): opened at their first call, not here",
    )
    assert (
        by_name["mcp server gone"].status is CheckStatus.FAIL and "does not exist" in by_name["mcp server gone"].detail
    )
