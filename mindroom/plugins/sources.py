"""Where `mindroom plugins install` gets a plugin: a Git URL, GitHub's `OWNER/REPO@REF`, or a local folder.

A Git source is cloned (with the `git` command) into a scratch folder, the ref resolved to a commit, and
that commit's tree exported without the repository itself. A plain folder is copied, and named by a digest
of its files instead of a commit.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mindroom.config.environment import process_environ
from mindroom.plugins.discovery import plugin_digest
from mindroom.plugins.lock import PluginInstallError

__all__ = ["GITHUB_OWNER", "GIT_TIMEOUT_S", "Fetched", "PluginSource", "fetch", "parse_source"]

GIT_TIMEOUT_S = 300.0
GITHUB_OWNER = "mindroom-ai"
"""The GitHub owner of a bare plugin NAME, as in MindRoom."""
_SHORTHAND = re.compile(r"^(?:(?P<owner>[A-Za-z0-9][A-Za-z0-9-]*)/)?(?P<repo>[A-Za-z0-9._-]+)$")
_URL_SCHEMES = ("https://", "http://", "ssh://", "git://", "file://")
_REF = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./+-]{0,254}$")
"""A branch, tag or commit: never an option (`-…`), whitespace or a revision expression (`~`, `^`, `:`, `@{`)."""


@dataclass(frozen=True, slots=True)
class PluginSource:
    """A parsed install source: a git location (URL or local repository) or a plain local folder."""

    kind: Literal["git", "folder"]
    location: str
    ref: str | None = None


@dataclass(frozen=True, slots=True)
class Fetched:
    """A plugin tree exported into a scratch folder, and what it was taken from."""

    tree: Path
    commit: str | None
    digest: str | None


def _split_ref(spec: str) -> tuple[str, str | None]:
    """`location@ref` -> (location, ref); an `@` inside the host part (`git@host:`, `user@host/`) is not a ref."""
    head, at, tail = spec.rpartition("@")
    if not at:
        return spec, None
    if ":" in tail or ("://" in head and "/" not in head.split("://", 1)[1]):
        return spec, None
    if not _REF.fullmatch(tail) or ".." in tail:
        raise PluginInstallError(spec, Path(head), f"@{tail!r} is not a branch, tag or commit name")
    return head, tail


def _is_git_repository(folder: Path) -> bool:
    done = _git(["-C", str(folder), "rev-parse", "--git-dir"], folder, check=False)
    return done.returncode == 0


def parse_source(spec: str, cwd: Path) -> PluginSource:
    """Read SOURCE: a local folder or repository, a Git URL, `OWNER/REPO` or a bare NAME (GitHub), each `@REF`."""
    spec = spec.strip()
    if not spec:
        raise PluginInstallError(spec, cwd, "empty plugin source")
    location, ref = _split_ref(spec)
    for candidate, candidate_ref in ((spec, None), (location, ref)):
        folder = (cwd / Path(candidate).expanduser()).resolve()
        if folder.is_dir():
            if _is_git_repository(folder):
                return PluginSource("git", str(folder), candidate_ref)
            if candidate_ref is not None:
                raise PluginInstallError(folder.name, folder, f"@{candidate_ref}: a plain folder has no refs")
            return PluginSource("folder", str(folder))
    if location.startswith(_URL_SCHEMES) or re.match(r"^[\w.-]+@[\w.-]+:", location):
        return PluginSource("git", location, ref)
    match = _SHORTHAND.fullmatch(location)
    if match is None or match["repo"] in (".", ".."):
        cause = "not a folder, a Git URL, OWNER/REPO or NAME (each with an optional @REF)"
        raise PluginInstallError(spec, cwd / location, cause)
    owner = match["owner"] or GITHUB_OWNER
    return PluginSource("git", f"https://github.com/{owner}/{match['repo']}.git", ref)


def _git(args: list[str], where: Path, *, check: bool = True, text: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**process_environ(), "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
    try:
        done = subprocess.run(
            ["git", *args], capture_output=True, text=text, timeout=GIT_TIMEOUT_S, env=env, check=False
        )
    except FileNotFoundError:
        raise PluginInstallError(where.name, where, "git is not installed") from None
    except subprocess.TimeoutExpired:
        raise PluginInstallError(
            where.name, where, f"git {args[0]} did not finish within {GIT_TIMEOUT_S:g} s"
        ) from None
    if check and done.returncode != 0:
        lines = [line for line in str(done.stderr).splitlines() if line.strip()]
        raise PluginInstallError(
            where.name, where, f"git {args[0]} failed: {' | '.join(lines[-3:]) or done.returncode}"
        )
    return done


def _resolve(repo: Path, ref: str | None, label: str) -> str:
    if ref is not None and (not _REF.fullmatch(ref) or ".." in ref):
        raise PluginInstallError(label, repo, f"{ref!r} is not a branch, tag or commit name")
    candidates = ["HEAD"] if ref is None else [f"origin/{ref}", ref]
    for candidate in candidates:
        done = _git(["-C", str(repo), "rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}"], repo, check=False)
        if done.returncode == 0:
            return done.stdout.strip()
    raise PluginInstallError(label, repo, f"ref {ref or 'HEAD'!r} names no commit in the repository")


def _export(repo: Path, commit: str, tree: Path) -> None:
    done = subprocess.run(
        ["git", "-C", str(repo), "archive", "--format=tar", commit],
        capture_output=True,
        timeout=GIT_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise PluginInstallError(repo.name, repo, f"git archive failed: {done.stderr.decode(errors='replace')[-300:]}")
    tree.mkdir()
    with tarfile.open(fileobj=io.BytesIO(done.stdout), mode="r:") as archive:
        archive.extractall(tree, filter="data")


def fetch(source: PluginSource, scratch: Path, *, commit: str | None = None) -> Fetched:
    """Export the plugin into `scratch/tree`: at `commit` when given, else at the newest commit of the ref."""
    tree = scratch / "tree"
    if source.kind == "folder":
        folder = Path(source.location)
        if not folder.is_dir():
            raise PluginInstallError(folder.name, folder, "plugin folder not found")
        shutil.copytree(folder, tree, ignore=shutil.ignore_patterns("__pycache__", ".git"), symlinks=False)
        return Fetched(tree, None, plugin_digest(tree))
    repo = scratch / "repository"
    _git(["clone", "--quiet", "--no-checkout", "--", source.location, str(repo)], Path(source.location))
    label = Path(source.location.rstrip("/")).name.removesuffix(".git")
    commit = _resolve(repo, source.ref if commit is None else commit, label)
    _export(repo, commit, tree)
    shutil.rmtree(repo, ignore_errors=True)
    return Fetched(tree, commit, None)
