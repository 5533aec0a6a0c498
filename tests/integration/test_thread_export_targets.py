"""`mindroom.thread_export` on the real homeserver, called as the thread-export plugin calls it (a pass on a
private event loop in a worker thread): the running daemon reads the room's threads into each target whose
required member is in the room, retracts the room from a target whose member is not, and counts a thread that
did not change; a pass started while the daemon starts waits for it; once the daemon stops, a pass is refused
naming the data directory."""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path
from typing import Any

import pytest

from mindroom.bots import thread_export_targets
from mindroom.bots.thread_export import export_file_name
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.testing.model_server import Text
from mindroom.thread_export import ThreadExportStats, ThreadExportTarget, export_threads_to_targets_once
from mindroom.tool_system.worker_routing import agent_workspace_root_path
from tests.integration.conftest import E2E
from tests.integration.support import thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def in_worker_thread(paths: RuntimePaths, targets: tuple[ThreadExportTarget, ...], room: str | None) -> Any:
    """One pass as the plugin runs it: `asyncio.run` in a thread of its own, off the daemon's loop."""
    config = Config()

    def run() -> tuple[ThreadExportStats, ...]:
        return asyncio.run(
            export_threads_to_targets_once(
                config=config, runtime_paths=paths, targets=targets, room_filter=room, prefer_cache=True
            )
        )

    return await asyncio.to_thread(run)


def counts(stats: ThreadExportStats) -> tuple[int, int, int, int, int]:
    return stats.rooms_exported, stats.threads_seen, stats.threads_exported, stats.threads_unchanged, stats.failures


async def test_thread_export_targets_written_by_the_running_daemon_from_a_plugins_worker_thread(
    e2e: E2E, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    alice = await e2e.human("alice")
    agent, room = e2e.name("helper"), e2e.name("room")
    agents = {agent: {"display_name": "Helper", "model": "default", "rooms": [room]}}
    paths = RuntimePaths(e2e.config_dir / "config.yaml", e2e.storage, {})
    # As the plugin's bot:ready hook does, while the daemon starts: the pass waits until it can read.
    early = asyncio.create_task(in_worker_thread(paths, (ThreadExportTarget(output_dir=tmp_path / "early"),), None))
    await e2e.start(e2e.basic_config([alice.user_id], agents))
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    agent_id = e2e.user_id(agent)
    e2e.model_server.set_default(Text("Looking into it."), model="agent-model")
    root = await alice.send(room_id, "the build is red", mentions=[agent_id])
    await alice.wait_for(thread_replies(root, agent_id))
    workspace = agent_workspace_root_path(e2e.storage, agent) / "thread_exports"
    outsider = tmp_path / "outsider"  # its member's id is the agent's with a suffix: not in the room
    stale = outsider / export_file_name(room_id) / "old.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}")
    targets = (
        ThreadExportTarget(output_dir=workspace, required_member_user_id=agent_id),
        ThreadExportTarget(output_dir=outsider, required_member_user_id=agent_id + "x"),
        ThreadExportTarget(output_dir=tmp_path / "anyone"),
    )

    first = await in_worker_thread(paths, targets, room_id)
    again = await in_worker_thread(paths, targets[:1], room_id)
    other_room = await in_worker_thread(paths, targets[:1], room_id + "x")
    started = await early
    await e2e.stop()
    monkeypatch.setattr(thread_export_targets, "ATTACH_WAIT_S", 0.2)  # no daemon comes: not the full wait
    with pytest.raises(RuntimeError, match="no running daemon reads threads for the data directory"):
        await in_worker_thread(paths, targets[:1], room_id)

    assert started[0].rooms_exported >= 1 and started[0].failures == 0
    assert [counts(stats) for stats in first] == [(1, 1, 1, 0, 0), (0, 0, 0, 0, 0), (1, 1, 1, 0, 0)]
    assert counts(again[0]) == (1, 1, 0, 1, 0)  # nothing changed: the files are left as they are
    assert counts(other_room[0]) == (0, 0, 0, 0, 0)
    [written] = list(workspace.glob("*/*.json"))
    exported = json.loads(written.read_text())
    assert [(m["author"], m["text"]) for m in exported["messages"]] == [
        (alice.user_id, "the build is red"),
        (agent_id, "Looking into it."),
    ]
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    assert written.with_suffix(".md").is_file()
    assert not stale.exists() and not stale.parent.exists()  # the room left the target its member is not in
    assert len(list((tmp_path / "anyone").glob("*/*.md"))) == 1
