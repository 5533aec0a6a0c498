"""Git-backed knowledge bases: the base's folder is a checkout of one branch that the daemon owns.

The first sync clones the branch (shallow); later ones fetch it from `repo_url` and reset the checkout to
it, so local edits are discarded, as MindRoom does. A sync that takes longer than `sync_timeout_seconds` is
killed. git runs as a tool, never as a way in: the branch and URL are checked again here (options, remote
helpers), every command line ends its options with `--`, only https, ssh and local repositories are
reachable (`GIT_ALLOW_PROTOCOL`), git sees none of the daemon's environment but what it needs to connect,
and no configuration but the checkout's own, which must hold only the keys a clone writes (so no hook,
fsmonitor, filter, ssh command or credential helper set in it runs).

With `credentials_service`, the credential seed of that name (as MindRoom reads it: `username` with
`password` or `token`, or a `token` or `api_key` alone, as `x-access-token`) answers an http(s) server's
challenge. git gets it from a credential helper that this module gives it through the environment
(`GIT_CONFIG_*`, for that server only), and the helper reads the user name and secret from two variables of
git's own environment: they are never on a command line, in the checkout's config, or in a log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from mindroom.config.environment import process_environ
from mindroom.config.knowledge import (
    GIT_PROTOCOLS,
    PLAINTEXT_GIT_SCHEMES,
    KnowledgeGitConfig,
    git_branch_problem,
    git_url_problem,
)
from mindroom.config.oauth import read_service_seed
from mindroom.errors import MindroomError
from mindroom.logging_config import get_logger, register_secret_values

__all__ = [
    "GitCredentials",
    "GitSyncError",
    "credential_environment",
    "git_credentials",
    "git_environment",
    "service_credentials",
    "sync_checkout",
]

logger = get_logger(__name__)

_PASSED_THROUGH = (
    "PATH", "HOME", "LANG", "SSH_AUTH_SOCK", "SSL_CERT_FILE", "SSL_CERT_DIR", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH",
    "http_proxy", "https_proxy", "no_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
)  # fmt: skip
"""What git may see of the daemon's environment: where programs are, how to reach the network, nothing else."""
_HARDENING = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")
_CLONE_KEYS = re.compile(
    r"core\.(repositoryformatversion|filemode|bare|logallrefupdates|ignorecase|precomposeunicode|symlinks)"
    r"|extensions\.(objectformat|refstorage)|remote\.origin\.(url|fetch|tagopt)|branch\..+\.(remote|merge)"
    r"|lfs\.repositoryformatversion|lfs\..+\.access"
)
"""The keys `git clone` (and `git lfs`) write into a checkout's config; any other key refuses the checkout."""
_URL_CREDENTIALS = re.compile(r"(://)[^/@\s]+@")


class GitSyncError(MindroomError):
    """A clone, fetch or reset that failed; the message carries git's own words."""


@dataclass(frozen=True, slots=True)
class GitCredentials:
    """The user name and secret git answers an http(s) server's challenge with (the secret never in a repr)."""

    username: str
    secret: str = field(repr=False)


# The helper answers `get` only, so git's `store` and `erase` after a fetch keep nothing anywhere.
_HELPER = (
    '!f() { test "$1" = get && printf "username=%s\\npassword=%s\\n" "$MINDROOM_GIT_USER" "$MINDROOM_GIT_SECRET"; }; f'
)


def git_credentials(fields: Mapping[str, str]) -> GitCredentials | None:
    """A credential seed's fields as git's (a password wins over a token); None when they give none."""
    username, password = fields.get("username"), fields.get("password")
    token = fields.get("token") or fields.get("api_key")
    if not username:
        return GitCredentials("x-access-token", token) if token and not password else None
    secret = password or token
    return GitCredentials(username, secret) if secret else None


def service_credentials(git: KnowledgeGitConfig, env: Mapping[str, str], config_dir: Path) -> GitCredentials | None:
    """The credentials of `git.credentials_service` (None without one); `GitSyncError` naming the service when
    no seed gives them."""
    service = git.credentials_service
    if not service:
        return None
    try:
        fields = read_service_seed(env, config_dir, service)
    except ValueError as error:
        raise GitSyncError(f"git.credentials_service {service!r}: {error}") from None
    found = git_credentials(fields) if fields is not None else None
    if found is None:
        why = "no credential seed names it" if fields is None else "its seed has no token, api_key or password"
        raise GitSyncError(f"git.credentials_service {service!r}: {why}")
    register_secret_values([found.secret])
    return found


def credential_environment(repo_url: str, credentials: GitCredentials | None) -> dict[str, str]:
    """What git's environment gets so that `credentials` answer the repository's server, and no other."""
    parts = urlsplit(repo_url)
    if credentials is None or parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return {}
    server = f"{parts.scheme.lower()}://{parts.netloc.rpartition('@')[2]}"
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"credential.{server}.helper",
        "GIT_CONFIG_VALUE_0": _HELPER,
        "MINDROOM_GIT_USER": credentials.username,
        "MINDROOM_GIT_SECRET": credentials.secret,
    }


def git_environment(environ: dict[str, str]) -> dict[str, str]:
    """The environment git runs with: a few of `environ`'s variables, no user or system git config."""
    env = {name: environ[name] for name in _PASSED_THROUGH if name in environ}
    env.update(
        GIT_TERMINAL_PROMPT="0",
        GIT_ASKPASS="true",  # never waits for a password
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL="/dev/null",
        GIT_ATTR_NOSYSTEM="1",
        GIT_ALLOW_PROTOCOL=":".join(GIT_PROTOCOLS),
    )
    return env


def _redacted(text: str) -> str:
    return _URL_CREDENTIALS.sub(r"\1***@", text)


async def _git(*args: str, cwd: Path | None, timeout_s: float, auth: Mapping[str, str] | None = None) -> str:
    env = {**git_environment(process_environ()), **(auth or {})}
    process = await asyncio.create_subprocess_exec(
        "git", *_HARDENING, *args, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
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
        raise GitSyncError(f"git {args[0]} failed: {_redacted(err.decode(errors='replace').strip()[-500:])}")
    return out.decode(errors="replace").strip()


def _is_checkout(root: Path) -> bool:
    if (root / ".git").is_dir():
        return True
    if root.exists() and any(root.iterdir()):
        raise GitSyncError(f"{root} exists, is not empty and is not a Git checkout")
    return False


def _checked(git: KnowledgeGitConfig) -> None:
    # The config refuses these already; a config built around its checks must not reach git either.
    for key, problem in (("branch", git_branch_problem(git.branch)), ("repo_url", git_url_problem(git.repo_url))):
        if problem:
            raise GitSyncError(f"git.{key} refused ({problem})")
    scheme = git.repo_url.partition("://")[0].lower()
    if scheme in PLAINTEXT_GIT_SCHEMES:
        logger.warning("knowledge base fetched in plain text; use https or ssh", transport=scheme)


async def _check_own_config(repo: tuple[str, ...], root: Path, timeout_s: float) -> None:
    names = await _git(
        *repo, "config", "--local", "--no-includes", "--name-only", "--list", cwd=root, timeout_s=timeout_s
    )
    foreign = sorted({name for name in names.splitlines() if not _CLONE_KEYS.fullmatch(name)})
    if foreign:
        msg = f"{root}/.git/config sets {', '.join(foreign)}, which a clone never does: remove the checkout"
        raise GitSyncError(msg)


async def sync_checkout(root: Path, git: KnowledgeGitConfig, credentials: GitCredentials | None = None) -> bool:
    """Clone or update `root` to the branch's tip (answering the server with `credentials`, when given); True
    when the checked-out commit changed."""
    _checked(git)
    timeout = float(git.sync_timeout_seconds)
    auth = credential_environment(git.repo_url, credentials)
    # Named explicitly, so a broken `.git` never lets git find (and reset) a repository around the base.
    repo = ("--git-dir", str(root / ".git"), "--work-tree", str(root))
    if not await asyncio.to_thread(_is_checkout, root):
        await asyncio.to_thread(root.parent.mkdir, parents=True, exist_ok=True)
        await _git("clone", "--depth=1", f"--branch={git.branch}", "--single-branch", "--no-local",
                   "--", git.repo_url, str(root), cwd=None, timeout_s=timeout, auth=auth)  # fmt: skip
        changed = True
    else:
        await _check_own_config(repo, root, timeout)
        before = await _git(*repo, "rev-parse", "--verify", "HEAD", cwd=root, timeout_s=timeout)
        # From the configured URL, not `origin`: what the checkout's config says about its remote is not asked.
        await _git(*repo, "fetch", "--depth=1", "--no-tags", "--upload-pack=git-upload-pack",
                   "--", git.repo_url, git.branch, cwd=root, timeout_s=timeout, auth=auth)  # fmt: skip
        await _git(*repo, "reset", "--hard", "FETCH_HEAD", "--", cwd=root, timeout_s=timeout)
        await _git(*repo, "clean", "-fdx", cwd=root, timeout_s=timeout)
        changed = await _git(*repo, "rev-parse", "--verify", "HEAD", cwd=root, timeout_s=timeout) != before
    if git.lfs:
        await _git(*repo, "lfs", "pull", cwd=root, timeout_s=timeout, auth=auth)
    logger.info("knowledge checkout synced", path=str(root), branch=git.branch, changed=changed)
    return changed
