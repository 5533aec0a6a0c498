"""`mindroom plugins install / update` on a running daemon: a plugin from a Git repository, with a package from
the registry, answers in a real Synapse room; a broken version is refused and the running one keeps working;
`--locked` installs the same set elsewhere; a package clashing with the daemon's is refused."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mindroom.testing.model_server import Text
from tests.git_repos import commit_files, git
from tests.integration.conftest import E2E
from tests.integration.test_builtin_tools import ask, start

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="the import check before an update needs bubblewrap"),
]

HOOKS = """
from importlib import metadata

import humanize
from mindroom.hooks import hook


@hook("message:before_response")
async def size(ctx):
    ctx.draft.response_text += f" [STAMP humanize {metadata.version('humanize')}: {humanize.naturalsize(3000)}]"
"""


def _commit(repo: Path, stamp: str, requirement: str, extra: str = "") -> str:
    manifest = {"name": "sizes", "hooks_module": "hooks.py", "dependencies": [requirement]}
    files = {"mindroom.plugin.json": json.dumps(manifest), "hooks.py": HOOKS.replace("STAMP", stamp) + extra}
    return commit_files(repo, files, stamp)


async def _mindroom(config_dir: Path, storage: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command as an operator runs it, in a process of its own (the daemon's loop keeps running)."""
    argv = [sys.executable, "-m", "mindroom", "plugins", *args]
    argv += ["--config", str(config_dir / "config.yaml"), "--storage-path", str(storage)]
    return await asyncio.to_thread(
        subprocess.run, argv, capture_output=True, text=True, timeout=300, cwd=config_dir, env=dict(os.environ)
    )


def _lock(config_dir: Path) -> dict:
    return json.loads((config_dir / "plugins.lock").read_text())["plugins"]


async def test_plugin_install_update_locked_and_conflict_on_a_running_daemon(e2e: E2E, tmp_path: Path):
    repo = tmp_path / "sizes"
    first = _commit(repo, "v1", "humanize==4.9.0")
    (e2e.config_dir / "plugins").mkdir(parents=True)
    agent = e2e.name("helper")
    human, room_id = await start(e2e, {agent: {}})
    e2e.model_server.set_default(Text("answer"), model="agent-model")

    saved = time.time()
    installed = await _mindroom(e2e.config_dir, e2e.storage, "install", str(repo))
    assert installed.returncode == 0, installed.stderr
    assert "Package: humanize 4.9.0" in installed.stdout
    outcome = await e2e.reloads.wait(saved)
    assert outcome.ok and outcome.error is None
    _, reply = await ask(e2e, human, room_id, agent, "one")
    assert reply["content"]["body"] == "answer [v1 humanize 4.9.0: 3.0 kB]"
    locked = _lock(e2e.config_dir)["sizes"]
    assert locked["commit"] == first and locked["source"] == str(repo)
    assert [(d["name"], d["version"]) for d in locked["dependencies"]] == [("humanize", "4.9.0")]
    assert len(locked["dependencies"][0]["sha256"]) == 64

    second = _commit(repo, "v2", "humanize==4.10.0")
    saved = time.time()
    updated = await _mindroom(e2e.config_dir, e2e.storage, "update", "sizes")
    assert updated.returncode == 0, updated.stderr
    assert f"{first[:12]} -> {second[:12]}" in updated.stdout
    assert (await e2e.reloads.wait(saved)).ok
    _, reply = await ask(e2e, human, room_id, agent, "two")
    assert reply["content"]["body"] == "answer [v2 humanize 4.10.0: 3.0 kB]"

    # A version that does not import is refused before it is put in place: the lock names the live commit.
    _commit(repo, "v3", "humanize==4.10.0", extra="\nimport tabulate\n")
    refused = await _mindroom(e2e.config_dir, e2e.storage, "update", "sizes")
    assert refused.returncode == 1
    assert "plugin 'sizes'" in refused.stderr and "No module named 'tabulate'" in refused.stderr
    assert _lock(e2e.config_dir)["sizes"]["commit"] == second
    assert "v2" in (e2e.config_dir / "plugins" / "sizes" / "hooks.py").read_text()

    # A broken folder all the same (edited by hand): the last good generation keeps running, with its packages.
    saved = time.time()
    (e2e.config_dir / "plugins" / "sizes" / "hooks.py").write_text("import tabulate\n")
    outcome = await e2e.reloads.wait(saved)
    assert outcome.kept == ("sizes",)
    _, reply = await ask(e2e, human, room_id, agent, "three")
    assert reply["content"]["body"] == "answer [v2 humanize 4.10.0: 3.0 kB]"

    clash = tmp_path / "clash"
    shutil.copytree(repo, clash)
    manifest = {"name": "clash", "hooks_module": "hooks.py", "dependencies": ["pydantic<2"]}
    (clash / "mindroom.plugin.json").write_text(json.dumps(manifest))
    git(clash, "commit", "-q", "-am", "clash")
    conflicting = await _mindroom(e2e.config_dir, e2e.storage, "install", str(clash))
    assert conflicting.returncode == 1
    assert "plugin 'clash' needs pydantic<2, but the daemon runs pydantic 2." in conflicting.stderr
    assert not (e2e.config_dir / "plugins" / "clash").exists() and "clash" not in _lock(e2e.config_dir)

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    shutil.copy(e2e.config_dir / "config.yaml", fresh / "config.yaml")
    shutil.copy(e2e.config_dir / "plugins.lock", fresh / "plugins.lock")
    again = await _mindroom(fresh, fresh / "data", "install", "--locked")
    assert again.returncode == 0, again.stderr
    assert (fresh / "plugins" / "sizes" / "hooks.py").read_text() == HOOKS.replace("STAMP", "v2")
    packages = list((fresh / "data" / "plugin-deps" / "sizes").glob("*/humanize-4.10.0.dist-info"))
    assert len(packages) == 1
    listed = await _mindroom(fresh, fresh / "data", "list")
    assert listed.returncode == 0, listed.stdout
    assert "sizes" in listed.stdout and "loaded" in listed.stdout
