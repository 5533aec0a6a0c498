"""Checked plugin settings: a JSON Schema in the manifest or a pydantic model in code; a config whose settings do
not fit is refused at start and reload (which keeps the last good; `config validate`: tests/cli), and hooks get
the validated values."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from mindroom.bots.directory import Directory
from mindroom.bots.runtime import LiveCell
from mindroom.config.environment import DaemonEnvironment
from mindroom.constants import RuntimePaths
from mindroom.daemon.live import build_live_state
from mindroom.daemon.reload import ReloadCoordinator
from mindroom.daemon.start_check import check_start
from mindroom.daemon.startup.phases import prepare_live_state
from mindroom.errors import ConfigError, ManifestError
from mindroom.hooks import EVENT_MESSAGE_RECEIVED, MessageReceivedContext
from mindroom.hooks.execution import emit
from mindroom.plugins.loader import load_plugin_dir
from mindroom.plugins.settings import PluginSettingsError
from mindroom.state.sqlite.rooms import SqliteRoomMemory

SCHEMA = {
    "type": "object",
    "properties": {
        "limit": {"type": "integer", "minimum": 1, "default": 10},
        "api_key": {"type": "string"},
        "mode": {"enum": ["strict", "lenient"]},
    },
    "required": ["api_key"],
    "additionalProperties": False,
}

REPORTER = """
import json
from mindroom.hooks import hook

@hook("message:received")
async def report(ctx):
    with open(OUT, "a") as out:
        out.write(json.dumps(ctx.settings) + "\\n")
"""

MODEL_PLUGIN = """
from pydantic import BaseModel, ConfigDict
from mindroom.hooks import hook

class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    limit: int = 5
    rooms: list[str] = []

settings_model = Settings

@hook("message:received")
async def report(ctx):
    import json

    with open(OUT, "a") as out:
        out.write(json.dumps(ctx.settings) + "\\n")
"""


def plugin(root: Path, name: str, *, schema: dict | None = None, source: str = REPORTER) -> Path:
    folder = root / "plugins" / name
    folder.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {"name": name, "hooks_module": "hooks.py"}
    if schema is not None:
        manifest["settings_schema"] = schema
    (folder / "mindroom.plugin.json").write_text(json.dumps(manifest))
    (folder / "hooks.py").write_text(source.replace("OUT", repr(str(root / "seen.jsonl"))))
    return folder


def deploy(root: Path, entries: list[Any]) -> RuntimePaths:
    config = root / "config.yaml"
    config.write_text(json.dumps({"agents": {"helper": {"display_name": "Helper"}}, "plugins": entries}))
    return RuntimePaths(config_path=config, storage_root=root / "data")


async def settings_seen(registry: Any, root: Path) -> list[dict]:
    """What the plugin's hook read as `ctx.settings` in one emission."""
    seen = root / "seen.jsonl"
    seen.unlink(missing_ok=True)
    await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())
    return [json.loads(line) for line in seen.read_text().splitlines()] if seen.exists() else []


@pytest.mark.asyncio
async def test_settings_schema_fills_defaults_and_hooks_get_the_values(tmp_path: Path) -> None:
    plugin(tmp_path, "quota", schema=SCHEMA)
    paths = deploy(tmp_path, [{"path": "plugins/quota", "settings": {"api_key": "k"}}])

    live = build_live_state(paths, previous=None).live

    assert await settings_seen(live.registry, tmp_path) == [{"api_key": "k", "limit": 10}]


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"api_key": "k", "limit": "10"}, "plugins[1].settings.limit: must be of type integer (plugin 'quota')"),
        ({"api_key": "k", "limit": 0}, "plugins[1].settings.limit: does not satisfy minimum: 1 (plugin 'quota')"),
        ({"api_key": "k", "mode": "strictly"}, "plugins[1].settings.mode: must be one of 'strict', 'lenient'"),
        ({"api_key": "k", "limits": 3}, "plugins[1].settings: Additional properties are not allowed ('limits'"),
        ({}, "plugins[1].settings: 'api_key' is a required property (plugin 'quota')"),
        ({"api_key": 12345678}, "plugins[1].settings.api_key: must be of type string (plugin 'quota')"),
    ],
)
def test_settings_schema_misfit_is_refused_with_its_key_path_and_plugin(
    tmp_path: Path, settings: dict, problem: str
) -> None:
    plugin(tmp_path, "other")
    plugin(tmp_path, "quota", schema=SCHEMA)
    paths = deploy(tmp_path, ["plugins/other", {"path": "plugins/quota", "settings": settings}])

    with pytest.raises(PluginSettingsError) as caught:
        build_live_state(paths, previous=None)

    assert len(caught.value.problems) == 1
    assert caught.value.problems[0].startswith(problem)
    assert "12345678" not in str(caught.value)  # a value is never quoted: it may be a secret


@pytest.mark.asyncio
async def test_settings_model_in_code_converts_fills_and_refuses(tmp_path: Path) -> None:
    plugin(tmp_path, "rooms", source=MODEL_PLUGIN)
    good = deploy(tmp_path, [{"path": "plugins/rooms", "settings": {"limit": "7"}}])

    live = build_live_state(good, previous=None).live

    assert await settings_seen(live.registry, tmp_path) == [{"limit": 7, "rooms": []}]
    bad = deploy(tmp_path, [{"path": "plugins/rooms", "settings": {"limit": 7, "rooms": "!a:b", "room": []}}])
    with pytest.raises(PluginSettingsError) as caught:
        build_live_state(bad, previous=None)
    assert caught.value.problems == [
        "plugins[0].settings.rooms: Input should be a valid list (plugin 'rooms')",
        "plugins[0].settings.room: Extra inputs are not permitted (plugin 'rooms')",
    ]


def test_settings_of_a_drop_in_plugin_with_required_settings_name_its_folder(tmp_path: Path) -> None:
    plugin(tmp_path, "quota", schema=SCHEMA)  # found under plugins/, no entry gives it settings
    paths = deploy(tmp_path, [])

    with pytest.raises(PluginSettingsError) as caught:
        build_live_state(paths, previous=None)

    assert caught.value.problems[0].startswith("plugins/quota (a drop-in folder; a plugins: entry gives it settings)")
    assert "'api_key' is a required property (plugin 'quota')" in caught.value.problems[0]


@pytest.mark.parametrize("schema", [{"type": "integr"}, {"properties": {"limit": {"minimum": "one"}}}])
def test_settings_schema_that_is_not_a_schema_fails_the_manifest(tmp_path: Path, schema: dict) -> None:
    folder = plugin(tmp_path, "quota", schema=schema)

    with pytest.raises(ManifestError, match="settings_schema: not a valid JSON Schema"):
        load_plugin_dir(folder)


def test_settings_declared_twice_fails_the_plugin(tmp_path: Path) -> None:
    plugin(tmp_path, "rooms", schema=SCHEMA, source=MODEL_PLUGIN)
    paths = deploy(tmp_path, [{"path": "plugins/rooms", "settings": {"api_key": "k"}}])

    build = build_live_state(paths, previous=None)

    assert [error.cause for error in build.plugin_errors] == [
        "its settings are declared twice: settings_schema in the manifest and settings_model"
    ]


def test_settings_misfit_is_refused_at_start(tmp_path: Path) -> None:
    plugin(tmp_path, "quota", schema=SCHEMA)
    paths = deploy(tmp_path, [{"path": "plugins/quota", "settings": {"api_key": "k", "limit": -1}}])
    expected = "plugins[0].settings.limit: does not satisfy minimum: 1 (plugin 'quota')"

    checked = check_start(paths)
    environment = DaemonEnvironment(paths.config_path, paths.storage_root, {}, None)  # type: ignore[arg-type]
    with pytest.raises(ConfigError) as refused:
        asyncio.run(prepare_live_state(environment))

    assert [str(finding) for finding in checked.errors] == [expected]
    assert refused.value.problems == [expected]


@pytest.mark.asyncio
async def test_settings_misfit_on_reload_keeps_the_last_good_registry(tmp_path: Path) -> None:
    plugin(tmp_path, "quota", schema=SCHEMA)
    good = deploy(tmp_path, [{"path": "plugins/quota", "settings": {"api_key": "k", "limit": 3}}])
    cell = LiveCell(build_live_state(good, previous=None).live)
    before = cell.live
    assert await settings_seen(cell.live.registry, tmp_path) == [{"api_key": "k", "limit": 3}]

    async def apply(old: Any, changes: Any) -> None: ...

    rooms = SqliteRoomMemory(tmp_path / "data" / "rooms.db")
    directory = Directory("localhost", rooms, room_ids={})
    coordinator = ReloadCoordinator(
        cell, directory, build=lambda previous: build_live_state(good, previous=previous), apply=apply
    )
    deploy(tmp_path, [{"path": "plugins/quota", "settings": {"api_key": "k", "limit": "3"}}])

    outcome = await coordinator.reload("test")

    assert not outcome.ok
    assert "plugins[0].settings.limit: must be of type integer (plugin 'quota')" in (outcome.error or "")
    assert cell.live is before and not before.registry.superseded
    assert await settings_seen(cell.live.registry, tmp_path) == [{"api_key": "k", "limit": 3}]
