"""An agent's `tools:` entries in MindRoom's three shapes, and the `mcp_servers` / `tool_approval` sections."""

from __future__ import annotations

import pytest

from mindroom.config.approval import ToolApprovalConfig
from mindroom.config.loading import parse_config_text
from mindroom.config.main import AgentConfig, Config
from mindroom.config.mcp import MCPServerConfig, check_mcp_agent_overrides, mcp_oauth_provider_id
from mindroom.config.tool_entries import ToolEntry, parse_tool_entries
from mindroom.errors import ConfigError


def test_tool_entries_parse_the_three_shapes_and_lift_control_keys():
    entries = parse_tool_entries(
        [
            " shell ",
            {"duckduckgo": {"fixed_max_results": 5, "defer": True}},
            {"name": "mcp_time", "overrides": {"call_timeout_seconds": 3}, "defer": True, "initial": True},
            {"reasoning": None},
        ]
    )

    assert [(e.name, dict(e.overrides), e.defer, e.initial) for e in entries] == [
        ("shell", {}, False, False),
        ("duckduckgo", {"fixed_max_results": 5}, True, False),
        ("mcp_time", {"call_timeout_seconds": 3}, True, True),
        ("reasoning", {}, False, False),
    ]


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (["a", "a"], "listed twice"),
        ([{"a": {"initial": True}}], "initial: true needs defer"),
        ([{"name": "a", "overrides": {"defer": True}}], "beside `overrides`"),
        ([{"name": "a", "extra": 1}], "unknown keys"),
        ([{"a": 3}], "must be a mapping"),
        ([{"a": {}, "b": {}}], "a single `name: {settings}` mapping"),
        (["  "], "non-empty"),
        ([{"a": {"defer": "yes"}}], "defer must be true or false"),
    ],
)
def test_tool_entries_refuse_bad_entries_naming_the_problem(raw, problem):
    with pytest.raises(ValueError, match=problem):
        parse_tool_entries(raw)


def test_agent_config_keeps_names_in_tools_and_settings_in_tool_entries():
    agent = AgentConfig(display_name="A", tools=["shell", {"reasoning": {"enable_analyze": False}}])

    assert agent.tools == ["shell", "reasoning"]
    assert agent.tool_entries()[1] == ToolEntry("reasoning", agent.tool_entries()[1].overrides)
    assert dict(agent.tool_entries()[1].overrides) == {"enable_analyze": False}
    # A change of settings is a change of the agent (a reload rebuilds its tools).
    assert agent != AgentConfig(display_name="A", tools=["shell", {"reasoning": {"enable_analyze": True}}])
    assert agent.model_copy(update={"role": "r"}).tool_entries() == agent.tool_entries()


def test_config_reports_a_bad_tool_entry_with_its_path_and_line():
    text = "agents:\n  a:\n    display_name: A\n    tools: [shell, {reasoning: 3}]\n"

    with pytest.raises(ConfigError) as caught:
        parse_config_text(text, "config.yaml", env={})

    assert "agents.a" in str(caught.value) and "tools[1]" in str(caught.value)


@pytest.mark.parametrize(
    ("server", "problem"),
    [
        ({"transport": "stdio"}, "needs command"),
        ({"transport": "stdio", "command": "x", "url": "http://h"}, "for remote servers"),
        ({"transport": "sse", "url": "http://h", "command": "x"}, "for stdio servers"),
        ({"transport": "streamable-http"}, "needs url"),
        ({"transport": "stdio", "command": "x", "auth": {"type": "oauth"}}, "auth .OAuth. is for remote servers"),
        ({"transport": "sse", "url": "http://h", "auth": {"type": "oauth", "discovery": "manual"}}, "token_url"),
        ({"transport": "sse", "url": "http://h", "auth": {"type": "oauth", "provider_id": "a-b"}}, "provider_id"),
        ({"transport": "sse", "url": "http://h", "auth": {"type": "oauth", "scopes_": ["a"]}}, "scopes_"),
        ({"transport": "sse", "url": "http://h", "auth": {"type": "oauth2"}}, "auth.type"),
        ({"transport": "stdio", "command": "x", "include_tools": ["a"], "exclude_tools": ["a"]}, "both name"),
        ({"transport": "stdio", "command": "x", "tool_prefix": "a-b"}, "tool_prefix"),
        ({"transport": "stdio", "command": "x", "timeout": 3}, "Extra inputs"),
        ({"transport": "stdio", "command": "x", "call_timeout_seconds": 0}, "greater than 0"),
    ],
)
def test_mcp_server_config_follows_the_transport_matrix(server, problem):
    with pytest.raises(ValueError, match=problem):
        MCPServerConfig.model_validate(server)


def test_mcp_server_config_takes_oauth_on_remote_servers_with_mindrooms_provider_id():
    plain = MCPServerConfig.model_validate({"transport": "sse", "url": "https://h/sse", "auth": {"type": "oauth"}})
    named = MCPServerConfig.model_validate(
        {"transport": "streamable-http", "url": "https://h/mcp", "auth": {"type": "oauth", "provider_id": "notes"}}
    )
    kept = MCPServerConfig.model_validate(
        {"transport": "streamable-http", "url": "https://h/mcp", "auth": {"type": "oauth", "provider_id": "mcp_x"}}
    )

    assert plain.auth is not None and named.auth is not None and kept.auth is not None
    assert plain.auth.discovery == "auto" and plain.auth.dynamic_client_registration
    assert mcp_oauth_provider_id("docs", plain.auth) == "mcp_docs"
    assert mcp_oauth_provider_id("docs", named.auth) == "mcp_notes"
    assert mcp_oauth_provider_id("docs", kept.auth) == "mcp_x"


def test_mcp_server_config_defaults_are_mindrooms():
    server = MCPServerConfig.model_validate({"transport": "stdio", "command": "x", "include_tools": [" a ", ""]})

    assert (server.startup_timeout_seconds, server.call_timeout_seconds, server.max_concurrent_calls) == (20, 120, 1)
    assert server.auto_reconnect and server.enabled and not server.required
    assert server.include_tools == ["a"]


def test_config_mcp_servers_and_tool_approval_accept_null_and_check_ids():
    config = Config.model_validate({"mcp_servers": None, "tool_approval": None})
    assert config.mcp_servers == {} and config.tool_approval == ToolApprovalConfig()

    with pytest.raises(ValueError, match="letters, digits and underscores"):
        Config.model_validate({"mcp_servers": {"my-server": {"transport": "stdio", "command": "x"}}})


def test_mcp_agent_overrides_take_only_filters_and_a_call_timeout():
    assert check_mcp_agent_overrides({"include_tools": ["a"], "call_timeout_seconds": 5}) == []
    problems = check_mcp_agent_overrides(
        {"include_tools": ["a"], "exclude_tools": ["a"], "call_timeout_seconds": True, "tool_prefix": "x"}
    )
    assert len(problems) == 3
    assert any("tool_prefix" in p for p in problems) and any("overlap" in p for p in problems)


def test_tool_approval_first_matching_rule_wins_and_rules_have_one_decider():
    approval = ToolApprovalConfig.model_validate(
        {
            "default": "require_approval",
            "rules": [
                {"match": "time_*", "action": "auto_approve"},
                {"match": "time_convert*", "action": "require_approval", "timeout_days": 0.5},
            ],
        }
    )

    assert approval.rule_for("time_convert_time").action == "auto_approve"
    assert approval.rule_for("run_shell_command") is None
    with pytest.raises(ValueError, match="exactly one of action or script"):
        ToolApprovalConfig.model_validate({"rules": [{"match": "x"}]})
    with pytest.raises(ValueError, match="timeout_days"):
        ToolApprovalConfig.model_validate({"timeout_days": True})
    with pytest.raises(ValueError, match="at most"):
        ToolApprovalConfig.model_validate({"timeout_days": 40000})


def test_defaults_tools_join_each_agent_with_the_agents_settings_winning():
    config = Config.model_validate(
        {
            "defaults": {"tools": ["reasoning", {"sleep": {"enable_sleep": True, "all": False}}]},
            "agents": {
                "a": {
                    "display_name": "A",
                    "tools": ["shell", {"sleep": {"all": True, "enable_sleep": "__MINDROOM_INHERIT__"}}],
                },
                "b": {"display_name": "B", "tools": ["shell"], "include_default_tools": False},
            },
        }
    )

    a = config.agents["a"]
    assert a.tools == ["shell", "sleep", "reasoning"]
    assert {e.name: dict(e.overrides) for e in a.tool_entries()} == {
        "shell": {},
        "sleep": {"all": True},
        "reasoning": {},
    }
    assert config.agents["b"].tools == ["shell"]
    with pytest.raises(ValueError, match=r"defaults\.tools"):
        Config.model_validate({"defaults": {"tools": ["x", "x"]}})


@pytest.mark.parametrize(
    ("section", "where"),
    [
        ("tools:\n  shell:\n    readonly_paths: [/srv/ok, data/relative]\n", "tools.shell.readonly_paths"),
        ("tools:\n  mcp:\n    readonly_paths: [/srv/ok, data/relative]\n", "tools.mcp.readonly_paths"),
    ],
)
def test_sandbox_readonly_paths_must_be_absolute_for_the_shell_and_stdio_mcp_servers(section: str, where: str):
    with pytest.raises(ConfigError) as refused:
        parse_config_text("agents: {}\n" + section, "config.yaml", env={})

    message = str(refused.value)
    assert "readonly_paths must be absolute paths, not ['data/relative']" in message
    assert where in message
