"""Where `mindroom plugins install` gets a plugin: a Git URL, GitHub's `OWNER/REPO@REF`, or a local folder.

A Git source is cloned (with the `git` command) into a scratch folder, the ref resolved to a commit, and
that commit's tree exported without the repository itself. A plain folder is copied, and named by a digest
of its files instead of a commit.

Credentials in an HTTP(S) URL (`https://user:token@host/repo.git`) are taken out of it at once: the source's
location (what the lock, errors and logs show) never holds them, and git gets them for that one fetch from a
credential helper reading them from its environment, never from its command line or a configured helper's
store. Later fetches (`plugins update`, `install --locked`) use git's own credential helpers.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import unquote

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
_USERINFO = re.compile(r"^(?P<scheme>https?://)(?P<userinfo>[^/@]*)@(?P<rest>[^/]+(?:/.*)?)$", re.IGNORECASE)
_ORIGIN = re.compile(r"^(?P<origin>https?://[^/]+)", re.IGNORECASE)
# Answers git's `get` with the credential handed over in the environment; any other action (`store`, `erase`)
# does nothing, so the credential is never written anywhere.
_HELPER = (
    '!f() { test "$1" = get && printf "username=%s\\npassword=%s\\n" "$_MINDROOM_GIT_USER" "$_MINDROOM_GIT_PASS"; }; f'
)
_REFUSED = ("Authentication failed", "could not read Username", "could not read Password", "terminal prompts disabled")


@dataclass(frozen=True, slots=True)
class PluginSource:
    """A parsed install source: a git location (URL or local repository) or a plain local folder."""

    kind: Literal["git", "folder"]
    location: str
    ref: str | None = None
    credential: str | None = field(default=None, repr=False, compare=False)
    """The userinfo taken out of an HTTP(S) URL (`user:token`), for this fetch only."""


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
    credential = None
    if userinfo := _USERINFO.match(spec):
        spec, credential = userinfo["scheme"] + userinfo["rest"], userinfo["userinfo"]
        if any(ord(char) < 0x20 or ord(char) == 0x7F for char in unquote(credential)):
            raise PluginInstallError(spec, cwd, "the URL's credentials hold a control character")
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
        return PluginSource("git", location, ref, credential)
    match = _SHORTHAND.fullmatch(location)
    if match is None or match["repo"] in (".", ".."):
        cause = "not a folder, a Git URL, OWNER/REPO or NAME (each with an optional @REF)"
        raise PluginInstallError(spec, cwd / location, cause)
    owner = match["owner"] or GITHUB_OWNER
    return PluginSource("git", f"https://github.com/{owner}/{match['repo']}.git", ref)


def _credential_env(env: dict[str, str], location: str, credential: str) -> dict[str, str]:
    """`env` with git configured (through the environment) to answer `location`'s host with `credential` only.

    The helper list for that origin is emptied first, so no configured helper stores it; other hosts (a
    redirect) never get it."""
    origin = _ORIGIN.match(location)
    if origin is None:
        return env
    user, _, password = credential.partition(":")
    start = int(env.get("GIT_CONFIG_COUNT", "0") or 0)
    key = f"credential.{origin['origin']}.helper"
    return {
        **env,
        "GIT_CONFIG_COUNT": str(start + 2),
        f"GIT_CONFIG_KEY_{start}": key,
        f"GIT_CONFIG_VALUE_{start}": "",
        f"GIT_CONFIG_KEY_{start + 1}": key,
        f"GIT_CONFIG_VALUE_{start + 1}": _HELPER,
        "_MINDROOM_GIT_USER": unquote(user),
        "_MINDROOM_GIT_PASS": unquote(password),
    }


def _git(
    args: list[str], where: Path, *, check: bool = True, text: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**(env or process_environ()), "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
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


def _clone(source: PluginSource, repo: Path, label: str) -> None:
    env = process_environ()
    if source.credential is not None:
        env = _credential_env(env, source.location, source.credential)
    args = ["clone", "--quiet", "--no-checkout", "--", source.location, str(repo)]
    done = _git(args, Path(source.location), check=False, env=env)
    if done.returncode == 0:
        return
    if any(sign in str(done.stderr) for sign in _REFUSED):
        cause = (
            f"the Git host refused to serve {source.location} without credentials (or refused those given);"
            " give git a credential helper for it (see Private repositories in docs/plugins.md)"
        )
        raise PluginInstallError(label, Path(source.location), cause)
    lines = [line for line in str(done.stderr).splitlines() if line.strip()]
    raise PluginInstallError(label, Path(source.location), f"git clone failed: {' | '.join(lines[-3:])}")


def fetch(source: PluginSource, scratch: Path, *, commit: str | None = None, plugin: str | None = None) -> Fetched:
    """Export the plugin into `scratch/tree`: at `commit` when given, else at the newest commit of the ref.

    `plugin` names the installed plugin in errors (else the repository's name)."""
    tree = scratch / "tree"
    if source.kind == "folder":
        folder = Path(source.location)
        if not folder.is_dir():
            raise PluginInstallError(folder.name, folder, "plugin folder not found")
        shutil.copytree(folder, tree, ignore=shutil.ignore_patterns("__pycache__", ".git"), symlinks=False)
        return Fetched(tree, None, plugin_digest(tree))
    repo = scratch / "repository"
    label = plugin or Path(source.location.rstrip("/")).name.removesuffix(".git")
    _clone(source, repo, label)
    commit = _resolve(repo, source.ref if commit is None else commit, label)
    _export(repo, commit, tree)
    shutil.rmtree(repo, ignore_errors=True)
    return Fetched(tree, commit, None)
