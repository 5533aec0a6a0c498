"""A Git base's sync runs git as a tool: no option, helper, hook or variable of anyone else's reaches it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mindroom.ai.knowledge.git_checkout import GitSyncError, sync_checkout
from mindroom.config.knowledge import KnowledgeGitConfig
from tests.git_repos import commit_files, git

pytestmark = pytest.mark.asyncio


def _origin(tmp_path: Path) -> Path:
    origin = tmp_path / "origin"
    commit_files(origin, {"guide.md": "first version"}, "first")
    return origin


def _bypassing_checks(source: KnowledgeGitConfig, **values: str) -> KnowledgeGitConfig:
    return KnowledgeGitConfig.model_construct(**{**source.model_dump(), **values})


async def test_git_sync_never_takes_the_branch_for_an_option(tmp_path: Path):
    origin = _origin(tmp_path)
    checkout = tmp_path / "checkout"
    marker = tmp_path / "marker"
    source = KnowledgeGitConfig(repo_url=str(origin))
    await sync_checkout(checkout, source)
    injected = _bypassing_checks(source, branch=f"--upload-pack=touch {marker}; git-upload-pack")

    with pytest.raises(GitSyncError, match=r"git\.branch refused"):
        await sync_checkout(checkout, injected)  # a fetch into the checkout
    with pytest.raises(GitSyncError, match=r"git\.branch refused"):
        await sync_checkout(tmp_path / "fresh", injected)  # a clone

    assert not marker.exists()
    assert await sync_checkout(checkout, source) is False  # the checkout still follows its real branch


async def test_git_sync_reaches_no_transport_the_user_config_allows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    marker = tmp_path / "marker"
    home = tmp_path / "home"
    home.mkdir()
    # The daemon's user allows every transport, remote helpers included; a base must not get them.
    (home / ".gitconfig").write_text("[protocol]\n\tallow = always\n")
    monkeypatch.setenv("HOME", str(home))
    helper = _bypassing_checks(KnowledgeGitConfig(repo_url="https://git.example.org/r.git"),
                               repo_url=f"ext::sh -c touch% {marker}")  # fmt: skip

    with pytest.raises(GitSyncError) as refused:
        await sync_checkout(tmp_path / "checkout", helper)

    assert not marker.exists()
    assert "git.repo_url refused (it names a remote helper" in str(refused.value)


async def test_git_sync_runs_no_hook_of_the_checkout(tmp_path: Path):
    origin = _origin(tmp_path)
    checkout = tmp_path / "checkout"
    source = KnowledgeGitConfig(repo_url=origin.as_uri())
    await sync_checkout(checkout, source)
    marker = tmp_path / "hook-ran"
    hook = checkout / ".git" / "hooks" / "reference-transaction"  # run by fetch and reset when hooks are on
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    (origin / "guide.md").write_text("second version")
    git(origin, "commit", "-q", "-am", "second")

    assert await sync_checkout(checkout, source) is True

    assert (checkout / "guide.md").read_text() == "second version" and not marker.exists()


async def test_git_sync_refuses_a_checkout_whose_config_names_a_command(tmp_path: Path):
    origin = _origin(tmp_path)
    checkout = tmp_path / "checkout"
    source = KnowledgeGitConfig(repo_url=origin.as_uri())
    await sync_checkout(checkout, source)
    marker = tmp_path / "config-ran"
    git(checkout, "config", "core.fsmonitor", f"touch {marker}")
    git(checkout, "config", "core.logAllRefUpdates", "true")  # a key a clone writes itself is fine

    with pytest.raises(GitSyncError) as refused:
        await sync_checkout(checkout, source)

    assert not marker.exists()
    assert "sets core.fsmonitor," in str(refused.value) and "logallrefupdates" not in str(refused.value)


async def test_git_sees_none_of_the_daemons_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    bin_dir, dump = tmp_path / "bin", tmp_path / "git-env"
    bin_dir.mkdir()
    fake = bin_dir / "git"
    fake.write_text(f'#!/bin/sh\nenv > {dump}\nprintf "%s\\n" "$@" > {dump}.args\n')
    fake.chmod(0o755)
    path = f"{bin_dir}:/usr/bin:/bin"
    monkeypatch.setenv("PATH", path)
    secrets = {
        "OPENAI_API_KEY": "sk-provider-secret",
        "MATRIX_REGISTRATION_SHARED_SECRET": "matrix-shared-secret",
        "MINDROOM_DATABASE_URL": "postgresql://u:db-password@db/x",
        "HOME_TOKEN": "near-miss-of-home",
        "PATH_SECRET": "near-miss-of-path",
        "GIT_SSH_COMMAND": "ssh -o ProxyCommand=evil",
        "GIT_CONFIG_PARAMETERS": "'core.fsmonitor'='evil'",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)

    assert await sync_checkout(tmp_path / "fresh", KnowledgeGitConfig(repo_url="https://git.example.org/r.git"))

    env = dict(line.split("=", 1) for line in dump.read_text().splitlines() if "=" in line)
    assert not set(secrets) & set(env)
    assert not any(value in dump.read_text() for value in secrets.values())
    assert env["PATH"] == path and env["GIT_ALLOW_PROTOCOL"] == "https:ssh:file:http:git"
    assert env["GIT_CONFIG_GLOBAL"] == "/dev/null" and env["GIT_CONFIG_NOSYSTEM"] == "1"
    args = dump.with_name("git-env.args").read_text().splitlines()
    assert args[args.index("--") + 1] == "https://git.example.org/r.git"
