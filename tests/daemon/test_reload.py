"""Hot reload without Matrix: what changed, keep-last-good, telemetry carried over, and the real file watcher."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from structlog.testing import capture_logs

from mindroom.bots.authorization import is_authorized
from mindroom.bots.directory import Directory
from mindroom.bots.pipeline_capabilities import RunClock, TurnStores
from mindroom.bots.runtime import LiveCell, LiveState
from mindroom.config.loading import parse_config_text
from mindroom.constants import RuntimePaths
from mindroom.daemon.live import build_live_state
from mindroom.daemon.reload import EntityChanges, ReloadCoordinator, ReloadOutcome
from mindroom.daemon.watch import ConfigWatcher, EnvFile
from mindroom.daemon.wiring import RunningDaemon
from mindroom.hooks import EVENT_MESSAGE_RECEIVED, MessageReceivedContext
from mindroom.hooks.execution import emit
from mindroom.plugins.discovery import plugin_digest, plugin_watch_paths
from mindroom.state.attachments import AttachmentStore
from mindroom.state.sqlite.answers import SqliteAnswerLog
from mindroom.state.sqlite.journal import SqliteTurnJournal
from mindroom.state.sqlite.rooms import SqliteRoomMemory
from tests.daemon.saving import saved_until_seen

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
    built = build_live_state(paths, previous=None)
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
        build=lambda previous: build_live_state(daemon.paths, previous=previous),
        apply=apply,
        on_outcome=outcomes.put_nowait if outcomes is not None else None,
    )


async def _marker_version(daemon: RunningDaemon) -> str | None:
    with capture_logs() as logs:
        await emit(daemon.live.registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())
    versions = [entry["version"] for entry in logs if entry["event"] == "marker ran"]
    return versions[0] if versions else None


# A plugin whose import waits until the event loop's heartbeat has ticked three more times: it loads only if
# the reload builds off the loop (a build on the loop would stop the heartbeat, and the import gives up).
WAITS_FOR_THE_LOOP = """
import time
from pathlib import Path

def _beats():
    try:
        return int(Path(BEAT).read_text())
    except (OSError, ValueError):
        return -1

_first, _deadline = _beats(), time.monotonic() + 30
while _beats() < _first + 3:
    if time.monotonic() > _deadline:
        raise RuntimeError("the event loop did not tick while the plugin loaded")
    time.sleep(0.01)
"""


def _waits_for_the_loop(text: str, beat: Path) -> str:
    return text + WAITS_FOR_THE_LOOP.replace("BEAT", repr(str(beat)))


@contextlib.asynccontextmanager
async def _heartbeat(beat: Path) -> AsyncIterator[None]:
    """A task on the event loop that counts its ticks into `beat` (replaced whole: never read half-written)."""
    beat.parent.mkdir(parents=True, exist_ok=True)

    async def tick() -> None:
        count = 0
        while True:
            count += 1
            beat.with_suffix(".next").write_text(str(count))
            beat.with_suffix(".next").replace(beat)
            await asyncio.sleep(0.01)

    ticker = asyncio.create_task(tick())
    try:
        yield
    finally:
        ticker.cancel()
        await asyncio.gather(ticker, return_exceptions=True)


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
    ("content", "expected"),
    [(CONFIG + "agents_typo: {}\n", "agents_typo"), ("agents: [\n", "YAML syntax error")],
)
async def test_reload_with_an_invalid_config_keeps_the_whole_last_good_state_and_names_file_and_cause(
    tmp_path: Path, content: str, expected: str
) -> None:
    daemon = _deploy(tmp_path)
    applied: list[EntityChanges] = []
    coordinator = _coordinator(daemon, applied)
    good = daemon.live
    (tmp_path / "plugins" / "marker" / "hooks.py").write_text(MARKER.replace("VERSION", "v2"))
    (tmp_path / "config.yaml").write_text(content)

    with capture_logs() as logs:
        outcome = await coordinator.reload("test")

    assert not outcome.ok and outcome.error is not None
    assert "config.yaml" in outcome.error and expected in outcome.error
    assert daemon.live is good
    assert applied == []
    failure = next(
        entry for entry in logs if entry["event"] == "reload failed; keeping the last good config and plugins"
    )
    assert expected in failure["error"]
    assert await _marker_version(daemon) == "v1"  # the plugin edit waits for a valid config too

    _deploy(tmp_path, version="v3")  # fixing the file reloads normally
    assert (await coordinator.reload("test")).ok
    assert await _marker_version(daemon) == "v3"
    daemon.stores.journal.close()


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("content", "expected"),
    [("def broken(:\n", "SyntaxError"), ("raise RuntimeError('boom at import')\n", "boom at import")],
)
async def test_reload_with_a_broken_plugin_keeps_its_last_good_generation_and_names_file_and_cause(
    tmp_path: Path, content: str, expected: str
) -> None:
    daemon = _deploy(tmp_path)
    applied: list[EntityChanges] = []
    coordinator = _coordinator(daemon, applied)
    (tmp_path / "plugins" / "marker" / "hooks.py").write_text(content)

    with capture_logs() as logs:
        outcome = await coordinator.reload("test")

    assert outcome.ok and outcome.kept == ("marker",) and outcome.left_out == ()
    assert outcome.error is not None and "hooks.py" in outcome.error and expected in outcome.error
    assert outcome.plugin_changes == ()  # the code that runs did not change
    failure = next(entry for entry in logs if entry["event"] == "reload applied, but plugins failed to load")
    assert expected in failure["error"] and failure["kept_last_good"] == ["marker"]
    assert await _marker_version(daemon) == "v1"

    _deploy(tmp_path, version="v3")  # fixing the file loads the fix
    fixed = await coordinator.reload("test")
    assert fixed.ok and fixed.kept == () and fixed.plugin_changes == ("updated marker",)
    assert await _marker_version(daemon) == "v3"
    daemon.stores.journal.close()


PLAIN = """
from mindroom.hooks import hook

@hook("message:received")
async def NAME_ran(ctx):
    ctx.logger.info("NAME ran", version="VERSION")
"""


def _plain_plugin(root: Path, name: str, version: str) -> None:
    folder = root / "plugins" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "mindroom.plugin.json").write_text(json.dumps({"name": name, "hooks_module": "hooks.py"}))
    (folder / "hooks.py").write_text(PLAIN.replace("NAME", name).replace("VERSION", version))


async def _versions(daemon: RunningDaemon) -> dict[str, str]:
    with capture_logs() as logs:
        await emit(daemon.live.registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())
    return {entry["event"].split()[0]: entry["version"] for entry in logs if entry["event"].endswith(" ran")}


AUTHORIZED = CONFIG + "admin_room: ops\nauthorization:\n  global_users: ['@alice:localhost', '@mallory:localhost']\n"


@pytest.mark.asyncio
async def test_reload_one_broken_plugin_among_several_does_not_hold_back_the_config_or_the_others(
    tmp_path: Path,
) -> None:
    daemon = _deploy(tmp_path)
    _plain_plugin(tmp_path, "alpha", "a1")
    _plain_plugin(tmp_path, "beta", "b1")
    never = tmp_path / "plugins" / "never"  # broken since before the start: never loaded
    never.mkdir()
    (never / "mindroom.plugin.json").write_text("{not json")
    (tmp_path / "config.yaml").write_text(AUTHORIZED)
    first = await _coordinator(daemon, []).reload("start")
    assert first.ok and first.left_out == ("never",)
    assert is_authorized(daemon.live.config, "@mallory:localhost", ["lobby"])
    router = _RecordingRouter()
    daemon.directory.entities = {"router": router}  # type: ignore[dict-item]
    daemon.directory.room_set_up("ops", "!ops:localhost")
    applied: list[EntityChanges] = []
    coordinator = _coordinator(daemon, applied)

    # One save: mallory is revoked, scribe renamed, alpha edited, beta broken, a new plugin added.
    (tmp_path / "config.yaml").write_text(
        AUTHORIZED.replace(", '@mallory:localhost'", "").replace("display_name: Scribe", "display_name: Scribe II")
    )
    _plain_plugin(tmp_path, "alpha", "a2")
    (tmp_path / "plugins" / "beta" / "hooks.py").write_text(f"raise RuntimeError('beta broke {TOKEN}')\n")
    _plain_plugin(tmp_path, "gamma", "g1")
    with capture_logs() as logs:
        outcome = await coordinator.reload("edit")

    assert outcome.ok
    assert not is_authorized(daemon.live.config, "@mallory:localhost", ["lobby"])  # the revocation applies
    assert is_authorized(daemon.live.config, "@alice:localhost", ["lobby"])
    assert applied == [EntityChanges(changed=("scribe",))]
    assert await _versions(daemon) == {"alpha": "a2", "beta": "b1", "gamma": "g1", "marker": "v1"}
    assert (outcome.kept, outcome.left_out) == (("beta",), ("never",))
    assert outcome.plugin_changes == ("added gamma", "updated alpha")
    failure = next(entry for entry in logs if entry["event"] == "reload applied, but plugins failed to load")
    assert "beta broke" in failure["error"] and "never" in failure["error"]
    ((room_id, notice, msgtype),) = router.sent  # the admin room hears which plugins, never why
    assert (room_id, msgtype) == ("!ops:localhost", "m.notice")
    assert "plugin beta failed to load; the last good version keeps running" in notice
    assert "plugin never failed to load and is not running" in notice
    assert "beta broke" not in notice and TOKEN not in notice and "RuntimeError" not in notice
    assert notice in outcome.summary()

    assert (await coordinator.reload("again")).ok  # the same failure is not announced twice
    assert len(router.sent) == 1
    _plain_plugin(tmp_path, "beta", "b2")
    shutil.rmtree(never)
    fixed = await coordinator.reload("fixed")
    assert fixed.ok and fixed.kept == () and fixed.left_out == ()
    assert await _versions(daemon) == {"alpha": "a2", "beta": "b2", "gamma": "g1", "marker": "v1"}
    assert router.sent[-1][1].startswith("✅ Reload succeeded")
    daemon.stores.journal.close()


@pytest.mark.asyncio
async def test_reload_a_disabled_broken_plugin_is_never_loaded_nor_reported(tmp_path: Path) -> None:
    daemon = _deploy(tmp_path)
    broken = tmp_path / "plugins" / "broken"
    broken.mkdir()
    (broken / "mindroom.plugin.json").write_text(json.dumps({"name": "broken", "hooks_module": "hooks.py"}))
    (broken / "hooks.py").write_text("raise RuntimeError('never imported')\n")
    (tmp_path / "config.yaml").write_text(CONFIG + "  - path: plugins/broken\n    enabled: false\n")

    with capture_logs() as logs:
        outcome = await _coordinator(daemon, []).reload("disabled")

    assert outcome.ok and outcome.error is None and (outcome.kept, outcome.left_out) == ((), ())
    assert not any(entry["event"] == "plugin failed to load" for entry in logs)
    assert [plugin.name for plugin in daemon.live.plugins] == ["marker"]
    daemon.stores.journal.close()


@pytest.mark.asyncio
async def test_reload_watcher_reloads_after_a_save_while_the_loop_keeps_running(tmp_path: Path) -> None:
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
    hooks, beat = tmp_path / "plugins" / "marker" / "hooks.py", tmp_path / "heartbeat" / "beats"
    watched = _waits_for_the_loop(MARKER.replace("VERSION", "watched"), beat)
    async with _heartbeat(beat):  # every reload from here on imports the plugin, which waits for the loop
        watcher.start()
        try:
            saved = time.time()
            outcome = await saved_until_seen(
                hooks, watched, outcomes, lambda outcome: outcome.plugin_changes == ("updated marker",)
            )
            assert outcome.ok and outcome.kept == () and outcome.left_out == ()
            assert outcome.activated_at is not None and outcome.activated_at >= saved
            assert await _marker_version(daemon) == "watched"

            config = CONFIG.replace("tag: one", "tag: two")
            outcome = await saved_until_seen(
                paths.config_path, config, outcomes, lambda _outcome: _settings(daemon) == {"tag": "two"}
            )
            assert outcome.ok and outcome.kept == () and await _marker_version(daemon) == "watched"
        finally:
            await coordinator.stop()
            await watcher.stop()
    assert not watcher._tasks.running
    daemon.stores.journal.close()


def _settings(daemon: RunningDaemon) -> dict[str, Any]:
    return dict(daemon.live.registry.all_hooks()[0].settings)


@pytest.mark.asyncio
async def test_reload_says_once_that_an_edited_env_file_needs_a_restart(tmp_path: Path) -> None:
    daemon = _deploy(tmp_path)
    env_file = tmp_path / ".env"
    env_file.write_text("OPENAI_API_KEY=first\n")
    outcomes: asyncio.Queue[ReloadOutcome] = asyncio.Queue()
    coordinator = ReloadCoordinator(
        daemon.cell,
        daemon.directory,
        build=lambda previous: build_live_state(daemon.paths, previous=previous),
        apply=lambda old, changes: asyncio.sleep(0),
        on_outcome=outcomes.put_nowait,
        env_file=EnvFile(env_file),
    )
    watcher = ConfigWatcher(daemon.paths.config_path, lambda: (), coordinator.on_files_changed, debounce_s=0.1)
    warning = "`.env` changed since the start; restart to apply it"
    watcher.start()
    try:
        with capture_logs() as logs:
            assert (await coordinator.reload("untouched")).ok
        assert not any(entry["event"] == warning for entry in logs)
        assert outcomes.get_nowait().reason == "untouched"

        with capture_logs() as logs:
            changed = "OPENAI_API_KEY=second\n"  # the watcher reloads on its own
            await saved_until_seen(env_file, changed, outcomes, lambda outcome: outcome.reason == "file change")
            assert [entry["path"] for entry in logs if entry["event"] == warning] == [str(env_file)]
            assert (await coordinator.reload("again")).ok
        assert len([entry for entry in logs if entry["event"] == warning]) == 1  # once per content
    finally:
        await coordinator.stop()
        await watcher.stop()
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

    def bindings(self, live: LiveState) -> Any:
        """What `config:reloaded` hooks are given (the config alone, here)."""
        return SimpleNamespace(fields=lambda: {"config": live.config})

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

    assert outcome.ok is (broken_file != "config.yaml")  # a broken plugin does not hold the reload back
    ((room_id, notice, msgtype),) = router.sent
    assert (room_id, msgtype) == ("!ops:localhost", "m.notice")
    for text in (outcome.summary(), notice):
        assert named in text and "daemon log" in text
        assert TOKEN not in text and "hunter2" not in text
        assert "RuntimeError" not in text and "ValueError" not in text and "agents_typo" not in text
    assert outcome.error is not None and TOKEN not in outcome.error and "hunter2" not in outcome.error
    failure = next(e for e in logs if e["event"].startswith(("reload failed;", "reload applied, but")))
    assert Path(broken_file).name in failure["error"]  # the log keeps the cause (redacted when it is written)
    daemon.stores.journal.close()


@pytest.mark.asyncio
async def test_reload_builds_in_a_worker_thread_so_the_loop_keeps_running(tmp_path: Path) -> None:
    daemon = _deploy(tmp_path)
    coordinator = _coordinator(daemon, [])
    seen, beat = tmp_path / "import-thread.json", tmp_path / "heartbeat" / "beats"
    slow = MARKER.replace("VERSION", "slow") + (
        "\nimport asyncio, json, threading\n"
        "try:\n    asyncio.get_running_loop()\n    on_loop = True\nexcept RuntimeError:\n    on_loop = False\n"
        f"open({str(seen)!r}, 'w').write(json.dumps({{'main': threading.current_thread() is threading.main_thread(),"
        " 'on_loop': on_loop}))\n"
    )
    (tmp_path / "plugins" / "marker" / "hooks.py").write_text(_waits_for_the_loop(slow, beat))

    async with _heartbeat(beat):
        outcome = await coordinator.reload("test")

    assert outcome.ok and outcome.kept == () and outcome.left_out == ()  # the import saw the loop tick meanwhile
    assert await _marker_version(daemon) == "slow"
    assert json.loads(seen.read_text()) == {"main": False, "on_loop": False}
    daemon.stores.journal.close()


@pytest.mark.parametrize("manifest", [b'{"name": "caf\xe9"}', b"[" * 20_000 + b"]" * 20_000, b'{"name": "x\\u0000"}'])
def test_start_build_leaves_out_a_plugin_with_a_bad_manifest_and_runs_the_rest(tmp_path: Path, manifest: bytes) -> None:
    daemon = _deploy(tmp_path)
    bad = tmp_path / "plugins" / "unreadable"
    bad.mkdir()
    (bad / "mindroom.plugin.json").write_bytes(manifest)

    built = build_live_state(daemon.paths, previous=None)

    assert built.live is not None and [plugin.name for plugin in built.live.plugins] == ["marker"]
    assert [error.plugin for error in built.plugin_errors] == ["unreadable"]
    daemon.stores.journal.close()
