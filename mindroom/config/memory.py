"""The `memory:` section and the per-agent memory keys, with MindRoom's names so its `config.yaml` loads here.

What an agent remembers about a person lives in the state backend (agno's memory table beside the sessions).
`backend: mem0` turns it on (the name MindRoom gives its database-backed memory), `none` leaves it off, and
that is the default here: memory costs a model call after every answer, so a deployment asks for it.
`file` is MindRoom's Markdown memory: the agent's `MEMORY.md` in its workspace joins its prompt (within
`memory.file`'s caps); it is written by the agent (its file tools), never automatically.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "AgentMemorySearchConfig",
    "MemoryAutoFlushConfig",
    "MemoryBackend",
    "MemoryConfig",
    "MemoryEmbedderConfig",
    "MemoryEmbedderSettings",
    "MemoryFileConfig",
    "MemoryLLMConfig",
    "MemorySearchConfig",
]

MemoryBackend = Literal["mem0", "file", "none"]
"""`mem0`: memories in the state backend; `file`: the workspace's MEMORY.md in the prompt; `none`: nothing."""

_EMBEDDER_PROVIDERS = ("openai", "ollama", "huggingface", "sentence_transformers")
_OPENAI_ONLY = ("api_key", "credentials_service", "query_prefix", "document_prefix")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MemoryEmbedderSettings(_Strict):
    """`memory.embedder.config`: which embedding model, where, and how many dimensions."""

    model: str = "text-embedding-3-small"
    host: str | None = None
    dimensions: int | None = Field(default=None, ge=1)
    api_key: str | None = None
    credentials_service: str | None = None
    query_prefix: str | None = None
    document_prefix: str | None = None


class MemoryEmbedderConfig(_Strict):
    """`memory.embedder`: the embedding provider knowledge bases use for their vectors."""

    provider: str = "openai"
    config: MemoryEmbedderSettings = Field(default_factory=MemoryEmbedderSettings)

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, value: str) -> str:
        normalised = value.strip().lower()
        if normalised not in _EMBEDDER_PROVIDERS:
            msg = f"unknown embedder provider {value!r} (known: {', '.join(_EMBEDDER_PROVIDERS)})"
            raise ValueError(msg)
        return normalised

    @model_validator(mode="after")
    def _fields_the_provider_reads(self) -> MemoryEmbedderConfig:
        if self.provider in ("ollama", "sentence_transformers") and self.config.dimensions is not None:
            msg = f"embedder provider {self.provider!r} does not take `dimensions`"
            raise ValueError(msg)
        if self.provider != "openai":
            given = [name for name in _OPENAI_ONLY if (getattr(self.config, name) or "").strip()]
            if given:
                msg = f"embedder provider {self.provider!r} never reads {', '.join(given)} (openai only)"
                raise ValueError(msg)
        return self


class MemoryLLMConfig(_Strict):
    """`memory.llm`: the model that writes memories down after an answer (unset: the agent's own model)."""

    provider: Literal["ollama", "openai", "openrouter", "anthropic"] = "ollama"
    config: dict[str, Any] = Field(default_factory=dict)


class MemoryFileConfig(_Strict):
    """`memory.file`: how much of an agent's MEMORY.md the `file` backend puts in its prompt."""

    path: str | None = None
    max_entrypoint_lines: int = Field(default=200, ge=1)
    max_entrypoint_tokens: int = Field(default=50000, ge=1)


class MemorySearchConfig(_Strict):
    """`memory.search`: accepted for MindRoom configs (file-memory search; not used by the stored memory)."""

    mode: Literal["keyword", "semantic"] = "keyword"
    include: list[str] = Field(default_factory=lambda: ["memory/**/*.md"], min_length=1)
    include_entrypoint: bool = False


class AgentMemorySearchConfig(_Strict):
    """`agents.<a>.memory_search`: per-agent overrides of `memory.search` (unset fields inherit)."""

    mode: Literal["keyword", "semantic"] | None = None
    include: list[str] | None = None
    include_entrypoint: bool | None = None


class _FlushBatch(_Strict):
    max_sessions_per_cycle: int = Field(default=10, ge=1)
    max_sessions_per_agent_per_cycle: int = Field(default=3, ge=1)


class _FlushMemoryContext(_Strict):
    memory_snippets: int = Field(default=5, ge=0)
    snippet_max_chars: int = Field(default=400, ge=1)


class _FlushExtractor(_Strict):
    model: str | None = None
    no_reply_token: str = "NO_REPLY"
    max_messages_per_flush: int = Field(default=20, ge=1)
    max_chars_per_flush: int = Field(default=12000, ge=1)
    max_extraction_seconds: float = Field(default=30, gt=0)
    include_memory_context: _FlushMemoryContext = Field(default_factory=_FlushMemoryContext)


class MemoryAutoFlushConfig(_Strict):
    """`memory.auto_flush`: accepted for MindRoom configs; it drives the `file` backend only."""

    enabled: bool = False
    flush_interval_seconds: int = Field(default=300, ge=5)
    idle_seconds: int = Field(default=120, ge=0)
    stale_ttl_seconds: int = Field(default=86400, ge=60)
    retry_cooldown_seconds: int = Field(default=30, ge=1)
    max_retry_cooldown_seconds: int = Field(default=300, ge=1)
    batch: _FlushBatch = Field(default_factory=_FlushBatch)
    extractor: _FlushExtractor = Field(default_factory=_FlushExtractor)


class MemoryConfig(_Strict):
    """`memory:`: whether agents remember people (`backend`), the embedder knowledge bases use, the memory model."""

    backend: MemoryBackend = "none"
    team_reads_member_memory: bool = False
    embedder: MemoryEmbedderConfig | None = None
    """Unset: knowledge bases index for full-text search only (no embeddings endpoint is assumed)."""
    llm: MemoryLLMConfig | None = None
    file: MemoryFileConfig = Field(default_factory=MemoryFileConfig)
    search: MemorySearchConfig = Field(default_factory=MemorySearchConfig)
    auto_flush: MemoryAutoFlushConfig = Field(default_factory=MemoryAutoFlushConfig)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if value is None:
            return {}
        if isinstance(value, str):
            return {"backend": value}
        return value
