"""`plugins.lock`: written and read back, each plugin's package set named by its content, bad entries named."""

import json

import pytest

from mindroom.plugins.lock import (
    DEPS_DIRNAME,
    LockedDependency,
    LockedPlugin,
    PluginInstallError,
    PluginsLock,
    deps_folder,
    read_lock,
    write_lock,
)

SHA = "a" * 64


def entry(name="sizes", *deps):
    return LockedPlugin(
        name=name,
        source="https://example.org/sizes.git",
        ref="main",
        commit="0" * 40,
        path=f"plugins/{name}",
        requirements=("humanize==4.9.0",),
        dependencies=tuple(deps),
    )


def test_lock_written_and_read_back_equal(tmp_path):
    lock = (
        PluginsLock()
        .with_plugin(entry("b", LockedDependency("humanize", "4.9.0", "h.whl", SHA)))
        .with_plugin(entry("a"))
    )
    write_lock(tmp_path / "plugins.lock", lock)

    assert read_lock(tmp_path / "plugins.lock") == lock
    assert list(json.loads((tmp_path / "plugins.lock").read_text())["plugins"]) == ["a", "b"]
    assert read_lock(tmp_path / "plugins.lock").without("a").plugins.keys() == {"b"}


def test_lock_missing_file_is_empty(tmp_path):
    assert read_lock(tmp_path / "plugins.lock") == PluginsLock()


def test_lock_package_set_folder_changes_with_any_hash_and_is_none_without_packages(tmp_path):
    one = entry("sizes", LockedDependency("humanize", "4.9.0", "h.whl", SHA))
    other = entry("sizes", LockedDependency("humanize", "4.9.0", "h.whl", "b" + SHA[1:]))

    assert deps_folder(tmp_path, one) == tmp_path / DEPS_DIRNAME / "sizes" / one.deps_set
    assert one.deps_set != other.deps_set
    assert deps_folder(tmp_path, entry("sizes")) is None


@pytest.mark.parametrize(
    ("dependency", "where"),
    [
        ({"name": "humanize", "version": "4.9.0", "file": "h.whl", "sha256": SHA[:-1]}, "dependencies[0].sha256"),
        ({"name": "humanize", "version": "4.9.0", "file": "h.whl", "sha256": SHA.upper()}, "dependencies[0].sha256"),
        ({"name": "humanize", "version": "", "file": "h.whl", "sha256": SHA}, "dependencies[0].version"),
        ({"name": "humanize", "version": "4.9.0", "sha256": SHA}, "dependencies[0].file"),
    ],
)
def test_lock_bad_dependency_is_refused_naming_its_key(tmp_path, dependency, where):
    raw = {"version": 1, "plugins": {"sizes": {**entry().to_json(), "dependencies": [dependency]}}}
    (tmp_path / "plugins.lock").write_text(json.dumps(raw))

    with pytest.raises(PluginInstallError) as caught:
        read_lock(tmp_path / "plugins.lock")

    assert f"plugins.sizes.{where}" in caught.value.cause
    assert caught.value.path == tmp_path / "plugins.lock"


def test_lock_of_another_version_is_refused(tmp_path):
    (tmp_path / "plugins.lock").write_text(json.dumps({"version": 2, "plugins": {}}))

    with pytest.raises(PluginInstallError, match="version: expected 1"):
        read_lock(tmp_path / "plugins.lock")


@pytest.mark.parametrize(
    ("name", "path"),
    [("sizes", "../../outside/sizes"), ("sizes", "/etc/cron.d"), ("sizes", "plugins/sizes2"), ("../x", "plugins/x")],
)
def test_lock_entry_placing_files_elsewhere_is_refused(tmp_path, name, path):
    raw = {"version": 1, "plugins": {name: {**entry().to_json(), "path": path}}}
    (tmp_path / "plugins.lock").write_text(json.dumps(raw))

    with pytest.raises(PluginInstallError, match=f"plugins.{name}"):
        read_lock(tmp_path / "plugins.lock")
