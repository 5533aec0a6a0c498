"""A plugin's packages import from its own folder: after the daemon's path, replaced with a new set, kept when a
new generation fails to load."""

import importlib.metadata
import importlib.util
import json
import os
import shutil
import sys
import textwrap

import pytest
from structlog.testing import capture_logs

from mindroom.config import load_config
from mindroom.config.plugin import PluginEntryConfig
from mindroom.constants import RuntimePaths
from mindroom.errors import PluginImportError
from mindroom.hooks import EVENT_MESSAGE_RECEIVED, HookRegistry, MessageReceivedContext
from mindroom.hooks.execution import emit
from mindroom.plugins import load_plugin_dir, load_plugins
from mindroom.plugins.dependency_path import dependency_finder, top_level_names
from mindroom.plugins.lock import LockedDependency, LockedPlugin, PluginsLock, deps_folder, write_lock

HOOKS = """
import sizelib_{tag}
from mindroom.hooks import hook

def version():
    return sizelib_{tag}.VERSION

@hook("message:received")
async def noop(ctx):
    pass
"""


def package_set(root, tag, version):
    folder = root / f"set-{version}"
    (folder / f"sizelib_{tag}").mkdir(parents=True)
    (folder / f"sizelib_{tag}" / "__init__.py").write_text(f"VERSION = {version!r}\n")
    info = folder / f"sizelib_{tag}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: sizelib_{tag}\nVersion: {version}\n")
    return folder


def plugin(root, name, source):
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "mindroom.plugin.json").write_text(json.dumps({"name": name, "hooks_module": "hooks.py"}))
    (folder / "hooks.py").write_text(textwrap.dedent(source))
    return folder


@pytest.fixture
def tag(request):
    name = request.node.name.split("[")[0][-12:].replace("-", "_")
    yield name
    dependency_finder().register(f"plug_{name}", None)
    for module in [m for m in sys.modules if m.startswith(f"sizelib_{name}")]:
        sys.modules.pop(module)


def test_dependency_path_package_imports_only_once_its_plugin_registers_it(tmp_path, tag):
    deps = package_set(tmp_path, tag, "1.0")
    folder = plugin(tmp_path, f"plug_{tag}", HOOKS.format(tag=tag))

    with pytest.raises(PluginImportError, match=f"No module named 'sizelib_{tag}'"):
        load_plugin_dir(folder)
    loaded = load_plugin_dir(folder, deps_dir=deps)

    assert loaded.hooks_module.version() == "1.0"
    assert importlib.metadata.version(f"sizelib_{tag}") == "1.0"
    assert top_level_names(deps) == {f"sizelib_{tag}"}


def test_dependency_path_new_set_is_imported_afresh_and_the_old_generation_keeps_its_own(tmp_path, tag):
    folder = plugin(tmp_path, f"plug_{tag}", HOOKS.format(tag=tag))
    old = load_plugin_dir(folder, deps_dir=package_set(tmp_path, tag, "1.0"))
    new = load_plugin_dir(folder, deps_dir=package_set(tmp_path, tag, "2.0"))

    assert (old.hooks_module.version(), new.hooks_module.version()) == ("1.0", "2.0")


def test_dependency_path_failed_load_keeps_the_last_good_set(tmp_path, tag):
    folder = plugin(tmp_path, f"plug_{tag}", HOOKS.format(tag=tag))
    good = load_plugin_dir(folder, deps_dir=package_set(tmp_path, tag, "1.0"))
    sys.modules.pop(f"sizelib_{tag}")  # the last good generation imports it again (a lazy import)
    plugin(tmp_path, f"plug_{tag}", HOOKS.format(tag=tag) + "\nimport not_installed_anywhere\n")

    with pytest.raises(PluginImportError):
        load_plugin_dir(folder, deps_dir=package_set(tmp_path, tag, "2.0"))

    assert importlib.import_module(f"sizelib_{tag}").VERSION == "1.0"
    assert good.hooks_module.version() == "1.0"


def test_dependency_path_daemon_packages_win_over_a_plugin_folder(tmp_path, tag):
    deps = tmp_path / "shadow"
    (deps / "pypdf").mkdir(parents=True)
    (deps / "pypdf" / "__init__.py").write_text("SHADOW = True\n")
    dependency_finder().register(f"plug_{tag}", deps)

    spec = importlib.util.find_spec("pypdf")

    assert spec is not None and str(deps) not in str(spec.origin)


ISOLATED_HOOKS = """
import os
from pathlib import Path

import sizelib_{tag}
from mindroom.hooks import hook

@hook("message:received", timeout_ms=10000)
async def seen(ctx):
    Path(ctx.settings["out"]).write_text(f"{{os.getpid()}} {{sizelib_{tag}.VERSION}}")
"""


@pytest.mark.asyncio
async def test_dependency_path_isolated_worker_imports_the_plugins_packages(tmp_path, tag, hook_context_factory):
    folder = plugin(tmp_path, f"plug_{tag}", ISOLATED_HOOKS.format(tag=tag))
    out = tmp_path / "seen"
    entry = PluginEntryConfig(path=str(folder), settings={"out": str(out)}, isolated=True)
    registry = HookRegistry.from_plugins(
        [load_plugin_dir(folder, entry_config=entry, deps_dir=package_set(tmp_path, tag, "3.0"))]
    )
    try:
        ctx = hook_context_factory(MessageReceivedContext, agent_name="helper", room_id="!lab:example.org", body="x")
        await emit(registry, EVENT_MESSAGE_RECEIVED, ctx)
    finally:
        registry.isolated.close()

    pid, version = out.read_text().split()
    assert int(pid) != os.getpid() and version == "3.0"
    assert next(hook.stats for hook in registry.all_hooks()).failures == 0


def test_dependency_path_config_plugin_finds_its_locked_set_and_a_missing_set_says_how_to_install_it(tmp_path, tag):
    name = f"plug_{tag}"
    plugin(tmp_path / "plugins", name, HOOKS.format(tag=tag))
    (tmp_path / "config.yaml").write_text("agents: {}\n")
    dependency = LockedDependency(f"sizelib_{tag}", "1.0", f"sizelib_{tag}-1.0-py3-none-any.whl", "a" * 64)
    locked = LockedPlugin(name, "https://example.org/x.git", None, "0" * 40, f"plugins/{name}", (), (dependency,))
    write_lock(tmp_path / "plugins.lock", PluginsLock().with_plugin(locked))
    paths = RuntimePaths(config_path=tmp_path / "config.yaml", storage_root=tmp_path / "data")
    config = load_config(tmp_path / "config.yaml", env={})

    with capture_logs() as logs:
        missing = load_plugins(config, paths)
    shutil.copytree(package_set(tmp_path, tag, "1.0"), deps_folder(paths.storage_root, locked))
    present = load_plugins(config, paths)

    assert [error.plugin for error in missing.errors] == [name]
    assert f"No module named 'sizelib_{tag}'" in missing.errors[0].cause
    warning = next(log for log in logs if log["event"] == "plugin packages are not installed")
    assert warning["plugin"] == name and warning["fix"] == "mindroom plugins install --locked"
    assert present.errors == () and present.plugins[0].hooks_module.version() == "1.0"
