"""What published MindRoom plugins' code and their own test suites build and compare, written as they write it.

Each test stands for one plugin's use (named in its docstring): the shapes are MindRoom 2026.10's.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from mindroom.constants import RuntimePaths, resolve_config_relative_path
from mindroom.hooks import (
    EVENT_MESSAGE_ENRICH,
    EnrichmentItem,
    HookRegistry,
    MessageEnrichContext,
    MessageEnvelope,
    hook,
)
from mindroom.hooks.decorators import get_hook_metadata
from mindroom.hooks.execution import emit_collect
from mindroom.plugins import load_plugin_dir
from mindroom.tool_system.skills import list_skill_listings
from tests.hooks.support import stub_plugin

DOC = (Path(__file__).resolve().parents[2] / "docs" / "plugins.md").read_text(encoding="utf-8")


def _envelope() -> MessageEnvelope:
    return MessageEnvelope(
        source_event_id="$event",
        room_id="r1",
        thread_id="t1",
        resolved_thread_id="t1",
        requester_id="@user:localhost",
        sender_id="@user:localhost",
        body="hi",
        attachment_ids=(),
        mentioned_agents=(),
        agent_name="code",
        source_kind="message",
    )


def test_published_runtime_paths_built_with_mindroom_keywords(tmp_path):
    """openviking's, thread-export's and agent-vault-bridge's tests build `RuntimePaths` so."""
    paths = RuntimePaths(
        config_path=tmp_path / "conf" / "config.yaml",
        config_dir=tmp_path / "elsewhere",
        env_path=tmp_path / "secrets.env",
        storage_root=tmp_path / "mindroom_data",
        process_env={"REGION": "from-process"},
        env_file_values={"REGION": "from-file", "BUCKET": "from-file"},
    )

    assert paths.storage_root == tmp_path / "mindroom_data"
    assert (paths.config_dir, paths.env_path, paths.control_state_root) == (
        tmp_path / "elsewhere",
        tmp_path / "secrets.env",
        None,
    )
    # The process's environment wins over the .env file's, as in MindRoom.
    assert (paths.env("REGION"), paths.env("BUCKET")) == ("from-process", "from-file")
    assert resolve_config_relative_path("notes/${BUCKET}", paths) == (tmp_path / "elsewhere/notes/from-file").resolve()


def test_published_runtime_paths_keep_this_daemons_shape(tmp_path):
    config = tmp_path / "config.yaml"
    paths = RuntimePaths(config, tmp_path / "data", {"A": "1"})

    assert (paths.config_dir, paths.env_path, paths.env("A")) == (tmp_path, tmp_path / ".env", "1")
    assert (dict(paths.process_env), dict(paths.env_file_values)) == ({}, {})
    assert paths == RuntimePaths(config_path=config, storage_root=tmp_path / "data", env_values={"A": "1"})


@pytest.mark.asyncio
async def test_published_enrich_context_takes_target_member_names():
    """openviking's tests build `MessageEnrichContext(..., target_member_names=None)`."""
    seen = []

    @hook(EVENT_MESSAGE_ENRICH)
    async def members(ctx):
        seen.append(ctx.target_member_names)
        return EnrichmentItem(key="k", text="t")

    single = MessageEnrichContext(envelope=_envelope(), target_entity_name="code", target_member_names=None)
    team = MessageEnrichContext(envelope=_envelope(), target_entity_name="team", target_member_names=("a", "b"))
    registry = HookRegistry.from_plugins([stub_plugin("p", [members])])

    await emit_collect(registry, EVENT_MESSAGE_ENRICH, single)
    await emit_collect(registry, EVENT_MESSAGE_ENRICH, team)

    assert seen == [None, ("a", "b")]
    assert MessageEnrichContext(envelope=_envelope()).target_member_names is None


def test_published_hook_metadata_compares_with_tuples():
    """thread-export's and openviking's tests compare `get_hook_metadata(fn).agents` with a tuple."""

    @hook("bot:ready", agents=["router"])
    async def queue_initial_full_pass(ctx):
        pass

    @hook("message:received")
    async def queue_room_on_message(ctx):
        pass

    assert get_hook_metadata(queue_initial_full_pass).agents == ("router",)
    assert get_hook_metadata(queue_room_on_message).agents is None


def test_published_skill_listings_of_a_plugins_skill_folder(tmp_path):
    """workloop's tests list the skills of its `skills/` folder."""
    skills = tmp_path / "skills"
    for folder, text in {
        "workloop-templates": "---\nname: workloop-templates\ndescription: Templates for work plans.\n---\nUse them.\n",
        "Beta": "# Beta skill\nbody\n",
        "broken": "---\nname: has spaces\n---\n",
    }.items():
        (skills / folder).mkdir(parents=True)
        (skills / folder / "SKILL.md").write_text(text)
    override = tmp_path / "override" / "workloop-templates"
    override.mkdir(parents=True)
    (override / "SKILL.md").write_text("---\nname: workloop-templates\ndescription: Mine.\n---\n")

    listings = list_skill_listings([skills])
    overridden = list_skill_listings([skills, tmp_path / "override"])

    assert [(listing.name, listing.path) for listing in listings] == [
        ("Beta", skills / "Beta" / "SKILL.md"),
        ("workloop-templates", skills / "workloop-templates" / "SKILL.md"),
    ]
    assert [(listing.description, listing.origin) for listing in listings] == [
        ("Beta skill", "custom"),
        ("Templates for work plans.", "custom"),
    ]
    assert [listing.description for listing in overridden] == ["Beta skill", "Mine."]
    assert list_skill_listings() == list_skill_listings([]) == []


@pytest.mark.skipif(sys.version_info < (3, 12), reason="the `type` statement is Python 3.12 syntax")
def test_published_plugin_with_type_statements_loads_on_python_312(tmp_path):
    """thread-goal's helper module declares its callable types with `type` statements."""
    folder = tmp_path / "thread-goal"
    folder.mkdir()
    (folder / "mindroom.plugin.json").write_text(json.dumps({"name": "thread-goal", "hooks_module": "hooks.py"}))
    (folder / "state.py").write_text(
        textwrap.dedent(
            """
            from collections.abc import Awaitable, Callable
            from typing import Any

            type RoomStateQuerier = Callable[[str, str, str | None], Awaitable[dict[str, Any] | None]]
            """
        )
    )
    (folder / "hooks.py").write_text(
        textwrap.dedent(
            """
            from mindroom.hooks import EnrichmentItem, MessageEnrichContext, hook
            from .state import RoomStateQuerier

            @hook(event="message:enrich", name="thread-goal-context", priority=40, timeout_ms=1000)
            async def inject_thread_goal(ctx: MessageEnrichContext) -> list[EnrichmentItem]:
                return [EnrichmentItem(key="thread_goal", text=RoomStateQuerier.__name__, cache_policy="stable")]
            """
        )
    )

    plugin = load_plugin_dir(folder)

    (callback,) = plugin.discovered_hooks
    assert get_hook_metadata(callback).hook_name == "thread-goal-context"


@pytest.mark.parametrize(
    "module", ["mindroom.config.entity_view", "mindroom.runtime_resolution", "mindroom.thread_export"]
)
def test_published_modules_left_out_are_named_with_the_reason_in_the_docs(module):
    listed = DOC.split("### Compatibility list", 1)[1]
    reasons = listed.split("Not provided, because", 1)[1].split("Not provided either", 1)[0]
    (entry,) = [item for item in reasons.split("\n- ") if item.startswith(f"`{module}`: ")]
    assert len(entry.split()) > 30  # a reason, not a name


def test_published_skill_listings_are_in_the_compatibility_list():
    listed = DOC.split("### Compatibility list", 1)[1].split("Not provided, because", 1)[0]
    assert "- `mindroom.tool_system.skills`: `list_skill_listings(roots)`" in listed
