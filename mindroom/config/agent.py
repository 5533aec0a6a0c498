"""`agents:` entries: one AI agent each, with its Matrix identity, model, instructions, rooms, tools and settings."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, PrivateAttr, field_validator, model_validator
from pydantic_core.core_schema import ValidatorFunctionWrapHandler

from mindroom.config.access import InvitePolicy, ResponderAccessConfig
from mindroom.config.defaults import CompactionOverrideConfig, DefaultsConfig, one_history_limit
from mindroom.config.memory import AgentMemorySearchConfig, MemoryBackend
from mindroom.config.rooms import ThreadMode
from mindroom.config.settings import AgentSettings, entity_settings
from mindroom.config.strict import StrictModel
from mindroom.config.tool_entries import ToolEntry, parse_tool_entries

__all__ = ["AgentConfig", "AgentPrivateConfig", "ThreadExportsConfig", "timezone_name", "workspace_relative"]


def timezone_name(value: str) -> str:
    """`value` when it names an IANA zone (`Europe/Berlin`); else `ValueError` saying what to write."""
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        msg = f"unknown timezone {value!r}: use an IANA name such as 'America/New_York'"
        raise ValueError(msg) from None
    return value


def workspace_relative(value: str) -> str:
    """A path inside an agent's workspace, as written relative to it; `ValueError` for one outside it."""
    path = PurePosixPath(value.strip())
    if not value.strip() or path.is_absolute() or ".." in path.parts or path == PurePosixPath():
        msg = f"{value!r} must be a path inside the agent's workspace (relative, without '..')"
        raise ValueError(msg)
    return path.as_posix()


def _inside_private_root(value: str, key: str) -> str:
    path = PurePosixPath(value.strip())
    if not value.strip() or path.is_absolute() or ".." in path.parts or path == PurePosixPath():
        msg = f"{key}: {value!r} must be a path inside the private root (relative, without '..')"
        raise ValueError(msg)
    return path.as_posix()


class AgentPrivateConfig(StrictModel):
    """`agents.<name>.private`: each requester (`per: user`), or requester and agent (`per: user_agent`), gets a
    copy of the agent's state (workspace, context files, file memory); see `mindroom.state.private_roots`."""

    per: Literal["user", "user_agent"]
    root: str | None = None
    """The workspace below the requester's private state root (unset: `<agent>_data`)."""
    template_dir: str | None = None
    """A folder (relative to the config's) copied into each requester's workspace when it is first made."""
    context_files: list[str] | None = None
    """Files of the private workspace whose text joins the agent's instructions."""

    @field_validator("root")
    @classmethod
    def _root(cls, value: str | None) -> str | None:
        return None if value is None else _inside_private_root(value, "private.root")

    @field_validator("template_dir")
    @classmethod
    def _template(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            msg = "private.template_dir must not be empty"
            raise ValueError(msg)
        return None if value is None else value.strip()

    @field_validator("context_files")
    @classmethod
    def _context(cls, values: list[str] | None) -> list[str] | None:
        return None if values is None else [_inside_private_root(value, "private.context_files") for value in values]


class ThreadExportsConfig(StrictModel):
    """`agents.<name>.thread_exports`: on (MindRoom's settings under it are accepted with a notice, see `key_notes`)."""


class AgentConfig(StrictModel):
    """One AI agent: its Matrix identity, model, instructions, rooms, tools, skills and plugins."""

    display_name: str
    role: str = ""
    instructions: list[str] = Field(default_factory=list)
    model: str = "default"
    tools: list[str] = Field(default_factory=list)
    skills: list[str] = Field(default_factory=list)
    rooms: list[str] = Field(default_factory=list)
    plugins: list[str] | None = None
    enable_streaming: bool | None = None
    num_history_runs: int | None = Field(default=None, ge=0)
    num_history_messages: int | None = Field(default=None, ge=1)
    max_tool_calls_from_history: int | None = Field(default=None, ge=0)
    max_tool_calls_per_turn: int | None = Field(default=None, ge=1)
    show_tool_calls: bool | None = None
    markdown: bool | None = None
    password: str | None = None
    thread_mode: ThreadMode | None = None
    room_thread_modes: dict[str, ThreadMode] = Field(default_factory=dict)
    """Room key, alias or id -> how this agent answers there (over `thread_mode`)."""
    accept_invites: InvitePolicy = "authorized"
    access: ResponderAccessConfig | None = None
    """Who may talk to this agent besides `authorization`'s users (see `mindroom.config.access`)."""
    timezone: str | None = None
    """The zone this agent is told the date and time in (unset: the top-level `timezone`)."""
    compaction: CompactionOverrideConfig | None = None
    thread_exports: ThreadExportsConfig | None = None
    """Keep `thread_exports/` of its workspace current with the threads it answers in (`true`: on)."""
    context_files: list[str] = Field(default_factory=list)
    """Files of the agent's workspace whose text is added to its instructions (capped by `max_preload_chars`)."""
    include_default_tools: bool = True
    """Whether `defaults.tools` are added to this agent's `tools:`."""
    delegate_to: list[str] = Field(default_factory=list)
    """Agents this one may hand a question to within its turn (it gets the `delegate_task` tool)."""
    memory_backend: MemoryBackend | None = None
    """Unset: `memory.backend`; `none`: this agent neither recalls nor writes memories."""
    memory_search: AgentMemorySearchConfig | None = None
    knowledge_bases: list[str] = Field(default_factory=list)
    """The `knowledge_bases:` this agent searches (it gets the `search_knowledge_base` tool)."""
    private: AgentPrivateConfig | None = None
    """A copy of its state per requester (None: one agent, one workspace, for everyone)."""
    worker_scope: Literal["shared", "user", "user_agent"] | None = None
    """MindRoom's worker boundary: accepted with a notice (there are no workers), kept to refuse it beside `private`."""
    _tool_entries: tuple[ToolEntry, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _tool_settings(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> AgentConfig:
        # `tools` holds the names (what most code needs); the MindRoom-shaped entries with settings sit beside.
        entries: tuple[ToolEntry, ...] | None = None
        if isinstance(data, dict) and "tools" in data:
            entries = parse_tool_entries(data["tools"])
            data = {**data, "tools": [entry.name for entry in entries]}
        agent: AgentConfig = handler(data)
        if entries is not None:
            agent._tool_entries = entries
        elif not agent._tool_entries:
            agent._tool_entries = tuple(ToolEntry(name) for name in agent.tools)
        return agent

    def tool_entries(self) -> tuple[ToolEntry, ...]:
        """This agent's `tools:` entries with their settings, in list order."""
        return self._tool_entries or tuple(ToolEntry(name) for name in self.tools)

    @field_validator("instructions", mode="before")
    @classmethod
    def _single_instruction(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str | None) -> str | None:
        return None if value is None else timezone_name(value)

    @field_validator("thread_exports", mode="before")
    @classmethod
    def _exports_switch(cls, value: Any) -> Any:
        if value is True:
            return {}
        return None if value is False else value

    @field_validator("context_files")
    @classmethod
    def _inside_workspace(cls, values: list[str]) -> list[str]:
        return [workspace_relative(value) for value in values]

    @model_validator(mode="after")
    def _one_limit(self) -> AgentConfig:
        one_history_limit(self.num_history_runs, self.num_history_messages)
        if self.private is not None and self.worker_scope is not None:
            msg = "private: a private agent's scope is private.per; write private or worker_scope, not both"
            raise ValueError(msg)
        return self

    def resolved(self, defaults: DefaultsConfig, timezone: str | None = None) -> AgentSettings:
        """This agent's settings with `defaults` filled in where it leaves them unset (`Config.settings_for`
        also knows the top-level `timezone`)."""
        return entity_settings(
            defaults,
            enable_streaming=self.enable_streaming,
            markdown=self.markdown,
            num_history_runs=self.num_history_runs,
            num_history_messages=self.num_history_messages,
            max_tool_calls_from_history=self.max_tool_calls_from_history,
            max_tool_calls_per_turn=self.max_tool_calls_per_turn,
            show_tool_calls=self.show_tool_calls,
            timezone=self.timezone or timezone,
            compaction=self.compaction,
        )
