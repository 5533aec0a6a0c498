"""Git-backed knowledge bases: the base's folder is a checkout of one branch that the daemon owns.

The first sync clones the branch (shallow); later ones fetch it and reset the checkout to it, so local
edits are discarded, as MindRoom does. `git` itself does the work (its own credential helpers and SSH keys
apply); a sync that takes longer than `sync_timeout_seconds` is killed.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from mindroom.config.environment import process_environ
from mindroom.config.knowledge import KnowledgeGitConfig
from mindroom.errors import MindroomError
from mindroom.logging_config import get_logger

__all__ = ["GitSyncError", "sync_checkout"]

logger = get_logger(__name__)


class GitSyncError(MindroomError):
    """A clone, fetch or reset that failed; the message carries git's own words."""


async def _git(*args: str, cwd: Path | None, timeout_s: float) -> str:
    env = {**process_environ(), "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}  # never waits for a password
    process = await asyncio.create_subprocess_exec(
        "git", *args, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        async with asyncio.timeout(timeout_s):
            out, err = await process.communicate()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        raise GitSyncError(f"git {args[0]} took longer than {timeout_s:g} s") from None
    if process.returncode != 0:
        raise GitSyncError(f"git {args[0]} failed: {err.decode(errors='replace').strip()[-500:]}")
    return out.decode(errors="replace").strip()


def _is_checkout(root: Path) -> bool:
    if (root / ".git").is_dir():
        return True
    if root.exists() and any(root.iterdir()):
        raise GitSyncError(f"{root} exists, is not empty and is not a Git checkout")
    return False


async def sync_checkout(root: Path, git: KnowledgeGitConfig) -> bool:
    """Clone or update `root` to the branch's tip; True when the checked-out commit changed."""
    timeout = float(git.sync_timeout_seconds)
    if not await asyncio.to_thread(_is_checkout, root):
        await asyncio.to_thread(root.parent.mkdir, parents=True, exist_ok=True)
        await _git("clone", "--depth", "1", "--branch", git.branch, "--single-branch", "--", git.repo_url, str(root),
                   cwd=None, timeout_s=timeout)  # fmt: skip
        changed = True
    else:
        before = await _git("rev-parse", "HEAD", cwd=root, timeout_s=timeout)
        await _git("fetch", "--depth", "1", "origin", git.branch, cwd=root, timeout_s=timeout)
        await _git("reset", "--hard", "FETCH_HEAD", cwd=root, timeout_s=timeout)
        await _git("clean", "-fdx", cwd=root, timeout_s=timeout)
        changed = await _git("rev-parse", "HEAD", cwd=root, timeout_s=timeout) != before
    if git.lfs:
        await _git("lfs", "pull", cwd=root, timeout_s=timeout)
    logger.info("knowledge checkout synced", path=str(root), branch=git.branch, changed=changed)
    return changed
