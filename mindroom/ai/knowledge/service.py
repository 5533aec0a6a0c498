"""The daemon's knowledge bases: built from `knowledge_bases:`, kept fresh in the background, searched by turns.

Each semantic base gets a keeper task: it refreshes the index at start, then whenever the folder changes
(watchfiles, changes within half a second taken as one; only the base's own folders are watched, never one
behind a symbolic link, so writes elsewhere cost nothing), every `poll_interval_seconds` if set, and for a
Git base every `git.poll_interval_seconds` after syncing the checkout. A reload keeps a base whose
settings (and embedder) did not change, and rebuilds one whose did. `stop()` cancels and awaits every
keeper and closes the indexes. `files` bases have no index and no keeper (agents read them with file tools).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mindroom.ai.knowledge.base import KnowledgeBase
from mindroom.ai.knowledge.embedder import EmbedderSpec, embedder_spec
from mindroom.ai.knowledge.git_checkout import service_credentials, sync_checkout
from mindroom.config.knowledge import KnowledgeBaseConfig
from mindroom.config.main import Config
from mindroom.logging_config import get_logger
from mindroom.state.location import open_knowledge_index

if TYPE_CHECKING:
    from watchfiles import Change

__all__ = ["WATCH_DEBOUNCE_MS", "KnowledgeService", "base_root"]

logger = get_logger(__name__)

WATCH_DEBOUNCE_MS = 500
"""File changes closer together than this are one refresh."""
_MISSING_FOLDER_RETRY_S = 30.0


def base_root(config_dir: Path, base: KnowledgeBaseConfig) -> Path:
    """A base's folder: its `path`, relative to the config file's folder unless absolute."""
    path = Path(base.path).expanduser()
    return path if path.is_absolute() else (config_dir / path).resolve()


@dataclass(slots=True)
class _Running:
    base: KnowledgeBase
    signature: tuple[KnowledgeBaseConfig, EmbedderSpec | None, Path]
    keeper: asyncio.Task[None]


class KnowledgeService:
    """The knowledge bases of one daemon run (the owner of their keeper tasks and indexes)."""

    def __init__(
        self, *, storage_root: Path, config_dir: Path, database_url: str | None, env: Mapping[str, str]
    ) -> None:
        self.storage_root = storage_root
        self.config_dir = config_dir
        self.database_url = database_url
        self.env = dict(env)
        self._running: dict[str, _Running] = {}

    async def apply(self, config: Config) -> None:
        """Start, keep, rebuild or stop bases so that they match `config` (at start and on every reload)."""
        spec = embedder_spec(config.memory.embedder, self.env) if config.knowledge_bases else None
        wanted = {
            base_id: (base, spec, base_root(self.config_dir, base))
            for base_id, base in config.knowledge_bases.items()
            if base.mode == "semantic"
        }
        for base_id in [base_id for base_id in self._running if base_id not in wanted]:
            await self._stop(base_id)
        for base_id, signature in wanted.items():
            running = self._running.get(base_id)
            if running is not None and running.signature == signature:
                continue
            if running is not None:
                await self._stop(base_id)
            base_config, embedder, root = signature
            index = await asyncio.to_thread(open_knowledge_index, self.storage_root, self.database_url, base_id)
            base = KnowledgeBase(base_id, base_config, root, index, embedder)
            keeper = asyncio.create_task(self._keep(base), name=f"knowledge-{base_id}")
            self._running[base_id] = _Running(base, signature, keeper)

    def get(self, base_id: str) -> KnowledgeBase | None:
        """A running base by id."""
        running = self._running.get(base_id)
        return None if running is None else running.base

    def bases(self, base_ids: Iterable[str]) -> tuple[KnowledgeBase, ...]:
        """The running bases among `base_ids`, in that order (an agent's `knowledge_bases`)."""
        return tuple(base for base in (self.get(base_id) for base_id in base_ids) if base is not None)

    async def _stop(self, base_id: str) -> None:
        running = self._running.pop(base_id)
        running.keeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running.keeper
        await running.base.close()

    async def stop(self) -> None:
        """Cancel every keeper and close every index."""
        for base_id in list(self._running):
            await self._stop(base_id)

    async def _keep(self, base: KnowledgeBase) -> None:
        config = base.config
        poll = config.git.poll_interval_seconds if config.git else config.poll_interval_seconds
        dirty = asyncio.Event()
        dirty.set()
        watcher: asyncio.Task[None] | None = None
        try:
            while True:
                if config.watch and config.git is None and watcher is None and base.root.is_dir():
                    # The watcher sets `dirty` once its watches are in place (and when it ends), so the refresh
                    # reads the folder only when a change made meanwhile would refresh again.
                    dirty.clear()
                    watcher = asyncio.create_task(_watch(base, dirty), name=f"knowledge-watch-{base.base_id}")
                await dirty.wait()
                dirty.clear()
                await self._refresh(base)
                wait = poll if poll is not None else (None if base.root.is_dir() else _MISSING_FOLDER_RETRY_S)
                if wait is not None:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(dirty.wait(), wait)
                    dirty.set()
        finally:
            if watcher is not None:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher

    async def _refresh(self, base: KnowledgeBase) -> None:
        try:
            if base.config.git is not None:
                credentials = service_credentials(base.config.git, self.env, self.config_dir)
                await sync_checkout(base.root, base.config.git, credentials)
            await base.refresh()
        except Exception as exc:  # logged; the base keeps what it had and tries again at its next change or poll
            logger.warning("knowledge base not refreshed", base=base.base_id, error=str(exc))


def _watched_folders(root: Path, skip_hidden: bool) -> list[str]:
    """The base's folder and each folder below it that is its own: not a link, not `.git`, not hidden if skipped."""
    folders = [str(root)]
    for folder, dirs, _names in os.walk(root):  # a linked folder is listed by os.walk, never entered
        dirs[:] = sorted(
            name for name in dirs
            if name != ".git" and not (skip_hidden and name.startswith(".")) and not os.path.islink(Path(folder, name))
        )  # fmt: skip
        folders.extend(str(Path(folder, name)) for name in dirs)
    return folders


def _folders_changed(changes: set[tuple[Change, str]], folders: set[str]) -> bool:
    from watchfiles import Change

    for change, path in changes:
        if change == Change.deleted and path in folders:
            return True
        if change == Change.added:
            with contextlib.suppress(OSError):
                if stat.S_ISDIR(os.lstat(path).st_mode):
                    return True
    return False


async def _watch(base: KnowledgeBase, dirty: asyncio.Event) -> None:
    try:
        await _watch_folders(base, dirty)
    finally:
        dirty.set()  # the keeper never waits on a watcher that is gone


async def _watch_folders(base: KnowledgeBase, dirty: asyncio.Event) -> None:
    from watchfiles import awatch

    # Each folder is watched on its own, not recursively: a recursive watch follows links out of the base.
    # A folder added or removed ends the round, and the next one watches the folders as they are then.
    while True:
        folders = await asyncio.to_thread(_watched_folders, base.root, base.config.skip_hidden)
        stop = asyncio.Event()
        batches = awatch(*folders, debounce=WATCH_DEBOUNCE_MS, step=50, stop_event=stop, recursive=False)
        # Set with no await before the loop's first step installs the watches: the refresh this wakes reads
        # the folders only once they are watched, so nothing written before or since is missed.
        dirty.set()
        try:
            async for changes in batches:
                dirty.set()
                if _folders_changed(changes, set(folders)):
                    break
        except FileNotFoundError:
            if not base.root.is_dir():
                logger.warning("knowledge folder gone; watching stopped", base=base.base_id, path=str(base.root))
                return
        finally:
            stop.set()
            await batches.aclose()
