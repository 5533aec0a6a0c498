"""`knowledge_bases:`: folders (or Git checkouts) indexed for search, with MindRoom's keys and rules.

A base's `path` is relative to the config file's folder (or absolute). Agents name the bases they search
in `agents.<a>.knowledge_bases`; `Config` checks those names and the base ids and paths at load
(`check_knowledge_references`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "DEFAULT_KNOWLEDGE_EXTENSIONS",
    "GIT_PROTOCOLS",
    "PLAINTEXT_GIT_SCHEMES",
    "KnowledgeBaseConfig",
    "KnowledgeGitConfig",
    "check_knowledge_references",
    "git_branch_problem",
    "git_url_problem",
]

_PRIVATE_PREFIX = "__agent_private__:"

DEFAULT_KNOWLEDGE_EXTENSIONS = (
    ".md", ".markdown", ".mdx", ".txt", ".text", ".rst", ".org", ".adoc", ".tex",
    ".html", ".htm", ".xml", ".json", ".jsonl", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".csv", ".tsv",
    ".py", ".js", ".ts", ".tsx", ".jsx", ".go", ".rs", ".java", ".kt", ".c", ".h", ".cc", ".cpp", ".hpp",
    ".cs", ".rb", ".php", ".swift", ".scala", ".sh", ".bash", ".sql", ".r", ".lua", ".pl",
    ".pdf", ".docx",
)  # fmt: skip
"""The files a base indexes unless `include_extensions` replaces the set."""


GIT_PROTOCOLS = ("https", "ssh", "file", "http", "git")
"""The transports a Git base may use (scp-style `host:path` is ssh, a local path is file); `http` and `git` carry
the repository in plain text (a warning says so) but, like the others, run no command."""
PLAINTEXT_GIT_SCHEMES = frozenset({"http", "git"})
_URL_SCHEMES = frozenset({"https", "ssh", "git+ssh", "ssh+git", "file", *PLAINTEXT_GIT_SCHEMES})
_REMOTE_HELPER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+.-]*::")
_BRANCH_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


def git_branch_problem(branch: str) -> str | None:
    """Why `branch` is not a name `git check-ref-format --branch` accepts, or None when it is one."""
    if not branch:
        return "it is empty"
    if branch.startswith("-"):
        return "it starts with '-'"
    if branch in ("@", "HEAD"):
        return f"it is {branch!r}"
    if _BRANCH_FORBIDDEN.search(branch):
        return "it contains a space, a control character or one of ~ ^ : ? * [ \\"
    for part in ("..", "@{", "//"):
        if part in branch:
            return f"it contains {part!r}"
    if branch.startswith("/") or branch.endswith(("/", ".")):
        return "it starts or ends with '/', or ends with '.'"
    if any(component.startswith(".") or component.endswith(".lock") for component in branch.split("/")):
        return "a part of it starts with '.' or ends with '.lock'"
    return None


def git_url_problem(url: str) -> str | None:
    """Why git must not be given `url`, or None: a URL of one of `GIT_PROTOCOLS`, scp-style ssh or a local path,
    never an option or a remote helper."""
    if not url:
        return "it is empty"
    if url.startswith("-"):
        return "it starts with '-'"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        return "it contains a control character"
    if _REMOTE_HELPER.match(url):
        return "it names a remote helper (`<transport>::`)"
    scheme, separator, _rest = url.partition("://")
    if separator and scheme.lower() not in _URL_SCHEMES:
        return f"its scheme {scheme!r} is not one of https, ssh, file, http, git"
    return None


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class KnowledgeGitConfig(_Strict):
    """`knowledge_bases.<id>.git`: keep the base's folder a checkout of a Git branch, synced every poll interval."""

    repo_url: str
    branch: str = "main"
    poll_interval_seconds: int = Field(default=300, ge=5)
    credentials_service: str | None = None
    lfs: bool = False
    sync_timeout_seconds: int = Field(default=3600, ge=5)
    skip_hidden: bool = True
    include_patterns: list[str] = Field(default_factory=list)
    exclude_patterns: list[str] = Field(default_factory=list)

    @field_validator("repo_url")
    @classmethod
    def _safe_url(cls, value: str) -> str:
        problem = git_url_problem(value.strip())
        if problem:
            msg = f"repo_url is refused ({problem}): give an https or ssh URL, scp-style host:path, or a local path"
            raise ValueError(msg)
        return value.strip()

    @field_validator("branch")
    @classmethod
    def _branch_name(cls, value: str) -> str:
        problem = git_branch_problem(value)
        if problem:
            raise ValueError(f"branch {value!r} is not a Git branch name ({problem})")
        return value

    @field_validator("credentials_service")
    @classmethod
    def _service_name(cls, value: str | None) -> str | None:
        return (value or "").strip() or None


class KnowledgeBaseConfig(_Strict):
    """One knowledge base: where its files are, which of them count, how they are chunked, how it refreshes."""

    mode: Literal["semantic", "files"] = "semantic"
    description: str = ""
    path: str = "./knowledge_docs"
    watch: bool = True
    poll_interval_seconds: int | None = Field(default=None, ge=5)
    require_content_before_publish: bool = False
    chunk_size: int = Field(default=5000, ge=128)
    chunk_overlap: int = Field(default=0, ge=0)
    chunk_context_model: str | None = None
    include_patterns: list[str] = Field(default_factory=list)
    exclude_patterns: list[str] = Field(default_factory=list)
    include_extensions: list[str] | None = None
    extra_extensions: list[str] = Field(default_factory=list)
    exclude_extensions: list[str] = Field(default_factory=list)
    skip_hidden: bool = True
    git: KnowledgeGitConfig | None = None

    @model_validator(mode="after")
    def _consistent(self) -> KnowledgeBaseConfig:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError("chunk_overlap must be less than chunk_size")
        if self.poll_interval_seconds is not None and (self.mode == "files" or self.git is not None):
            msg = "poll_interval_seconds is for local semantic bases (Git bases use git.poll_interval_seconds)"
            raise ValueError(msg)
        return self

    def extensions(self) -> frozenset[str]:
        """The file extensions this base indexes (lowercase, with the dot)."""
        chosen = DEFAULT_KNOWLEDGE_EXTENSIONS if self.include_extensions is None else self.include_extensions
        wanted = {_dotted(ext) for ext in (*chosen, *self.extra_extensions)}
        return frozenset(wanted - {_dotted(ext) for ext in self.exclude_extensions})


def _dotted(extension: str) -> str:
    extension = extension.strip().lower()
    return extension if extension.startswith(".") else f".{extension}"


def _check_id(base_id: str) -> None:
    if not base_id or base_id in (".", "..") or any(c in base_id for c in "/\\\n\r"):
        msg = f"knowledge base id {base_id!r} must be one non-empty path component (no '/', '\\' or line breaks)"
        raise ValueError(msg)
    if base_id.startswith(_PRIVATE_PREFIX):
        msg = f"knowledge base id {base_id!r} must not start with the reserved prefix {_PRIVATE_PREFIX!r}"
        raise ValueError(msg)


def _normal(path: str) -> str:
    return posixpath.normpath(path if posixpath.isabs(path) else posixpath.join(".", path))


def _git_key(base: KnowledgeBaseConfig) -> tuple[str, str, str | None, bool] | None:
    git = base.git
    return None if git is None else (git.repo_url, git.branch, git.credentials_service, git.lfs)


def _check_paths(bases: Mapping[str, KnowledgeBaseConfig]) -> None:
    items = sorted(bases.items())
    for index, (first_id, first) in enumerate(items):
        for second_id, second in items[index + 1 :]:
            a, b = _normal(first.path), _normal(second.path)
            if a == b:
                if _git_key(first) != _git_key(second):
                    msg = f"knowledge bases {first_id!r} and {second_id!r} share a path with different Git settings"
                    raise ValueError(msg)
                continue
            if a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/") or "." in (a, b):
                msg = f"knowledge bases {first_id!r} and {second_id!r} have nested paths ({a!r}, {b!r})"
                raise ValueError(msg)


def check_knowledge_references(
    bases: Mapping[str, KnowledgeBaseConfig], agents: Mapping[str, Sequence[str]], models: Sequence[str]
) -> None:
    """Base ids, non-nested paths, agents naming configured bases once each, context models that exist."""
    for base_id, base in bases.items():
        _check_id(base_id)
        if base.chunk_context_model is not None and base.chunk_context_model not in models:
            msg = f"knowledge_bases.{base_id}.chunk_context_model: unknown model {base.chunk_context_model!r}"
            raise ValueError(msg)
    _check_paths(bases)
    for agent, named in agents.items():
        unknown = sorted(set(named) - set(bases))
        if unknown:
            msg = f"agents.{agent}: Agents reference unknown knowledge bases: {', '.join(unknown)}"
            raise ValueError(msg)
        if len(set(named)) != len(named):
            msg = f"agents.{agent}.knowledge_bases: a knowledge base is named twice"
            raise ValueError(msg)
