"""Every name of MindRoom's tool catalogue is known here: an agno toolkit, a built-in group, a tool that comes
later (the agent runs without it, saying so), or a name not offered (a config error giving the reason)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mindroom.ai.tools import foreign_tool_specs
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.tool_system.builtin_groups import BUILTIN_PROVIDERS
from mindroom.tool_system.catalog import ToolCatalogError, build_tool_catalog
from mindroom.tool_system.named_tools import named_tools
from mindroom.tool_system.spec import AgentToolEnvironment
from mindroom.tool_system.tool_names import LATER, NOT_OFFERED
from mindroom.tool_system.toolkit_table import AGNO_TOOLKITS

RECORDED = Path(__file__).resolve().parents[1] / "config" / "data" / "mindroom-2026.10-tools.txt"
GROUPS = {provider.name for provider in BUILTIN_PROVIDERS}


def mindroom_catalogue() -> set[str]:
    """MindRoom 2026.10's tool names, as recorded in the repository; when `MINDROOM_REFERENCE` names a MindRoom
    install (a venv), the record is checked against its `tools_metadata.json` too."""
    recorded = {line.strip() for line in RECORDED.read_text().splitlines() if line.strip() and not line.startswith("#")}
    reference = os.environ.get("MINDROOM_REFERENCE")
    if reference:
        for metadata in Path(reference).glob("lib/python3*/site-packages/mindroom/tools_metadata.json"):
            assert {tool["name"] for tool in json.loads(metadata.read_text())["tools"]} == recorded
    return recorded


def catalog_for(tools: list, tmp_path: Path, env: dict | None = None):
    config = Config.model_validate({"agents": {"a": {"display_name": "A", "tools": tools}}})
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path / "data", env or {})
    return build_tool_catalog(config, [], adapt=foreign_tool_specs, runtime_paths=paths)


def test_tool_names_every_name_of_mindroom_catalogue_is_known():
    catalogue = mindroom_catalogue()
    kinds = {"agno toolkit": set(AGNO_TOOLKITS), "later": set(LATER), "not offered": set(NOT_OFFERED), "group": GROUPS}

    assert len(catalogue) == 155
    assert sorted(catalogue - set().union(*kinds.values())) == []
    for kind, names in kinds.items():  # each name is one thing here (a group takes over a name that comes later)
        for other, others in kinds.items():
            overlap = names & others if {kind, other} != {"later", "group"} else set()
            assert kind == other or not overlap, (kind, other, overlap)


def test_tool_names_the_hosted_services_names_are_refused_with_the_reason():
    for name in ("desktop", "egress_credentials", "approved_egress", "agent_vault_access", "openclaw_compat"):
        assert NOT_OFFERED[name].startswith("it exists for MindRoom's hosted service"), name
    for name in ("thread_summary", "thread_tags", "thread_resolution", "thread_model", "thread_move"):
        assert name not in LATER  # built in
    assert LATER["usage_stats"].capability == "usage and budgets"


def test_tool_names_an_agent_naming_a_tool_not_offered_is_refused_naming_it_and_why(tmp_path: Path):
    with pytest.raises(ToolCatalogError) as caught:
        catalog_for(["calculator", "desktop", "openclaw_compat"], tmp_path)

    problems = caught.value.problems
    assert problems[0].startswith("agents.a.tools: 'desktop' is not offered here: it exists for MindRoom's hosted")
    assert "name the tools themselves (shell, duckduckgo, website" in problems[1]

    with pytest.raises(ToolCatalogError) as near:  # a name with a suffix is not MindRoom's: unknown, as before
        catalog_for(["desktop_tools"], tmp_path)
    assert near.value.problems == ["agents.a.tools: unknown tool 'desktop_tools'"]


def test_tool_names_a_tool_that_comes_later_leaves_the_agent_running_without_it(tmp_path: Path):
    catalog = catalog_for(["google_scholar", "calculator", "external_trigger_manager"], tmp_path)

    named = ["google_scholar", "calculator", "external_trigger_manager"]
    tools = catalog.tools_for(named, AgentToolEnvironment("a", tmp_path))
    assert [spec.name for spec in tools] == ["calculate"]
    assert [(u.tool, u.reason, u.fix) for u in catalog.unavailable] == [
        ("google_scholar", "comes with a toolkit of its own (agno 3.1 has none)", "meanwhile: arxiv or pubmed"),
        ("external_trigger_manager", "comes with external triggers", "nothing meanwhile"),
    ]
    assert catalog.unavailable[1].describe() == (
        "agents.a.tools: 'external_trigger_manager' cannot run here (comes with external triggers); the agent runs"
        " without it"
    )


def test_tool_names_matrix_voice_message_is_a_built_in_group_now(tmp_path: Path):
    catalog = catalog_for(["matrix_voice_message"], tmp_path)

    tools = catalog.tools_for(["matrix_voice_message"], AgentToolEnvironment("a", tmp_path))
    assert [spec.name for spec in tools] == ["matrix_voice_message"] and catalog.unavailable == ()
    assert "matrix_voice_message" not in LATER


def test_tool_names_a_group_registered_under_a_later_name_takes_it_over():
    config = Config.model_validate({"agents": {"a": {"display_name": "A", "tools": ["scheduler", "todo"]}}})

    before = named_tools(config, {}, set())
    after = named_tools(config, {}, {"scheduler"})  # as when a group named scheduler is registered

    assert [u.tool for u in before.unavailable] == ["scheduler", "todo"]
    assert [u.tool for u in after.unavailable] == ["todo"] and after.absent == ("todo",)
