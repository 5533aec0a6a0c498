"""`mindroom hooks list` and `mindroom plugins list`: pipeline order, live counters from a running daemon."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mindroom.cli import app
from mindroom.daemon.hooks_snapshot import (
    read_hooks_snapshot,
    snapshot_path,
    write_hooks_snapshot,
    write_snapshots_until_cancelled,
)
from mindroom.hooks import HookRegistry
from mindroom.hooks.telemetry import hook_telemetry, hooks_report_text, ordered_telemetry
from mindroom.hooks.types import PIPELINE_ORDER
from mindroom.plugins import load_plugin_dir
from tests.tool_system.test_shell_sandbox import running

runner = CliRunner()

HOOKS = """
from mindroom.hooks import hook

@hook("tool:before_call")
async def gate(ctx):
    pass

@hook("demo:thing")
async def custom(ctx):
    pass

@hook("message:after_response")
async def after(ctx):
    pass

@hook("message:received", priority=5, agents=["assistant"])
async def first(ctx):
    pass

@hook("message:received", priority=50)
async def second(ctx):
    pass

@hook("message:enrich")
async def enrich(ctx):
    pass
"""


@pytest.fixture
def deployment(tmp_path: Path) -> Path:
    plugin = tmp_path / "plugins" / "demo"
    plugin.mkdir(parents=True)
    (plugin / "mindroom.plugin.json").write_text(json.dumps({"name": "demo", "hooks_module": "hooks.py"}))
    (plugin / "hooks.py").write_text(HOOKS)
    config = tmp_path / "config.yaml"
    config.write_text("models:\n  default: {provider: offline, id: offline}\nagents: {}\nplugins: []\n")
    return config


def _registry(deployment: Path) -> HookRegistry:
    return HookRegistry.from_plugins([load_plugin_dir(deployment.parent / "plugins" / "demo")])


def _invoke(deployment: Path, *args: str):
    storage = deployment.parent / "mindroom_data"
    return runner.invoke(app, ["hooks", "list", "-c", str(deployment), "--storage-path", str(storage), *args])


def test_hooks_list_without_daemon_shows_config_hooks_in_pipeline_order_at_zero(deployment):
    result = _invoke(deployment, "--json")

    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [(r["event_name"], r["hook_name"]) for r in rows] == [
        ("message:received", "first"),
        ("message:received", "second"),
        ("message:enrich", "enrich"),
        ("message:after_response", "after"),
        ("tool:before_call", "gate"),
        ("demo:thing", "custom"),
    ]
    assert all(r["calls"] == 0 for r in rows)


def test_hooks_list_table_names_the_source_of_its_counters(deployment):
    result = _invoke(deployment)

    assert result.exit_code == 0, result.output
    assert "No daemon is running" in result.output
    for column in ("plugin", "hook", "priority", "timeout", "filters", "mode", "breaker", "calls", "failures", "p95"):
        assert column in result.output
    assert "agents=assistant" in result.output


def test_hooks_list_reads_live_counters_from_a_running_daemons_snapshot(deployment):
    registry = _registry(deployment)
    hook = next(h for h in registry.all_hooks() if h.hook_name == "enrich")
    hook.stats.calls, hook.stats.failures = 7, 2
    hook.stats.durations_ms.extend([1.0, 2.0, 40.0])
    write_hooks_snapshot(snapshot_path(deployment.parent / "mindroom_data"), registry, running=True)

    table = _invoke(deployment)
    rows = {r["hook_name"]: r for r in json.loads(_invoke(deployment, "--json").stdout)}

    assert f"pid {os.getpid()}" in table.output
    assert rows["enrich"]["calls"] == 7 and rows["enrich"]["failures"] == 2
    assert rows["enrich"]["p95_ms"] == 40.0
    assert rows["first"]["agents"] == ["assistant"]


def test_hooks_list_ignores_the_snapshot_of_a_stopped_daemon(deployment):
    registry = _registry(deployment)
    registry.all_hooks()[0].stats.calls = 9
    write_hooks_snapshot(snapshot_path(deployment.parent / "mindroom_data"), registry, running=False)

    rows = json.loads(_invoke(deployment, "--json").stdout)

    assert all(r["calls"] == 0 for r in rows)


def test_snapshot_round_trip_and_final_write_on_cancel(tmp_path, deployment):
    registry = _registry(deployment)
    path = tmp_path / "state" / "hooks.json"

    async def scenario():
        task = asyncio.create_task(write_snapshots_until_cancelled(path, lambda: registry, interval_s=0.01))
        await asyncio.sleep(0.05)
        assert read_hooks_snapshot(path).running is True
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())
    snapshot = read_hooks_snapshot(path)
    assert snapshot is not None and snapshot.running is False and not snapshot.is_live
    assert snapshot.rows == tuple(ordered_telemetry(hook_telemetry(registry)))
    assert (path.stat().st_mode & 0o777) == 0o600


def test_read_hooks_snapshot_tolerates_missing_and_broken_files(tmp_path):
    assert read_hooks_snapshot(tmp_path / "none.json") is None
    (tmp_path / "bad.json").write_text("{not json")
    assert read_hooks_snapshot(tmp_path / "bad.json") is None


def test_hooks_report_text_is_in_pipeline_order(deployment):
    text = hooks_report_text(_registry(deployment))
    headers = [line.split(" ")[0] for line in text.splitlines() if not line.startswith(" ")]
    assert headers == ["message:received", "message:enrich", "message:after_response", "tool:before_call", "demo:thing"]
    older = ("message:received", "message:enrich", "message:before_response", "message:after_response")
    assert tuple(event for event in PIPELINE_ORDER if event in older) == older


def test_plugins_list_shows_each_plugin_and_its_hook_count(deployment):
    result = runner.invoke(app, ["plugins", "list", "-c", str(deployment)])

    assert result.exit_code == 0, result.output
    assert "demo" in result.output and "6" in result.output and "loaded" in result.output


def test_plugins_list_reports_a_broken_plugin_and_exits_1(deployment):
    broken = deployment.parent / "plugins" / "broken"
    broken.mkdir()
    (broken / "mindroom.plugin.json").write_text(json.dumps({"name": "broken", "hooks_module": "hooks.py"}))
    (broken / "hooks.py").write_text("raise ImportError('nope')\n")

    result = runner.invoke(app, ["plugins", "list", "-c", str(deployment)])

    assert result.exit_code == 1
    assert "broken" in result.output and "ERROR" in result.output


def test_chat_hooks_table_lists_events_in_pipeline_order(deployment):

    text = hooks_report_text(_registry(deployment))
    headers = [line.split(" ")[0] for line in text.splitlines() if line and not line.startswith(" ")]
    pipeline = ["message:received", "message:enrich", "message:before_response", "message:after_response"]
    present = [event for event in headers if event in pipeline]
    assert len(present) >= 2
    assert present == sorted(present, key=pipeline.index)


TOKEN = "syt_bWFsbG9yeQ_abcdefghijklmnopqrst_0a1b2c"
LEAKY = f"""
from mindroom.hooks import hook

@hook("message:received")
async def leak(ctx):
    raise RuntimeError("sync failed with token {TOKEN}")
"""


def _leaky_registry(tmp_path: Path) -> HookRegistry:
    from mindroom.hooks import EVENT_MESSAGE_RECEIVED, MessageReceivedContext
    from mindroom.hooks.execution import emit

    plugin = tmp_path / "plugins" / "leaky"
    plugin.mkdir(parents=True)
    (plugin / "mindroom.plugin.json").write_text(json.dumps({"name": "leaky", "hooks_module": "hooks.py"}))
    (plugin / "hooks.py").write_text(LEAKY)
    registry = HookRegistry.from_plugins([load_plugin_dir(plugin)])
    asyncio.run(emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext()))
    stats = registry.all_hooks()[0].stats
    assert stats.failures == 1 and TOKEN not in (stats.last_error or "")  # failed; redacted even in memory
    return registry


def test_hooks_snapshot_and_hooks_list_never_hold_a_hooks_error_token(deployment):
    path = snapshot_path(deployment.parent / "mindroom_data")
    write_hooks_snapshot(path, _leaky_registry(deployment.parent / "leaky"), running=True)

    listed = _invoke(deployment, "--json")
    table = _invoke(deployment)

    assert TOKEN not in path.read_text()
    assert TOKEN not in listed.stdout and TOKEN not in table.output
    (row,) = json.loads(listed.stdout)
    assert row["plugin_name"] == "leaky" and row["last_error"].startswith("RuntimeError: sync failed with token")


def test_hooks_list_redacts_a_snapshot_an_older_daemon_wrote(deployment):
    registry = _leaky_registry(deployment.parent / "leaky")
    path = snapshot_path(deployment.parent / "mindroom_data")
    rows = [
        {**dataclasses.asdict(row), "last_error": f"RuntimeError: sync failed with token {TOKEN}"}
        for row in hook_telemetry(registry)
    ]
    payload = {"pid": os.getpid(), "written_at": time.time(), "running": True, "hooks": rows}
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(payload))

    listed = _invoke(deployment, "--json")

    assert listed.exit_code == 0, listed.output
    assert TOKEN not in listed.stdout and "leaky" in listed.stdout


def test_plugins_list_redacts_a_plugins_import_error(deployment):
    broken = deployment.parent / "plugins" / "broken"
    broken.mkdir()
    (broken / "mindroom.plugin.json").write_text(json.dumps({"name": "broken", "hooks_module": "hooks.py"}))
    (broken / "hooks.py").write_text(f"raise ImportError('cannot log in with token {TOKEN}')\n")

    result = runner.invoke(app, ["plugins", "list", "-c", str(deployment)])

    assert result.exit_code == 1
    assert "broken" in result.output and "ImportError" in result.output
    assert TOKEN not in result.output


@pytest.mark.parametrize(
    ("folder", "manifest"),
    [
        ("invalid-utf8", b'{"name": "caf\xe9"}'),
        ("deep-nesting", b"[" * 20_000 + b"]" * 20_000),
        ("nul-in-manifest", b'{"name": "nul-in-manifest", "hooks_module": "x\\u0000.py"}'),
    ],
)
def test_plugins_list_reports_a_bad_manifest_and_lists_the_others(deployment, folder, manifest):
    bad = deployment.parent / "plugins" / folder
    bad.mkdir()
    (bad / "mindroom.plugin.json").write_bytes(manifest)

    result = runner.invoke(app, ["plugins", "list", "-c", str(deployment)])

    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert folder in result.output and "ERROR" in result.output
    assert "demo" in result.output and "loaded" in result.output


def test_plugins_list_hooks_list_and_doctor_start_no_isolated_worker(deployment):
    from mindroom.cli.doctor import check_plugins
    from mindroom.config.loading import load_config

    folder = deployment.parent / "plugins" / "demo"
    deployment.write_text(
        "models:\n  default: {provider: offline, id: offline}\nagents: {}\n"
        "plugins:\n  - {path: plugins/demo, isolated: true}\n"
    )
    for args in (["plugins", "list", "-c", str(deployment)], ["hooks", "list", "-c", str(deployment), "--json"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
    results = check_plugins(load_config(deployment, {}), deployment, deployment.parent / "mindroom_data", {})

    assert [r.detail for r in results if r.name == "plugin demo"] == ["imports; 6 hooks"]
    assert [row["plugin_name"] for row in json.loads(result.stdout)] == ["demo"] * 6
    assert running(str(folder)) == []  # no worker of the plugin: they list and check the hooks, nothing more
