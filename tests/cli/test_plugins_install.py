"""`mindroom plugins install / update / remove` and `plugins.lock`, with local Git repositories and wheels pip
installs from a folder (no registry)."""

import json
import shutil
import subprocess

import pytest
from structlog.testing import capture_logs
from typer.testing import CliRunner

from mindroom.cli.app import app
from tests.git_repos import commit_files, git
from tests.plugins.git_http import git_host
from tests.plugins.wheels import make_wheel

runner = CliRunner()
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="the import check needs bubblewrap")
HOOKS = """
import tinydep
from mindroom.hooks import hook

@hook("message:received")
async def seen(ctx):
    ctx.logger.info("seen", version=tinydep.VERSION)
"""


def commit(repo, name="sizes", requirements=("tinydep==1.0",), hooks=HOOKS):
    manifest = {"name": name, "hooks_module": "hooks.py", "dependencies": list(requirements)}
    return commit_files(repo, {"mindroom.plugin.json": json.dumps(manifest), "hooks.py": hooks})


@pytest.fixture
def deploy(tmp_path, monkeypatch):
    """A config folder, and pip reading wheels from a local folder only."""
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "tinydep", "1.0", "VERSION = '1.0'\n")
    make_wheel(wheels, "tinydep", "2.0", "VERSION = '2.0'\n")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    folder = tmp_path / "deploy"
    folder.mkdir()
    (folder / "config.yaml").write_text("agents: {}\n")
    return folder


def mindroom(folder, *args):
    return runner.invoke(app, ["plugins", *args, "--config", str(folder / "config.yaml")])


def lock(folder):
    return json.loads((folder / "plugins.lock").read_text())["plugins"]


def test_plugins_install_local_repository_locks_commit_and_package_hash(deploy, tmp_path):
    head = commit(tmp_path / "sizes")

    result = mindroom(deploy, "install", str(tmp_path / "sizes"))

    assert result.exit_code == 0, result.output
    entry = lock(deploy)["sizes"]
    assert (entry["commit"], entry["ref"], entry["path"]) == (head, None, "plugins/sizes")
    assert (deploy / "plugins.lock").stat().st_mode & 0o077 == 0
    wheel = tmp_path / "wheels" / "tinydep-1.0-py3-none-any.whl"
    sha = subprocess.run(["sha256sum", str(wheel)], capture_output=True, text=True, check=True).stdout.split()[0]
    assert entry["dependencies"] == [
        {"name": "tinydep", "version": "1.0", "file": "tinydep-1.0-py3-none-any.whl", "sha256": sha}
    ]
    assert (deploy / "plugins" / "sizes" / "hooks.py").read_text() == HOOKS
    assert not (deploy / "plugins" / "sizes" / ".git").exists()
    listed = mindroom(deploy, "list")
    assert listed.exit_code == 0, listed.output
    assert "loaded" in listed.output and head[:12] in listed.output

    again = mindroom(deploy, "install", str(tmp_path / "sizes"))
    assert again.exit_code == 1
    assert "already installed" in again.output and "mindroom plugins update sizes" in again.output


def test_plugins_install_refuses_a_package_the_daemon_has_at_another_version(deploy, tmp_path):
    commit(tmp_path / "old", name="old", requirements=("pydantic<2",))

    result = mindroom(deploy, "install", str(tmp_path / "old"))

    assert result.exit_code == 1
    assert "plugin 'old' needs pydantic<2, but the daemon runs pydantic 2." in result.output
    assert not (deploy / "plugins" / "old").exists() and not (deploy / "plugins.lock").exists()


def test_plugins_install_refuses_a_package_another_plugin_has_at_another_version(deploy, tmp_path):
    commit(tmp_path / "sizes")
    commit(tmp_path / "newer", name="newer", requirements=("tinydep==2.0",))
    assert mindroom(deploy, "install", str(tmp_path / "sizes")).exit_code == 0

    result = mindroom(deploy, "install", str(tmp_path / "newer"))

    assert result.exit_code == 1
    assert "plugin 'newer' needs tinydep 2.0, but plugin 'sizes' uses tinydep 1.0" in result.output
    assert list(lock(deploy)) == ["sizes"]


def test_plugins_update_follows_the_ref_and_a_tag_stays(deploy, tmp_path):
    repo = tmp_path / "sizes"
    first = commit(repo)
    git(repo, "tag", "v1")
    assert mindroom(deploy, "install", f"{repo}@v1").exit_code == 0
    second = commit(repo, requirements=("tinydep==2.0",))

    stays = mindroom(deploy, "update", "sizes")
    assert stays.exit_code == 0 and f"Already up to date: sizes ({first[:12]})" in stays.output
    moved = mindroom(deploy, "update", "sizes", "--ref", "main")

    assert moved.exit_code == 0, moved.output
    assert f"{first[:12]} -> {second[:12]}" in moved.output
    entry = lock(deploy)["sizes"]
    assert (entry["commit"], entry["ref"]) == (second, "main")
    assert [d["version"] for d in entry["dependencies"]] == ["2.0"]
    assert len(list((deploy / "mindroom_data" / "plugin-deps" / "sizes").iterdir())) == 2  # new set and last good


@needs_bwrap
def test_plugins_update_refuses_a_version_that_does_not_import(deploy, tmp_path):
    repo = tmp_path / "sizes"
    first = commit(repo)
    assert mindroom(deploy, "install", str(repo)).exit_code == 0
    commit(repo, hooks=HOOKS + "\nimport not_installed_anywhere\n")

    result = mindroom(deploy, "update")

    assert result.exit_code == 1
    assert "plugin 'sizes'" in result.output and "No module named 'not_installed_anywhere'" in result.output
    assert lock(deploy)["sizes"]["commit"] == first
    assert (deploy / "plugins" / "sizes" / "hooks.py").read_text() == HOOKS


def test_plugins_install_locked_installs_the_same_set_and_refuses_a_changed_hash(deploy, tmp_path):
    head = commit(tmp_path / "sizes")
    assert mindroom(deploy, "install", str(tmp_path / "sizes")).exit_code == 0
    commit(tmp_path / "sizes", requirements=("tinydep==2.0",))  # newer than the lock: not what --locked installs
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    shutil.copy(deploy / "config.yaml", fresh)
    shutil.copy(deploy / "plugins.lock", fresh)

    result = mindroom(fresh, "install", "--locked")

    assert result.exit_code == 0, result.output
    assert (fresh / "plugins" / "sizes" / "hooks.py").read_text() == HOOKS
    [installed] = (fresh / "mindroom_data" / "plugin-deps" / "sizes").iterdir()
    assert (installed / "tinydep" / "__init__.py").read_text() == "VERSION = '1.0'\n"
    assert lock(fresh)["sizes"]["commit"] == head
    assert (fresh / "mindroom_data").stat().st_mode & 0o077 == 0  # the data directory it made is private

    tampered = tmp_path / "tampered"
    tampered.mkdir()
    shutil.copy(deploy / "config.yaml", tampered)
    data = json.loads((deploy / "plugins.lock").read_text())
    data["plugins"]["sizes"]["dependencies"][0]["sha256"] = "0" * 64
    (tampered / "plugins.lock").write_text(json.dumps(data))
    refused = mindroom(tampered, "install", "--locked")
    assert refused.exit_code == 1
    assert "plugin 'sizes'" in refused.output and "HASHES" in refused.output.upper()
    assert not (tampered / "mindroom_data" / "plugin-deps" / "sizes").exists() or not any(
        (tampered / "mindroom_data" / "plugin-deps" / "sizes").iterdir()
    )


def test_plugins_install_plain_folder_is_locked_by_digest(deploy, tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "mindroom.plugin.json").write_text(json.dumps({"name": "plain", "hooks_module": "hooks.py"}))
    (folder / "hooks.py").write_text("X = 1\n")
    assert mindroom(deploy, "install", str(folder)).exit_code == 0
    assert lock(deploy)["plain"]["commit"] is None and len(lock(deploy)["plain"]["digest"]) == 64
    (folder / "hooks.py").write_text("X = 2\n")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    shutil.copy(deploy / "config.yaml", fresh)
    shutil.copy(deploy / "plugins.lock", fresh)

    result = mindroom(fresh, "install", "--locked")

    assert result.exit_code == 1
    assert "plugin 'plain'" in result.output and "differ from the locked digest" in result.output


def test_plugins_remove_deletes_folder_packages_and_lock_entry(deploy, tmp_path):
    commit(tmp_path / "sizes")
    assert mindroom(deploy, "install", str(tmp_path / "sizes")).exit_code == 0

    result = mindroom(deploy, "remove", "sizes")

    assert result.exit_code == 0, result.output
    assert not (deploy / "plugins" / "sizes").exists()
    assert not (deploy / "mindroom_data" / "plugin-deps" / "sizes").exists()
    assert lock(deploy) == {}
    missing = mindroom(deploy, "remove", "sizes")
    assert (
        missing.exit_code == 1 and "plugin 'sizes'" in missing.output and "no entry in plugins.lock" in missing.output
    )


def test_plugins_install_needs_exactly_one_of_source_or_locked(deploy):
    for args in (("install",), ("install", "acme/sizes", "--locked")):
        result = mindroom(deploy, *args)
        assert result.exit_code == 2 and "pass exactly one of SOURCE or --locked" in result.output


def test_plugins_install_from_a_url_with_credentials_never_keeps_them(deploy, tmp_path, monkeypatch):
    secret = "s3cret-t0ken"
    work = tmp_path / "work"
    commit(work)
    served = tmp_path / "served"
    served.mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(served / "sizes.git")], check=True)
    # The operator's own git stores what it is given: the URL's credential must never land there.
    stored = tmp_path / "git-credentials"
    (tmp_path / "gitconfig").write_text(f"[credential]\n\thelper = store --file={stored}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))

    with git_host(served, "deploy", secret) as host, capture_logs() as logs:
        plain = f"{host.url}/sizes.git"
        installed = mindroom(deploy, "install", plain.replace("http://", f"http://deploy:{secret}@"))
        assert installed.exit_code == 0, installed.output
        assert lock(deploy)["sizes"]["source"] == plain
        assert not stored.exists()

        git(work, "push", "-q", str(served / "sizes.git"), "main")
        commit(work, requirements=("tinydep==2.0",))
        git(work, "push", "-q", str(served / "sizes.git"), "main")
        refused = mindroom(deploy, "update", "sizes")
        assert refused.exit_code == 1
        assert "plugin 'sizes'" in refused.output and "credential helper" in refused.output

        # With the credential given to git the way docs/plugins.md says, update and --locked fetch again.
        stored.write_text(f"http://deploy:{secret}@127.0.0.1:{host.url.rsplit(':', 1)[1]}\n")
        updated = mindroom(deploy, "update", "sizes")
        assert updated.exit_code == 0, updated.output
        fresh = tmp_path / "fresh"
        fresh.mkdir()
        shutil.copy(deploy / "config.yaml", fresh)
        shutil.copy(deploy / "plugins.lock", fresh)
        assert mindroom(fresh, "install", "--locked").exit_code == 0

    assert host.expected in host.authorizations
    for folder in (deploy, fresh):
        assert secret not in (folder / "plugins.lock").read_text()
    assert not any(secret in result.output for result in (installed, refused, updated))
    assert secret not in repr(logs)
