"""A plugin's packages import from its own folder: after the daemon's path, replaced with a new set, kept when a
new generation fails to load."""

import importlib.metadata
import importlib.util
import json
import sys
import textwrap

import pytest

from mindroom.errors import PluginImportError
from mindroom.plugins import load_plugin_dir
from mindroom.plugins.dependency_path import dependency_finder, top_level_names

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
