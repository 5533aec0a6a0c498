"""Hot reload without Matrix: what changed, keep-last-good, telemetry carried over, and the real file watcher."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from mindroom.bots.capabilities import RunClock, TurnStores
from mindroom.bots.directory import Directory
from mindroom.bots.runtime import LiveCell, LiveState
from mindroom.config.loading import parse_config_text
from mindroom.constants import RuntimePaths
from mindroom.daemon.live import build_live_state
from mindroom.daemon.reload import EntityChanges, ReloadCoordinator, ReloadOutcome
from mindroom.daemon.watch import ConfigWatcher
from mindroom.daemon.wiring import RunningDaemon
from mindroom.hooks import EVENT_MESSAGE_RECEIVED, MessageReceivedContext
from mindroom.hooks.execution import emit
from mindroom.plugins.discovery import plugin_digest, plugin_watch_paths
from mindroom.state.attachments import AttachmentStore
from mindroom.state.sqlite.answers import SqliteAnswerLog
from mindroom.state.sqlite.journal import SqliteTurnJournal
from mindroom.state.sqlite.rooms import SqliteRoomMemory

CONFIG = """
agents:
  helper: {display_name: Helper, rooms: [lobby]}
  scribe: {display_name: Scribe, rooms: [lobby, notes]}
plugins:
  - path: plugins/marker
    settings: {tag: one}
"""

MARKER = """
from mindroom.hooks import hook

@hook("message:received")
async def mark(ctx):
    ctx.logger.info("marker ran", version="VERSION", tag=ctx.settings["tag"])
"""


def _config(text: str) -> Any:
    return parse_config_text(text, "config.yaml", env={})


def test_entity_changes_between_configs() -> None:
    old = _config(CONFIG)
    new = _config(
        """
agents:
  helper: {display_name: Helper, rooms: [lobby]}
  scribe: {display_name: Scribe II, rooms: [lobby, notes]}
  critic: {display_name: Critic, rooms: [review]}
router: {display_name: Dispatcher}
admin_room: ops
"""
    )
    changes = EntityChanges.between(old, new, known_rooms={"lobby", "notes"})
    assert changes == EntityChanges(
        added=("critic",), removed=(), changed=("router", "scribe"), new_rooms=("review", "ops")
    )
    assert EntityChanges.between(old, old, known_rooms={"lobby", "notes"}) == EntityChanges()


def test_plugin_digest_follows_source_edits_only(tmp_path: Path) -> None:
    (tmp_path / "hooks.py").write_text("x = 1\n")
    before = plugin_digest(tmp_path)
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "hooks.cpython-311.pyc").write_bytes(b"junk")
    (tmp_path / "notes.bin").write_bytes(b"data")
    assert plugin_digest(tmp_path) == before
    (tmp_path / "hooks.py").write_text("x = 2\n")
    assert plugin_digest(tmp_path) != before


def test_reload_outcome_summary_says_what_changed() -> None:
    ok = ReloadOutcome(
        True,
        "test",
        0.0,
        entities=EntityChanges(added=("critic",), removed=("scribe",)),
        plugin_changes=("updated marker",),
        hooks_before=1,
        hooks_after=2,
    )
    assert ok.summary() == "🔄 Reloaded: plugins updated marker; added critic; removed scribe; hooks 1 -> 2."
    assert ReloadOutcome(True, "test", 0.0).summary() == "🔄 Reloaded: nothing changed."
    failed = ReloadOutcome(False, "test", 0.0, error="config.yaml: agents.x: bad", failed=("config.yaml",))
    assert failed.summary().startswith("⚠️ Reload failed: config.yaml.") and "agents.x" not in failed.summary()
    assert "daemon log" in failed.summary()


def _deploy(tmp_path: Path, version: str = "v1") -> RunningDaemon:
    """Write a config and a plugin; the daemon's capabilities they make (no Matrix)."""
    plugin = tmp_path / "plugins" / "marker"
    plugin.mkdir(parents=True, exist_ok=True)
    (plugin / "mindroom.plugin.json").write_text(json.dumps({"name": "marker", "hooks_module": "hooks.py"}))
    (plugin / "hooks.py").write_text(MARKER.replace("VERSION", version))
    config_path = tmp_path / "config.yaml"
    config_path.write_text(CONFIG)
    paths = RuntimePaths(config_path=config_path, storage_root=tmp_path / "data")
    built = build_live_state(paths, previous=None, strict=False)
    assert built.live is not None
    return RunningDaemon(
        cell=LiveCell(built.live),
        directory=Directory(
            "localhost",
            SqliteRoomMemory(tmp_path / "data" / "rooms.db"),
            room_ids={"lobby": "!lobby:localhost", "notes": "!notes:localhost"},
        ),
        stores=TurnStores(
            SqliteTurnJournal(tmp_path / "data" / "daemon.db"),
            SqliteAnswerLog(tmp_path / "data" / "answers.db"),
            AttachmentStore(tmp_path),
        ),
        paths=paths,
        clock=RunClock.starting(),
    )


def _coordinator(
    daemon: RunningDaemon, applied: list[EntityChanges], outcomes: asyncio.Queue[ReloadOutcome] | None = None
) -> ReloadCoordinator:
    """A coordinator whose `apply` only records what it was asked to restart."""

    async def apply(old: LiveState, changes: EntityChanges) -> None:
        applied.append(changes)

    return ReloadCoordinator(
        daemon.cell,
        daemon.directory,
        build=lambda previous: build_live_state(daemon.paths, previous=previous, strict=True),
        apply=apply,
        on_outcome=outcomes.put_nowait if outcomes is not None else None,
    )


async def _marker_version(daemon: RunningDaemon) -> str | None:
    with capture_logs() as logs:
        await emit(daemon.live.registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())
    versions = [entry["version"] for entry in logs if entry["event"] == "marker ran"]
    return versions[0] if versions else None


@pytest.mark.asyncio
async def test_reload_swaps_a_fresh_import_and_carries_telemetry_over(tmp_path: Path) -> None:
    daemon = _deploy(tmp_path)
    applied: list[EntityChanges] = []
    coordinator = _coordinator(daemon, applied)
    assert await _marker_version(daemon) == "v1"
    old_live = daemon.live
    old_registry = old_live.registry
    (tmp_path / "plugins" / "marker" / "hooks.py").write_text(MARKER.replace("VERSION", "v2"))

    outcome = await coordinator.reload("test")

    assert outcome.ok and outcome.plugin_changes == ("updated marker",)
    assert daemon.live is not old_live and daemon.live.registry is not old_registry
    assert await _marker_version(daemon) == "v2"
    assert await _marker_version_of(old_registry) == "v1"  # a turn that started before keeps the old code
    assert daemon.live.registry.all_hooks()[0].stats is old_registry.all_hooks()[0].stats
    assert applied == [EntityChanges()]
    daemon.stores.journal.close()


async def _marker_version_of(registry: Any) -> str | None:
    with capture_logs() as logs:
        await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())
    return next((entry["version"] for entry in logs if entry["event"] == "marker ran"), None)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("broken_file", "content", "expected"),
    [
        ("plugins/marker/hooks.py", "def broken(:\n", "SyntaxError"),
        ("plugins/marker/hooks.py", "raise RuntimeError('boom at import')\n", "boom at import"),
        ("config.yaml", CONFIG + "agents_typo: {}\n", "agents_typo"),
        ("config.yaml", "agents: [\n", "YAML syntax error"),
    ],
)
async def test_reload_keeps_the_last_good_state_and_names_file_and_cause(
    tmp_path: Path, broken_file: str, content: str, expected: str
) -> None:
    daemon = _deploy(tmp_path)
    applied: list[EntityChanges] = []
    coordinator = _coordinator(daemon, applied)
    good = daemon.live
    (tmp_path / broken_file).write_text(content)

    with capture_logs() as logs:
        outcome = await coordinator.reload("test")

    assert not outcome.ok and outcome.error is not None
    assert Path(broken_file).name in outcome.error and expected in outcome.error
    assert daemon.live is good
    assert applied == []
    failure = next(
        entry for entry in logs if entry["event"] == "reload failed; keeping the last good config and plugins"
    )
    assert expected in failure["error"]
    assert await _marker_version(daemon) == "v1"

    _deploy(tmp_path, version="v3")  # fixing the file reloads normally
    assert (await coordinator.reload("test")).ok
    assert await _marker_version(daemon) == "v3"
    daemon.stores.journal.close()


@pytest.mark.asyncio
async def test_reload_watcher_reloads_after_a_save_within_a_second(tmp_path: Path) -> None:
    daemon = _deploy(tmp_path)
    outcomes: asyncio.Queue[ReloadOutcome] = asyncio.Queue()
    coordinator = _coordinator(daemon, [], outcomes)
    paths = daemon.paths
    watcher = ConfigWatcher(
        paths.config_path,
        lambda: plugin_watch_paths(daemon.live.config, paths),
        coordinator.on_files_changed,
        debounce_s=0.1,
    )
    watcher.start()
    try:
        await asyncio.sleep(0.3)  # the watcher is up
        saved = time.time()
        (tmp_path / "plugins" / "marker" / "hooks.py").write_text(MARKER.replace("VERSION", "watched"))
        outcome = await asyncio.wait_for(outcomes.get(), 10)
        assert outcome.ok and outcome.activated_at is not None
        assert outcome.activated_at - saved < 1.5
        assert await _marker_version(daemon) == "watched"

        (tmp_path / "config.yaml").write_text(CONFIG.replace("tag: one", "tag: two"))
        outcome = await asyncio.wait_for(outcomes.get(), 10)
        assert outcome.ok and daemon.live.registry.all_hooks()[0].settings == {"tag": "two"}
    finally:
        await coordinator.stop()
        await watcher.stop()
    assert not watcher._tasks.running
    daemon.stores.journal.close()


FAILING = """
from mindroom.hooks import hook

@hook("message:received")
async def mark(ctx):
    raise RuntimeError("broken VERSION")
"""


@pytest.mark.asyncio
async def test_reload_closes_the_breaker_of_a_plugin_whose_code_changed(tmp_path: Path) -> None:
    daemon = _deploy(tmp_path)
    (tmp_path / "plugins" / "marker" / "hooks.py").write_text(FAILING.replace("VERSION", "v1"))
    coordinator = _coordinator(daemon, [])
    assert (await coordinator.reload("broken code")).ok
    for _ in range(6):
        await emit(daemon.live.registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())
    (hook,) = daemon.live.registry.all_hooks()
    assert hook.stats.breaker.state(time.monotonic()) == "open"

    assert (await coordinator.reload("untouched plugin")).ok  # same code: the breaker stays open
    assert daemon.live.registry.all_hooks()[0].stats.breaker.open_until
    (tmp_path / "plugins" / "marker" / "hooks.py").write_text(MARKER.replace("VERSION", "fixed"))
    assert (await coordinator.reload("fixed code")).ok

    (hook,) = daemon.live.registry.all_hooks()
    assert not hook.stats.breaker.open_until and hook.stats.failures >= 5
    assert await _marker_version(daemon) == "fixed"
    daemon.stores.journal.close()


TOKEN = "syt_bWFsbG9yeQ_abcdefghijklmnopqrst_0a1b2c"


class _RecordingRouter:
    """The router as the coordinator sees it: its Matrix client records notices instead of sending them."""

    def __init__(self) -> None:
        self.client = self
        self.sent: list[tuple[str, str, str]] = []

    async def send_message(self, room_id: str, text: str, msgtype: str = "m.text") -> None:
        self.sent.append((room_id, text, msgtype))


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("broken_file", "content", "named"),
    [
        ("plugins/marker/hooks.py", f"raise RuntimeError('token {TOKEN}')\n", "plugin marker"),
        ("plugins/marker/hooks.py", "password = 'hunter2-x'\nraise ValueError(f'password={password}')\n", "marker"),
        ("config.yaml", CONFIG + f"admin_room: ops\nagents_typo: {{token: {TOKEN}}}\n", "config.yaml"),
    ],
)
async def test_reload_failure_tells_rooms_what_failed_but_never_the_cause(
    tmp_path: Path, broken_file: str, content: str, named: str
) -> None:
    daemon = _deploy(tmp_path)
    (tmp_path / "config.yaml").write_text(CONFIG + "admin_room: ops\n")
    assert (await _coordinator(daemon, []).reload("admin room")).ok
    router = _RecordingRouter()
    daemon.directory.entities = {"router": router}  # type: ignore[dict-item]
    daemon.directory.room_set_up("ops", "!ops:localhost")  # the admin room the daemon set up
    coordinator = _coordinator(daemon, [])
    (tmp_path / broken_file).write_text(content)

    with capture_logs() as logs:
        outcome = await coordinator.reload("test")

    assert not outcome.ok
    ((room_id, notice, msgtype),) = router.sent
    assert (room_id, msgtype) == ("!ops:localhost", "m.notice")
    for text in (outcome.summary(), notice):
        assert named in text and "daemon log" in text
        assert TOKEN not in text and "hunter2" not in text
        assert "RuntimeError" not in text and "ValueError" not in text and "agents_typo" not in text
    assert outcome.error is not None and TOKEN not in outcome.error and "hunter2" not in outcome.error
    failure = next(e for e in logs if e["event"] == "reload failed; keeping the last good config and plugins")
    assert Path(broken_file).name in failure["error"]  # the log keeps the cause (redacted when it is written)
    daemon.stores.journal.close()


@pytest.mark.asyncio
async def test_reload_builds_in_a_worker_thread_so_the_loop_keeps_running(tmp_path: Path) -> None:
    daemon = _deploy(tmp_path)
    coordinator = _coordinator(daemon, [])
    seen = tmp_path / "import-thread.json"
    slow = MARKER.replace("VERSION", "slow") + (
        "\nimport asyncio, json, threading, time\n"
        "try:\n    asyncio.get_running_loop()\n    on_loop = True\nexcept RuntimeError:\n    on_loop = False\n"
        f"open({str(seen)!r}, 'w').write(json.dumps({{'main': threading.current_thread() is threading.main_thread(),"
        " 'on_loop': on_loop}))\n"
        "time.sleep(0.6)\n"
    )
    (tmp_path / "plugins" / "marker" / "hooks.py").write_text(slow)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.02)
            ticks += 1

    ticker = asyncio.create_task(tick())
    try:
        outcome = await coordinator.reload("test")
    finally:
        ticker.cancel()
    assert outcome.ok and await _marker_version(daemon) == "slow"
    assert ticks >= 10, "the event loop was blocked while the build ran"
    assert json.loads(seen.read_text()) == {"main": False, "on_loop": False}
    daemon.stores.journal.close()


@pytest.mark.parametrize("manifest", [b'{"name": "caf\xe9"}', b"[" * 20_000 + b"]" * 20_000, b'{"name": "x\\u0000"}'])
def test_start_build_leaves_out_a_plugin_with_a_bad_manifest_and_runs_the_rest(tmp_path: Path, manifest: bytes) -> None:
    daemon = _deploy(tmp_path)
    bad = tmp_path / "plugins" / "unreadable"
    bad.mkdir()
    (bad / "mindroom.plugin.json").write_bytes(manifest)

    built = build_live_state(daemon.paths, previous=None, strict=False)

    assert built.live is not None and [plugin.name for plugin in built.live.plugins] == ["marker"]
    assert [error.plugin for error in built.plugin_errors] == ["unreadable"]
    daemon.stores.journal.close()
