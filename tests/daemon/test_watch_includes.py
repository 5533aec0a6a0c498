"""The file watcher follows what `config.yaml` includes: editing an included instructions file, or adding a file
to a folder an `!include_dir_*` tag reads, reloads the config as saving `config.yaml` does."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mindroom.bots.directory import Directory
from mindroom.bots.runtime import LiveCell, LiveState
from mindroom.constants import RuntimePaths
from mindroom.daemon.live import build_live_state
from mindroom.daemon.reload import EntityChanges, ReloadCoordinator, ReloadOutcome
from mindroom.daemon.watch import ConfigWatcher
from mindroom.state.sqlite.rooms import SqliteRoomMemory
from tests.daemon.saving import saved_until_seen

CONFIG = """
agents:
  helper:
    display_name: Helper
    rooms: [lobby]
    instructions: [!include_text prompts/helper.md]
teams: !include_dir_named teams
"""


@pytest.mark.asyncio
async def test_watch_includes_an_edited_instructions_file_and_a_new_folder_file_reload(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "helper.md").write_text("Answer briefly.\n")
    (tmp_path / "teams").mkdir()
    (tmp_path / "teams" / "crew.yaml").write_text("display_name: Crew\nrole: Crew\nagents: [helper]\n")
    config_path = tmp_path / "config.yaml"
    config_path.write_text(CONFIG)
    paths = RuntimePaths(config_path=config_path, storage_root=tmp_path / "data")
    built = build_live_state(paths, previous=None)
    assert built.live is not None
    cell = LiveCell(built.live)
    outcomes: asyncio.Queue[ReloadOutcome] = asyncio.Queue()

    async def apply(old: LiveState, changes: EntityChanges) -> None:
        return None

    coordinator = ReloadCoordinator(
        cell,
        Directory("localhost", SqliteRoomMemory(tmp_path / "data" / "rooms.db"), room_ids={"lobby": "!l:localhost"}),
        build=lambda previous: build_live_state(paths, previous=previous),
        apply=apply,
        on_outcome=outcomes.put_nowait,
    )
    watcher = ConfigWatcher(
        config_path,
        lambda: (),
        coordinator.on_files_changed,
        debounce_s=0.1,
        included_paths=lambda: cell.live.config.included_paths,
    )
    watcher.start()
    try:
        outcome = await saved_until_seen(
            tmp_path / "prompts" / "helper.md",
            "Cite sources.\n",
            outcomes,
            lambda _: cell.live.config.agents["helper"].instructions == ["Cite sources."],
        )
        assert outcome.ok and outcome.reason == "file change"

        outcome = await saved_until_seen(
            tmp_path / "teams" / "desk.yml",
            "display_name: Desk\nrole: Desk\nagents: [helper]\n",
            outcomes,
            lambda _: sorted(cell.live.config.teams) == ["crew", "desk"],
        )
        assert outcome.ok
    finally:
        await coordinator.stop()
        await watcher.stop()
    assert not watcher._tasks.running
