"""`config_manager` and `self_config`: for administrators only (the person the turn speaks for, not the agent), and
only keys chat may set, as `!config set`; a batch with one key chat may not set changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.tool_system.builtin.config_manager import get_info, manage_agent, manage_config, manage_team
from mindroom.tool_system.builtin.parts import DaemonParts, ToolCaller, provide_daemon_parts
from mindroom.tool_system.builtin.self_config import get_own_config, update_own_config
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context

pytestmark = pytest.mark.asyncio

ADMIN, GUEST = "@admin:hs", "@guest:hs"
CONFIG = Config.model_validate(
    {
        "administrators": [ADMIN],
        "models": {"default": {"provider": "openai", "id": "gpt-x"}, "cheap": {"provider": "openai", "id": "mini"}},
        "agents": {
            "helper": {"display_name": "Helper", "role": "Helps.", "tools": ["self_config"], "password": "hunter22"},
            "writer": {"display_name": "Writer"},
        },
        "teams": {"crew": {"display_name": "Crew", "role": "All", "agents": ["helper", "writer"]}},
    }
)


class Settings:
    """Keeps what it is asked to set; the administrator check is the config's, as the daemon's desk makes it."""

    def __init__(self) -> None:
        self.changed: list[tuple[str, str, Any, bool]] = []

    def administrator(self, caller: ToolCaller) -> bool:
        return caller.requester_id in caller.config.administrators

    async def change(self, caller: ToolCaller, key: str, value: Any, *, dry_run: bool = False) -> list[str]:
        if key.endswith(".model") and value not in CONFIG.models:
            return [f"unknown model {value!r}"]
        self.changed.append((caller.requester_id, key, value, dry_run))
        return []

    async def effective(self) -> Any:
        raise AssertionError("not asked in these tests")


@pytest.fixture
def settings(tmp_path: Path) -> Iterator[Settings]:
    settings = Settings()
    withdraw = provide_daemon_parts(tmp_path, DaemonParts(settings=settings))  # type: ignore[arg-type]
    yield settings
    withdraw()


def turn(tmp_path: Path, person: str):
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path, {})
    return bind_runtime_context(
        ToolRuntimeContext(None, "helper", "!r:hs", "$t", person, config=CONFIG, runtime_paths=paths)
    )


async def test_self_config_changes_settable_keys_for_an_administrator(tmp_path, settings):
    with turn(tmp_path, ADMIN):
        answer = await update_own_config(role="Helps with tides.", model="cheap", markdown=False)

    assert answer.startswith("✅ Configuration set from chat (in effect once this answer is sent):")
    assert settings.changed == [
        (ADMIN, "agents.helper.role", "Helps with tides.", False),
        (ADMIN, "agents.helper.model", "cheap", False),
        (ADMIN, "agents.helper.markdown", False, False),
    ]


async def test_self_config_refuses_a_person_who_is_not_an_administrator_whatever_the_agent_says(tmp_path, settings):
    with turn(tmp_path, GUEST):
        answer = await update_own_config(role="I am an administrator now.")
        shown = await get_own_config()

    assert "requires the person you act for to be an administrator" in answer and "NOT applied" in answer
    assert "administrator" in shown and "Helper" not in shown
    assert settings.changed == []


@pytest.mark.parametrize(
    "given",
    [{"tools": ["shell"]}, {"rooms": ["lobby"]}, {"context_files": ["notes.md"]}, {"include_default_tools": False}],
)
async def test_self_config_refuses_the_operators_keys_whole(tmp_path, settings, given):
    with turn(tmp_path, ADMIN):
        answer = await update_own_config(role="fine", **given)

    assert "cannot be changed from chat" in answer and "NOT applied" in answer
    assert settings.changed == []


async def test_self_config_shows_its_config_with_secrets_hidden(tmp_path, settings):
    with turn(tmp_path, ADMIN):
        shown = await get_own_config()

    assert "display_name: Helper" in shown and "hunter22" not in shown


async def test_config_manager_patches_only_settable_keys_and_adds_nothing(tmp_path, settings):
    near_miss = [{"op": "replace", "path": "/agents/helper/model_extra", "value": "x"}]
    with turn(tmp_path, ADMIN):
        patched = await manage_config(
            "patch", changes=[{"op": "replace", "path": "/room_models/lobby", "value": "cheap"}]
        )
        dry = await manage_config("patch", changes=[{"op": "add", "path": "timezone", "value": "UTC"}], dry_run=True)
        refused = await manage_config("patch", changes=near_miss)
        endpoint = await manage_config(
            "patch", changes=[{"op": "replace", "path": "/models/default/base_url", "value": "http://evil"}]
        )
        removed = await manage_config("patch", changes=[{"op": "remove", "path": "/agents/writer"}])
        created = await manage_agent("create", "spy", display_name="Spy")
        updated = await manage_agent("update", "writer", instructions=["Be brief."])
        tooled = await manage_agent("update", "writer", tools=["shell"])
        failed = await manage_agent("update", "writer", model="nonexistent")
        team = await manage_team("crew", "Crew", "Everyone", ["helper", "writer"])
        new_team = await manage_team("gang", "Gang", "New", ["helper"])
        members = await manage_team("crew", "Crew", "All", ["helper"])

    assert patched.startswith("✅") and dry.startswith("✅ Configuration checked (dry run")
    for answer in (refused, endpoint, removed, created, tooled, new_team, members):
        assert "NOT applied" in answer, answer
    assert "unknown model" in failed
    assert team.startswith("✅") and updated.startswith("✅")
    assert settings.changed == [
        (ADMIN, "room_models.lobby", "cheap", False),
        (ADMIN, "timezone", "UTC", True),
        (ADMIN, "agents.writer.instructions", ["Be brief."], False),
        (ADMIN, "teams.crew.role", "Everyone", False),
    ]


async def test_config_manager_refuses_non_administrators_and_informs_anyone(tmp_path, settings):
    with turn(tmp_path, GUEST):
        patched = await manage_config("patch", changes=[{"op": "replace", "path": "/timezone", "value": "UTC"}])
        inspected = await manage_config("inspect", path="/agents")
        secret = await get_info("agent_config", name="helper")
        models = await get_info("available_models")

    assert "administrator" in patched and "administrator" in inspected and "administrator" in secret
    assert "`cheap`: openai mini" in models
    assert settings.changed == []
