"""A Git base with `credentials_service`: the credential seed of that name answers an HTTP server's basic-auth
challenge (git's own http-backend on loopback), through a helper git gets from its environment; the secret is
never on a command line, in the checkout's config, or in a log line."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from mindroom.ai.knowledge.git_checkout import (
    GitCredentials,
    GitSyncError,
    credential_environment,
    git_credentials,
    service_credentials,
    sync_checkout,
)
from mindroom.ai.knowledge.service import KnowledgeService
from mindroom.config.knowledge import KnowledgeGitConfig
from mindroom.config.main import Config
from tests.plugins.git_http import git_host

TOKEN = "ghs_docs-token-0123456789abcdef"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                   capture_output=True)  # fmt: skip


def _projects(tmp_path: Path) -> Path:
    origin = tmp_path / "projects" / "docs"
    origin.mkdir(parents=True)
    _git(origin, "init", "-q", "-b", "main")
    (origin / "guide.md").write_text("first version")
    _git(origin, "add", ".")
    _git(origin, "commit", "-q", "-m", "first")
    return origin


def _seeds(**fields: object) -> dict[str, str]:
    return {"MINDROOM_CREDENTIAL_SEEDS_JSON": json.dumps([{"service": "docs_git", "credentials": fields}])}


def _checkout_files(root: Path) -> bytes:
    return b"".join(path.read_bytes() for path in (root / ".git").rglob("*") if path.is_file())


@pytest.mark.asyncio
async def test_git_sync_answers_the_servers_challenge_with_the_seeded_token(tmp_path: Path):
    origin = _projects(tmp_path)
    env = {**_seeds(token={"env": "DOCS_TOKEN"}), "DOCS_TOKEN": TOKEN}
    checkout = tmp_path / "checkout"
    with git_host(tmp_path / "projects", "x-access-token", TOKEN) as server:
        git = KnowledgeGitConfig(repo_url=f"{server.url}/docs", credentials_service="docs_git")
        credentials = service_credentials(git, env, tmp_path)
        with capture_logs() as logs:
            cloned = await sync_checkout(checkout, git, credentials)
            (origin / "guide.md").write_text("second version")
            _git(origin, "commit", "-q", "-am", "second")
            fetched = await sync_checkout(checkout, git, credentials)
        with pytest.raises(GitSyncError) as refused:
            await sync_checkout(tmp_path / "without", git)

    assert (cloned, fetched) == (True, True)
    assert (checkout / "guide.md").read_text() == "second version"
    assert any(header.startswith("Basic ") for header in server.authorizations)
    assert TOKEN.encode() not in _checkout_files(checkout)  # not in .git/config, nor anywhere else git keeps
    assert TOKEN not in repr(logs) and TOKEN not in str(refused.value) and TOKEN not in repr(credentials)


@pytest.mark.asyncio
async def test_git_sync_with_a_near_miss_token_is_refused_without_echoing_it(tmp_path: Path):
    _projects(tmp_path)
    with git_host(tmp_path / "projects", "x-access-token", TOKEN) as server:
        git = KnowledgeGitConfig(repo_url=f"{server.url}/docs", credentials_service="docs_git")
        wrong = GitCredentials("x-access-token", TOKEN + "x")
        with pytest.raises(GitSyncError) as refused:
            await sync_checkout(tmp_path / "checkout", git, wrong)

    assert wrong.secret not in str(refused.value)
    assert not (tmp_path / "checkout" / "guide.md").exists()


@pytest.mark.asyncio
async def test_git_sync_never_answers_the_same_host_on_another_port_with_the_credentials(tmp_path: Path):
    _projects(tmp_path)
    credentials = GitCredentials("x-access-token", TOKEN)
    with (
        git_host(tmp_path / "projects", "x-access-token", TOKEN) as other,
        git_host(tmp_path / "projects", "x-access-token", TOKEN, redirect_to=other.url) as first,
    ):
        git = KnowledgeGitConfig(repo_url=f"{first.url}/docs", credentials_service="docs_git")
        with pytest.raises(GitSyncError):  # redirected to another port, which challenges: nothing answers it
            await sync_checkout(tmp_path / "checkout", git, credentials)

    assert other.authorizations == []
    assert not (tmp_path / "checkout" / "guide.md").exists()


@pytest.mark.asyncio
async def test_knowledge_service_syncs_a_base_with_its_credentials_service(tmp_path: Path):
    _projects(tmp_path)
    env = {**_seeds(username="reader", password={"env": "DOCS_PASSWORD"}), "DOCS_PASSWORD": TOKEN}
    service = KnowledgeService(storage_root=tmp_path / "data", config_dir=tmp_path, database_url=None, env=env)
    try:
        with git_host(tmp_path / "projects", "reader", TOKEN) as server:
            git = {"repo_url": f"{server.url}/docs", "credentials_service": "docs_git"}
            await service.apply(Config.model_validate({"knowledge_bases": {"docs": {"path": "kb", "git": git}}}))
            await _until(lambda: _exists(tmp_path / "kb" / "guide.md"))
    finally:
        await service.stop()


async def _exists(path: Path) -> bool:
    return await asyncio.to_thread(path.is_file)


async def _until(check: Callable[[], Awaitable[bool]], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.1)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"token": "t0ken"}, ("x-access-token", "t0ken")),
        ({"api_key": "k3y"}, ("x-access-token", "k3y")),
        ({"username": "u", "token": "t0ken"}, ("u", "t0ken")),
        ({"username": "u", "token": "t0ken", "password": "pw"}, ("u", "pw")),  # a password wins, as in MindRoom
        ({"password": "pw"}, None),  # a password needs its user name
        ({"username": "u"}, None),
        ({"tokens": "t0ken"}, None),  # a near miss of a field's name gives nothing
    ],
)
def test_git_credentials_read_a_seed_as_mindroom_does(fields: dict[str, str], expected: tuple[str, str] | None):
    found = git_credentials(fields)
    assert (None if found is None else (found.username, found.secret)) == expected


def test_service_credentials_name_the_service_that_gives_none(tmp_path: Path):
    git = KnowledgeGitConfig(repo_url="https://git.example.org/docs.git", credentials_service="docs_git_")
    with pytest.raises(GitSyncError, match="'docs_git_': no credential seed names it"):
        service_credentials(git, _seeds(token="t0ken"), tmp_path)
    unset = git.model_copy(update={"credentials_service": "docs_git"})
    with pytest.raises(GitSyncError, match="'docs_git': its seed has no token"):
        service_credentials(unset, _seeds(token={"env": "UNSET_TOKEN"}), tmp_path)


def test_credential_environment_names_only_the_repositorys_server_and_keeps_the_secret_out_of_its_config():
    credentials = GitCredentials("x-access-token", TOKEN)

    env = credential_environment("https://git.example.org:8443/team/docs.git", credentials)

    assert env["GIT_CONFIG_KEY_0"] == "credential.https://git.example.org:8443.helper"
    assert env["MINDROOM_GIT_SECRET"] == TOKEN
    assert not [value for name, value in env.items() if name != "MINDROOM_GIT_SECRET" and TOKEN in value]
    assert credential_environment("git@git.example.org:team/docs.git", credentials) == {}  # ssh: its own keys
    assert credential_environment("/srv/docs", credentials) == {}
