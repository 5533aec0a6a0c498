"""The daemon's knowledge bases: kept fresh by the watcher and by Git syncs, rebuilt or stopped on reload."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import pytest_asyncio
from structlog.testing import capture_logs

from mindroom.ai.knowledge.git_checkout import GitSyncError, sync_checkout
from mindroom.ai.knowledge.service import KnowledgeService
from mindroom.config.knowledge import KnowledgeGitConfig
from mindroom.config.main import Config

pytestmark = pytest.mark.asyncio


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                   capture_output=True)  # fmt: skip


def _origin(tmp_path: Path, text: str) -> Path:
    origin = tmp_path / "origin"
    origin.mkdir()
    _git(origin, "init", "-q", "-b", "main")
    (origin / "guide.md").write_text(text)
    _git(origin, "add", ".")
    _git(origin, "commit", "-q", "-m", "first")
    return origin


async def _until(check: Callable[[], Awaitable[bool]], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.1)


@pytest_asyncio.fixture
async def service(tmp_path: Path) -> AsyncIterator[KnowledgeService]:
    running = KnowledgeService(storage_root=tmp_path / "data", config_dir=tmp_path, database_url=None, env={})
    yield running
    await running.stop()


async def test_git_sync_clones_then_follows_the_branch_and_discards_local_edits(tmp_path: Path):
    origin = _origin(tmp_path, "first version")
    checkout = tmp_path / "checkout"
    git = KnowledgeGitConfig(repo_url=origin.as_uri())

    assert await sync_checkout(checkout, git) is True
    assert (checkout / "guide.md").read_text() == "first version"
    (checkout / "guide.md").write_text("local edit")
    (checkout / "stray.md").write_text("left behind")
    assert await sync_checkout(checkout, git) is False
    assert (checkout / "guide.md").read_text() == "first version" and not (checkout / "stray.md").exists()
    (origin / "guide.md").write_text("second version")
    _git(origin, "commit", "-q", "-am", "second")
    assert await sync_checkout(checkout, git) is True
    assert (checkout / "guide.md").read_text() == "second version"


async def test_git_sync_refuses_a_folder_that_is_not_its_checkout(tmp_path: Path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "file.md").write_text("mine")

    with pytest.raises(GitSyncError, match="not a Git checkout"):
        await sync_checkout(tmp_path / "busy", KnowledgeGitConfig(repo_url=(tmp_path / "nowhere").as_uri()))


async def test_knowledge_service_watches_folders_and_follows_reloads(tmp_path: Path, service: KnowledgeService):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("The kestrel hovers.")
    config = Config.model_validate({"knowledge_bases": {"docs": {"path": "docs"}, "shelf": {"mode": "files"}}})

    await service.apply(config)
    base = service.get("docs")
    assert base is not None and service.get("shelf") is None
    await _until(lambda: _finds(base, "kestrel"))
    (tmp_path / "docs" / "b.md").write_text("The heron waits.")
    await _until(lambda: _finds(base, "heron"))  # the watcher saw the new file

    await service.apply(config)
    assert service.get("docs") is base  # nothing changed: the same base keeps running
    await service.apply(Config.model_validate({"knowledge_bases": {"docs": {"path": "docs", "chunk_size": 200}}}))
    rebuilt = service.get("docs")
    assert rebuilt is not None and rebuilt is not base
    await _until(lambda: _finds(rebuilt, "heron"))
    await service.apply(Config())
    assert service.get("docs") is None


async def test_knowledge_service_indexes_a_git_base(tmp_path: Path, service: KnowledgeService):
    origin = _origin(tmp_path, "Runbook: restart the pump twice.")
    config = Config.model_validate(
        {"knowledge_bases": {"ops": {"path": "checkouts/ops", "git": {"repo_url": origin.as_uri()}}}}
    )

    await service.apply(config)
    base = service.get("ops")

    assert base is not None
    await _until(lambda: _finds(base, "pump"))
    assert base.root == tmp_path / "checkouts" / "ops"


def _inotify_watched_inodes() -> set[int]:
    """The inodes this process's inotify instances watch, as the kernel reports them."""
    inodes: set[int] = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify":
                lines = Path(f"/proc/self/fdinfo/{fd}").read_text().splitlines()
                inodes.update(int(line.split("ino:")[1].split()[0], 16) for line in lines if line.startswith("inotify"))
    return inodes


async def test_knowledge_watcher_watches_nothing_behind_a_symlink(tmp_path: Path, service: KnowledgeService):
    outside, docs = tmp_path / "outside", tmp_path / "docs"
    (outside / "deep").mkdir(parents=True)
    (outside / "secret.md").write_text("The vault code is 4711.")
    docs.mkdir()
    (docs / "a.md").write_text("The kestrel hovers.")
    (docs / "link").symlink_to(outside, target_is_directory=True)
    (docs / "file-link.md").symlink_to(outside / "secret.md")
    (docs / "inner").mkdir()

    with capture_logs() as logs:
        await service.apply(Config.model_validate({"knowledge_bases": {"docs": {"path": "docs"}}}))
        base = service.get("docs")
        assert base is not None
        await _until(lambda: _finds(base, "kestrel"))
        watched = _inotify_watched_inodes()
        assert {docs.stat().st_ino, (docs / "inner").stat().st_ino} <= watched
        assert not {outside.stat().st_ino, (outside / "deep").stat().st_ino} & watched

        (outside / "new.md").write_text("The osprey dives.")
        (outside / "deep" / "more.md").write_text("The osprey again.")
        (outside / "secret.md").write_text("The vault code is 1234.")
        (docs / "inner" / "b.md").write_text("The heron waits.")
        await _until(lambda: _finds(base, "heron"))

    refreshes = [entry for entry in logs if entry["event"] == "knowledge base refreshed"]
    assert len(refreshes) == 2  # the first one, and the one for b.md
    assert sorted(base.index.files()) == ["a.md", "inner/b.md"]
    assert not await _finds(base, "vault") and not await _finds(base, "osprey")


async def test_knowledge_watcher_follows_folders_made_after_it_started(tmp_path: Path, service: KnowledgeService):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("The kestrel hovers.")
    await service.apply(Config.model_validate({"knowledge_bases": {"docs": {"path": "docs"}}}))
    base = service.get("docs")
    assert base is not None
    await _until(lambda: _finds(base, "kestrel"))

    (docs / "new" / "deeper").mkdir(parents=True)
    (docs / "new" / "deeper" / "b.md").write_text("The heron waits.")
    await _until(lambda: _finds(base, "heron"))
    (docs / "new" / "deeper" / "c.md").write_text("The wren sings.")  # in a folder that did not exist at start
    await _until(lambda: _finds(base, "wren"))
    (docs / "new" / "deeper").rename(docs / "moved")
    (docs / "moved" / "d.md").write_text("The swift turns.")
    await _until(lambda: _finds(base, "swift"))


async def _finds(base, words: str) -> bool:  # type: ignore[no-untyped-def]
    return any(words in hit.content for hit in await base.search(words))
