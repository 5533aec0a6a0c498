"""Local Git repositories for tests: run git in one, and commit files into one (made on first use)."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    """`git -C repo ARGS` as a fixed author; its output, stripped (`CalledProcessError` when it fails)."""
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=dev@example.org", "-c", "user.name=Dev", *args],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def commit_files(repo: Path, files: Mapping[str, str], message: str = "change") -> str:
    """Write `files` (path: text) into `repo`, made a repository on branch `main` if it is not one, and commit them;
    the new commit's id."""
    repo.mkdir(parents=True, exist_ok=True)
    if not (repo / ".git").exists():
        git(repo, "init", "-q", "-b", "main")
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")
