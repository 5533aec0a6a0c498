"""Start-up phases alone, on real files and SQLite: live state, run, schedules and reload, each with what it stops."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mindroom.bots.commands.table import CommandTable
from mindroom.bots.runtime import LiveState
from mindroom.config.environment import DaemonEnvironment
from mindroom.config.overrides import Override
from mindroom.daemon.reload import EntityChanges, ReloadOutcome
from mindroom.daemon.startup.phases import (
    ReloadOptions,
    build_run,
    prepare_live_state,
    start_reloading,
    start_schedules,
)
from mindroom.daemon.startup.plan import PhaseStops, Stopping
from mindroom.daemon.startup.state import StateHolder
from mindroom.daemon.watch import EnvFile
from mindroom.daemon.wiring import RunningDaemon
from mindroom.errors import ConfigError
from mindroom.state.backend import StateStores
from mindroom.tool_system.runtime_context import provided_registry
from tests.daemon.saving import saved_until_seen

pytestmark = pytest.mark.asyncio

CONFIG = """
agents:
  helper: {display_name: Helper, rooms: [lobby]}
plugins:
  - path: plugins/marker
"""

MARKER = """
from mindroom.hooks import hook

@hook("message:received")
async def mark(ctx):
    return None
"""


def _deploy(tmp_path: Path, config: str = CONFIG) -> DaemonEnvironment:
    plugin = tmp_path / "plugins" / "marker"
    plugin.mkdir(parents=True)
    (plugin / "mindroom.plugin.json").write_text(json.dumps({"name": "marker", "hooks_module": "hooks.py"}))
    (plugin / "hooks.py").write_text(MARKER)
    (tmp_path / "config.yaml").write_text(config)
    return DaemonEnvironment(tmp_path / "config.yaml", tmp_path / "data", {})


def _commands() -> CommandTable:
    return CommandTable.with_builtins(is_managed=lambda _room_id: False)


async def _stop(stops: PhaseStops, *names: str) -> None:
    for part in stops.parts:
        if part.name in names:
            await part.stop(Stopping("shutdown", 1.0))


@dataclass
class _World:
    """The phases before the one under test, run for real: live state, state, run."""

    environment: DaemonEnvironment
    live: LiveState
    stores: StateStores
    running: RunningDaemon
    commands: CommandTable


@contextlib.asynccontextmanager
async def _world(tmp_path: Path) -> AsyncIterator[_World]:
    environment = _deploy(tmp_path)
    live = await prepare_live_state(environment)
    holder, state_stops, run_stops = StateHolder(environment), PhaseStops("state"), PhaseStops("run")
    stores = await holder.open(live.config, state_stops)
    commands = _commands()
    running = await build_run(
        live,
        stores,
        environment.runtime_paths,
        server_name="localhost",
        run_since=None,
        commands=commands,
        entities={},
        stops=run_stops,
    )
    try:
        yield _World(environment, live, stores, running, commands)
    finally:
        await _stop(run_stops, "memory", "tools")
        await _stop(state_stops, "state")


async def test_live_state_phase_builds_config_plugins_and_hooks_from_the_files(tmp_path: Path):
    live = await prepare_live_state(_deploy(tmp_path))

    assert list(live.config.agents) == ["helper"] and live.config.agents["helper"].rooms == ["lobby"]
    assert [plugin.name for plugin in live.plugins] == ["marker"]
    assert [hook.hook_name for hook in live.registry.all_hooks()] == ["mark"]


async def test_live_state_phase_refuses_an_invalid_config_naming_the_file(tmp_path: Path):
    environment = _deploy(tmp_path, "agents:\n  - helper\n")  # a list where a mapping of agents belongs

    with pytest.raises(ConfigError) as raised:
        await prepare_live_state(environment)

    assert raised.value.path == tmp_path / "config.yaml"


async def test_run_phase_puts_the_chats_settings_over_the_live_state_and_wires_the_turns(tmp_path: Path):
    environment = _deploy(tmp_path)
    live = await prepare_live_state(environment)
    holder, state_stops = StateHolder(environment), PhaseStops("state")
    stores = await holder.open(live.config, state_stops)
    assert stores.overrides is not None
    stores.overrides.put(Override("config", "agents.helper.display_name", "Helper (chat)", "@alice:localhost", 1.0))
    commands, entities, stops = _commands(), {}, PhaseStops("run")

    running = await build_run(
        live,
        stores,
        environment.runtime_paths,
        server_name="localhost",
        run_since=1_700_000_000.5,
        commands=commands,
        entities=entities,
        stops=stops,
    )

    assert running.live.config.agents["helper"].display_name == "Helper (chat)"
    assert live.config.agents["helper"].display_name == "Helper"  # the file's state is left as it was
    assert running.directory.entities is entities and running.directory.server_name == "localhost"
    assert running.clock.started_at_ms == 1_700_000_000_500  # the run it continues
    assert running.stores.journal is stores.journal and running.stores.approvals is not None
    assert running.mind is not None
    assert commands.get("auto_approve") is not None and commands.get("memory") is not None
    assert provided_registry() is running.live.registry
    assert running.stores.usage is not None  # the state keeps usage: each turn's is recorded
    assert [part.name for part in stops.parts] == [
        "usage",
        "background hooks",
        "isolated plugins",
        "memory",
        "tools",
        "model clients and stores",
    ]

    await _stop(stops, "usage", "memory", "tools")

    assert provided_registry() is None  # tools no longer reach the registry of a stopped run
    await _stop(state_stops, "state")


async def test_schedules_phase_runs_the_scheduler_with_the_command_until_its_stop(tmp_path: Path):
    async with _world(tmp_path) as world:
        stops = PhaseStops("schedules")

        scheduler = start_schedules(world.running, world.stores.schedules, world.commands, stops)

        assert scheduler.store is world.stores.schedules and scheduler._task is not None
        running_task = scheduler._task
        assert not running_task.done() and world.commands.get("schedule") is not None
        assert [part.name for part in stops.parts] == ["scheduler"]
        await _stop(stops, "scheduler")
        assert running_task.done() and scheduler._task is None


async def test_reload_phase_watches_the_config_and_applies_what_a_save_changed(tmp_path: Path):
    async with _world(tmp_path) as world:
        outcomes: asyncio.Queue[ReloadOutcome] = asyncio.Queue()
        applied: list[EntityChanges] = []

        async def apply(_old: LiveState, changes: EntityChanges) -> None:
            applied.append(changes)

        options = ReloadOptions(EnvFile(tmp_path / ".env"), watch=True, debounce_s=0.1, on_reload=outcomes.put_nowait)
        stops = PhaseStops("reload")

        reloading = start_reloading(world.running, apply, options, world.stores, world.commands, stops)

        assert [part.name for part in stops.parts] == ["reloader", "watcher"]
        assert all(world.commands.get(name) is not None for name in ("reload-plugins", "model", "config"))
        try:
            added = CONFIG.replace("plugins:", "  critic: {display_name: Critic, rooms: [review]}\nplugins:")
            outcome = await saved_until_seen(
                world.environment.config_path, added, outcomes, lambda o: o.ok and bool(o.entities.added)
            )
            assert outcome.entities.added == ("critic",) and "review" in outcome.entities.new_rooms
            assert applied[-1] == outcome.entities and "critic" in world.running.live.config.agents
        finally:
            await _stop(stops, "reloader", "watcher")
        assert reloading.watcher is not None and not reloading.watcher._tasks.running
        assert await reloading.reloader._reload_logged("after the stop") is None  # it takes no more reloads


async def test_reload_phase_without_watching_starts_no_watcher(tmp_path: Path):
    async with _world(tmp_path) as world:
        stops = PhaseStops("reload")

        async def apply(_old: LiveState, _changes: EntityChanges) -> None:
            return None

        options = ReloadOptions(EnvFile(tmp_path / ".env"), watch=False)
        reloading = start_reloading(world.running, apply, options, world.stores, world.commands, stops)

        assert reloading.watcher is None and [part.name for part in stops.parts] == ["reloader"]
        await _stop(stops, "reloader")
