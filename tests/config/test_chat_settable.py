"""What chat may change: the allowlist of key paths, its near misses, and mappings set at a parent key."""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from mindroom.config.chat_settable import CHAT_SETTABLE, chat_leaves, chat_refusal, missing_entry, parse_key_path
from mindroom.config.main import Config

ALLOWED = [
    ("agents.helper.instructions", ["Be brief."]),
    ("agents.helper.model", "fast"),
    ("agents.helper.display_name", "Helper"),
    ("agents.helper.role", "answers questions"),
    ("agents.helper.num_history_runs", 3),
    ("agents.helper.markdown", False),
    ("agents.helper.thread_mode", "room"),
    ("teams.crew.model", "fast"),
    ("router.model", "fast"),
    ("room_models.lobby", "fast"),
    ("defaults.num_history_runs", 3),
    ("defaults.thread_mode", "room"),
    ("timezone", "Europe/Berlin"),
]

REFUSED = [
    "agents.helper.instructions_file",
    "agents.helper.instructions[0]",
    "agents.helper.tools",
    "agents.helper.tools[0]",
    "agents.helper.rooms",
    "agents.helper.rooms[0]",
    "agents.helper.password",
    "agents.helper.plugins",
    "agents.helper.skills",
    "agents.helper.knowledge_bases",
    "agents.helper.memory_backend",
    "agents.helper.delegate_to",
    "agents.helper.accept_invites",
    "agents.helper.include_default_tools",
    "agents.helper.model.extra",
    "agents.model",
    "teams.crew.agents",
    "router.password",
    "router.plugins",
    "models.default.id",
    "models.default.host",
    "models.default.host_extra",
    "models.default.api_key",
    "models.default.extra_kwargs",
    "models.default.extra_kwargs.base_url",
    "models.default.extra_kwargs.client_params",
    "models.evil",
    "defaults.tools",
    "defaults.max_attachment_bytes",
    "defaults.max_concurrent_turns_per_agent",
    "defaults.num_history_runs_extra",
    "tools.mcp.sandbox",
    "tools.shell.sandbox",
    "tools.shell.allowed_commands",
    "tools.shell.network",
    "mcp_servers.x",
    "mcp_servers.x.command",
    "plugins",
    "plugins[0]",
    "tool_approval.rules[0].script",
    "knowledge_bases.docs.path",
    "knowledge_bases.docs.git",
    "memory.backend",
    "storage.database_url",
    "authorization.global_users",
    "authorization.config_command_enabled",
    "administrators",
    "room_defaults.invite_users",
    "rooms.lobby.thread_mode",
    "admin_room",
    "voice.model",
    "timezone_extra",
]


@pytest.mark.parametrize(("key", "value"), ALLOWED)
def test_chat_settable_keys_are_allowed(key, value):
    assert chat_refusal(key, value) is None
    assert chat_leaves(key, value) == ((parse_key_path(key), value),)


@pytest.mark.parametrize("key", REFUSED)
def test_chat_settable_refuses_every_other_key_with_the_reason(key):
    refusal = chat_refusal(key, "http://127.0.0.1:9/v1")

    assert refusal == (
        f"`{key}` cannot be changed from chat: endpoints, paths, commands, plugins, sandboxes and credentials"
        " are the operator's; edit config.yaml"
    )


def test_chat_settable_sets_a_mapping_at_a_parent_only_when_every_leaf_is_allowed():
    allowed = chat_leaves("agents.helper", {"instructions": ["Be brief."], "markdown": False})
    whole = chat_leaves("defaults", {"num_history_runs": 3})

    assert allowed == (
        (("agents", "helper", "instructions"), ["Be brief."]),
        (("agents", "helper", "markdown"), False),
    )
    assert whole == ((("defaults", "num_history_runs"), 3),)
    assert chat_refusal("agents.helper", {"instructions": ["Be brief."], "tools": ["shell"]}) == (
        "`agents.helper` cannot be changed from chat: it sets `agents.helper.tools`; endpoints, paths, commands,"
        " plugins, sandboxes and credentials are the operator's; edit config.yaml"
    )
    assert "`defaults.tools`" in str(chat_refusal("defaults", {"num_history_runs": 3, "tools": ["shell"]}))
    assert "`agents.helper.rooms`" in str(chat_refusal("agents", {"helper": {"rooms": ["lobby"]}}))
    # Nothing to set, or not a mapping: a parent is never replaced whole.
    assert chat_refusal("defaults", {}) is not None
    assert chat_refusal("agents.helper", "Helper") is not None
    assert chat_refusal("models", {"default": {"host": "http://127.0.0.1:9/v1"}}) is not None


def test_chat_settable_refuses_a_key_that_is_not_a_key_path():
    assert "not a key path" in str(chat_refusal("agents..helper", "x"))


def test_chat_settable_never_adds_an_agent_or_a_team_but_may_name_a_new_room():
    document = {"agents": {"helper": {"display_name": "Helper"}}}

    assert missing_entry(("agents", "helper", "display_name"), document) is None
    assert missing_entry(("defaults", "markdown"), {}) is None
    assert missing_entry(("room_models", "newroom"), document) is None
    assert missing_entry(("agents", "ghost", "display_name"), document) == (
        "`agents.ghost.display_name`: config.yaml has no agents entry 'ghost'; chat never adds one"
    )
    assert missing_entry(("teams", "crew", "model"), document) is not None


def _field_type(annotation: Any, part: str) -> Any:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        annotation = next(arg for arg in typing.get_args(annotation) if arg is not type(None))
        origin = typing.get_origin(annotation)
    if part == "*":
        assert origin is dict, f"{part} under {annotation}"
        return typing.get_args(annotation)[1]
    assert isinstance(annotation, type) and issubclass(annotation, BaseModel), f"{part} under {annotation}"
    return annotation.model_fields[part].annotation


@pytest.mark.parametrize("pattern", CHAT_SETTABLE)
def test_chat_settable_names_only_keys_config_has(pattern):
    annotation: Any = Config
    for part in pattern.split("."):
        annotation = _field_type(annotation, part)


def test_chat_settable_keys_are_each_listed_in_the_docs():
    docs = (Path(__file__).parents[2] / "docs" / "configuration.md").read_text()
    section = docs.partition("## Settings from chat")[2].partition("\n## ")[0]

    assert [pattern for pattern in CHAT_SETTABLE if f"`{pattern}`" not in section] == []
