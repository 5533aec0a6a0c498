"""The `memory:` and `knowledge_bases:` sections and their per-agent keys, with MindRoom's names and rules."""

from __future__ import annotations

import pytest

from mindroom.config import parse_config_text
from mindroom.errors import ConfigError

MINDROOM_SHAPED = """
models: {default: {provider: openai, id: m}}
memory:
  backend: mem0
  embedder: {provider: OpenAI, config: {model: text-embedding-3-small, host: "http://127.0.0.1:9/v1", dimensions: 64}}
  llm: {provider: ollama, config: {model: gemma4}}
  auto_flush: {enabled: false, batch: {max_sessions_per_cycle: 3}, extractor: {max_messages_per_flush: 5}}
  search: {mode: keyword}
knowledge_bases:
  docs: {path: ./docs, description: Handbook, chunk_size: 1000, chunk_overlap: 100, exclude_patterns: ["x/**"]}
  repo: {path: ./repo, git: {repo_url: "file:///srv/repo.git", branch: main, poll_interval_seconds: 60}}
agents:
  helper: {display_name: Helper, knowledge_bases: [docs, repo], memory_backend: none}
administrators: ["@admin:example.org"]
"""


def _load(text: str):
    return parse_config_text(text, "config.yaml", env={})


def test_config_loads_mindroom_shaped_memory_and_knowledge():
    config = _load(MINDROOM_SHAPED)

    assert config.memory.backend == "mem0" and config.memory.embedder is not None
    assert config.memory.embedder.provider == "openai"
    assert config.knowledge_bases["repo"].git is not None
    assert config.agents["helper"].knowledge_bases == ["docs", "repo"]
    assert config.memory_enabled("helper") is False  # its own `none` wins
    assert ".md" in config.knowledge_bases["docs"].extensions()


def test_config_memory_is_off_unless_asked_and_takes_the_shorthand():
    plain = _load("agents: {a: {display_name: A}}")
    shorthand = _load("memory: none\nagents: {a: {display_name: A, memory_backend: mem0}}")

    assert plain.memory_enabled("a") is False
    assert shorthand.memory.backend == "none" and shorthand.memory_enabled("a") is True


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("memory: {embedder: {provider: ollama, config: {dimensions: 3}}}", "does not take `dimensions`"),
        ("memory: {embedder: {provider: ollama, config: {api_key: k}}}", "never reads api_key"),
        ("knowledge_bases: {a: {path: x}, b: {path: x/y}}", "have nested paths"),
        ("knowledge_bases: {'..': {path: x}}", "one non-empty path component"),
        ("knowledge_bases: {a: {path: x, chunk_size: 200, chunk_overlap: 200}}", "chunk_overlap must be less"),
        ("knowledge_bases: {a: {path: x, git: {repo_url: u}, poll_interval_seconds: 9}}", "git.poll_interval_seconds"),
        ("agents: {a: {display_name: A, knowledge_bases: [nope]}}", "reference unknown knowledge bases: nope"),
        ("administrators: ['@*:example.org']", "concrete Matrix user ids"),
        ("administrators: ['@a:x', '@a:x']", "lists @a:x more than once"),
    ],
)
def test_config_refuses_what_mindroom_refuses(text: str, message: str):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("*", r"\*")):
        _load(text)


def _git_base(**git: str) -> str:
    settings = ", ".join(
        f"{key}: {value!r}" for key, value in {"repo_url": "https://git.example.org/r.git", **git}.items()
    )
    return f"knowledge_bases: {{docs: {{path: ./docs, git: {{{settings}}}}}}}"


@pytest.mark.parametrize(
    "branch", ["--upload-pack=touch /tmp/x", "-x", "a..b", "main.lock", "feature/", "a b", "x@{1}", "HEAD", "a:b"]
)
def test_config_refuses_a_git_branch_git_would_not_take_as_a_branch(branch: str):
    with pytest.raises(ConfigError, match=r"knowledge_bases\.docs\.git\.branch .*is not a Git branch name"):
        _load(_git_base(branch=branch))


@pytest.mark.parametrize("branch", ["main", "release/2026.10", "feat-x", "v1.2-rc", "user/a.b"])
def test_config_accepts_ordinary_git_branches(branch: str):
    git = _load(_git_base(branch=branch)).knowledge_bases["docs"].git

    assert git is not None and git.branch == branch


@pytest.mark.parametrize(
    "url", ["ext::sh -c touch% /tmp/x", "fd::3", "-uhelper", "ftp://git.example.org/r.git", "HTTPX://example.org/r"]
)
def test_config_refuses_git_urls_that_are_options_helpers_or_unknown_transports(url: str):
    with pytest.raises(ConfigError, match=r"knowledge_bases\.docs\.git\.repo_url .*repo_url is refused"):
        _load(_git_base(repo_url=url))


@pytest.mark.parametrize(
    "url",
    [
        "https://git.example.org/r.git",
        "ssh://git@example.org/r",
        "git@example.org:o/r.git",
        "/srv/r",
        "file:///srv/r",
        "http://git.example.org/r.git",  # MindRoom takes any URL with a host; plain text is warned about at sync
        "git://example.org/r",
    ],
)
def test_config_accepts_https_ssh_plain_and_local_git_urls(url: str):
    assert _load(_git_base(repo_url=url)).knowledge_bases["docs"].git is not None
