"""The pydantic models of `config.yaml` (unknown keys are errors, so typos never pass silently)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator
from pydantic_core.core_schema import ValidatorFunctionWrapHandler

from mindroom.config.approval import ToolApprovalConfig
from mindroom.config.knowledge import KnowledgeBaseConfig, check_knowledge_references
from mindroom.config.mcp import MCPServerConfig
from mindroom.config.memory import AgentMemorySearchConfig, MemoryBackend, MemoryConfig, refuse_file_backend
from mindroom.config.models import ModelConfig
from mindroom.config.plugin import PluginEntryConfig
from mindroom.config.providers import PROVIDERS, missing_packages
from mindroom.config.sections import StorageConfig, VoiceConfig, reference_problems
from mindroom.config.strict import StrictModel
from mindroom.config.teams import TeamConfig
from mindroom.config.tool_entries import ToolEntry, merged_entries, parse_tool_entries
from mindroom.config.tool_settings import FileToolConfig, ShellToolConfig, ToolsConfig
from mindroom.constants import ROUTER_AGENT_NAME

__all__ = [
    "AgentConfig",
    "AgentSettings",
    "AuthorizationConfig",
    "Config",
    "DefaultsConfig",
    "FileToolConfig",
    "InvitePolicy",
    "ModelConfig",
    "RoomConfig",
    "RoomDefaultsConfig",
    "RouterConfig",
    "ShellToolConfig",
    "StorageConfig",
    "TeamConfig",
    "ThreadMode",
    "ToolsConfig",
    "VoiceConfig",
]

_OWNER_PLACEHOLDER = "__MINDROOM_OWNER_USER_ID_FROM_PAIRING__"
_CONCRETE_USER = re.compile(r"^@[^:*?\[\]\s]+:[^*?\[\]\s]+$")
_NAME_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,63}$"

ThreadMode = Literal["thread", "room"]
"""`thread`: answers go into a thread under the message; `room`: into the main timeline as replies."""
InvitePolicy = Literal["authorized", "never"]
"""Whose invites an agent accepts: authorized users' (the default), or nobody's."""


@dataclass(frozen=True, slots=True)
class AgentSettings:
    """An agent's effective turn settings: its own where it sets them, else the config's defaults."""

    enable_streaming: bool
    markdown: bool
    num_history_runs: int


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
    markdown: bool | None = None
    password: str | None = None
    thread_mode: ThreadMode | None = None
    accept_invites: InvitePolicy = "authorized"
    include_default_tools: bool = True
    """Whether `defaults.tools` are added to this agent's `tools:`."""
    delegate_to: list[str] = Field(default_factory=list)
    """Agents this one may hand a question to within its turn (it gets the `delegate_task` tool)."""
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

    memory_backend: MemoryBackend | None = None
    """Unset: `memory.backend`; `none`: this agent neither recalls nor writes memories."""
    memory_search: AgentMemorySearchConfig | None = None
    knowledge_bases: list[str] = Field(default_factory=list)
    """The `knowledge_bases:` this agent searches (it gets the `search_knowledge_base` tool)."""

    @field_validator("instructions", mode="before")
    @classmethod
    def _single_instruction(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("memory_backend")
    @classmethod
    def _offered_backend(cls, value: str | None) -> Any:
        return refuse_file_backend(value)

    def resolved(self, defaults: DefaultsConfig) -> AgentSettings:
        """This agent's settings with `defaults` filled in where it leaves them unset."""
        return AgentSettings(
            enable_streaming=defaults.enable_streaming if self.enable_streaming is None else self.enable_streaming,
            markdown=defaults.markdown if self.markdown is None else self.markdown,
            num_history_runs=defaults.num_history_runs if self.num_history_runs is None else self.num_history_runs,
        )


class RouterConfig(StrictModel):
    """The router picks which agent answers in rooms with several agents."""

    model: str = "default"
    display_name: str = "Router"
    password: str | None = None
    plugins: list[str] | None = None


class RoomConfig(StrictModel):
    """A room the daemon creates or joins; `encrypted` makes it end-to-end encrypted (which cannot be undone)."""

    name: str | None = None
    description: str = ""
    topic: str | None = None
    thread_mode: ThreadMode | None = None
    encrypted: bool = False


class AuthorizationConfig(StrictModel):
    """Who may reach agents: global users, per-room users, and whether anyone in a room may."""

    global_users: list[str] = Field(default_factory=list)
    room_permissions: dict[str, list[str]] = Field(default_factory=dict)
    default_room_access: bool = False
    config_command_enabled: bool = False
    """Whether `!config` (for `administrators` only) reads and changes config keys from chat."""


class RoomDefaultsConfig(StrictModel):
    """Applied to every room the daemon manages."""

    invite_users: list[str] = Field(default_factory=list)


class DefaultsConfig(StrictModel):
    """Defaults for every agent unless the agent overrides them."""

    tools: list[Any] = Field(default_factory=list)
    """Tool entries every agent gets (unless `include_default_tools: false`), in MindRoom's shapes."""

    @field_validator("tools")
    @classmethod
    def _tool_entries(cls, value: list[Any]) -> list[Any]:
        parse_tool_entries(value, "defaults.tools")
        return value

    enable_streaming: bool = True
    markdown: bool = True
    num_history_runs: int = Field(default=10, ge=0)
    streaming_edit_interval_ms: int = Field(default=500, ge=50)
    max_concurrent_turns_per_agent: int = Field(default=4, ge=1)
    thread_mode: ThreadMode = "thread"
    max_attachment_bytes: int = Field(default=20 * 1024 * 1024, ge=1)
    # A hook step that holds the event loop longer than this is logged and counted (`blocked_loop`); it
    # fails the hook only if the hook also runs past its timeout.
    hooks_blocking_threshold_ms: int = Field(default=100, ge=1)
    history_token_budget: int | None = Field(default=12000, ge=0)
    """Past this many tokens (characters / 4) of stored history, older turns are folded into a summary the
    agent's model writes, before the next answer. 0 or null: never."""


class Config(StrictModel):
    """The whole of `config.yaml`."""

    models: dict[str, ModelConfig] = Field(default_factory=dict)
    agents: dict[str, AgentConfig] = Field(default_factory=dict)
    teams: dict[str, TeamConfig] = Field(default_factory=dict)
    """Agents answering together as one entity, with an account of their own."""
    room_models: dict[str, str] = Field(default_factory=dict)
    """Room key, alias or id -> the model every agent, team and the router uses in that room."""
    router: RouterConfig = Field(default_factory=RouterConfig)
    rooms: dict[str, RoomConfig] = Field(default_factory=dict)
    authorization: AuthorizationConfig = Field(default_factory=AuthorizationConfig)
    room_defaults: RoomDefaultsConfig = Field(default_factory=RoomDefaultsConfig)
    defaults: DefaultsConfig = Field(default_factory=DefaultsConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    storage: StorageConfig = Field(default_factory=StorageConfig)
    plugins: list[str | PluginEntryConfig] = Field(default_factory=list)
    admin_room: str | None = None
    timezone: str = "UTC"
    voice: VoiceConfig = Field(default_factory=VoiceConfig)
    mcp_servers: dict[str, MCPServerConfig] = Field(default_factory=dict)
    tool_approval: ToolApprovalConfig = Field(default_factory=ToolApprovalConfig)

    @field_validator("mcp_servers", "tool_approval", "teams", "room_models", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("mcp_servers")
    @classmethod
    def _server_ids(cls, servers: dict[str, MCPServerConfig]) -> dict[str, MCPServerConfig]:
        import re

        bad = [server_id for server_id in servers if not re.match(r"^[A-Za-z0-9_]+$", server_id)]
        if bad:
            msg = f"MCP server ids must be letters, digits and underscores, not {bad}"
            raise ValueError(msg)
        return servers

    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    knowledge_bases: dict[str, KnowledgeBaseConfig] = Field(default_factory=dict)
    administrators: list[str] = Field(default_factory=list)
    """Platform administrators, as concrete Matrix user ids (they may wipe a person's memories)."""

    @field_validator("administrators")
    @classmethod
    def _concrete_users(cls, users: list[str]) -> list[str]:
        odd = [user for user in users if user != _OWNER_PLACEHOLDER and not _CONCRETE_USER.match(user)]
        if odd or len(set(users)) != len(users):
            msg = f"administrators must be distinct, concrete Matrix user ids (not {odd or 'repeated'})"
            raise ValueError(msg)
        return users

    @field_validator("knowledge_bases", mode="before")
    @classmethod
    def _null_bases(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("agents", "teams")
    @classmethod
    def _entity_names(cls, entities: dict[str, Any]) -> dict[str, Any]:
        for name in entities:
            if not re.match(_NAME_PATTERN, name):
                msg = f"name {name!r} must be lowercase letters, digits, '_', '.', '-' (max 64)"
                raise ValueError(msg)
            if name == ROUTER_AGENT_NAME:
                msg = f"name {name!r} is reserved for the router"
                raise ValueError(msg)
        return entities

    @field_validator("models")
    @classmethod
    def _providers_installed(cls, models: dict[str, ModelConfig]) -> dict[str, ModelConfig]:
        for name, model in models.items():
            missing = missing_packages(model.provider)
            if missing:
                extra = PROVIDERS[model.provider].extra
                msg = (
                    f"model {name!r} (provider {model.provider!r}) needs the {' and '.join(missing)} "
                    f"package{'s' if len(missing) > 1 else ''}: pip install 'mindroom[{extra}]'"
                )
                raise ValueError(msg)
        return models

    @model_validator(mode="after")
    def _default_tools(self) -> Config:
        # Each agent's `tools` become its own entries plus the defaults', so every reader sees one list.
        defaults = parse_tool_entries(self.defaults.tools, "defaults.tools")
        if not defaults:
            return self
        agents = dict(self.agents)
        for name, agent in agents.items():
            if agent.include_default_tools:
                entries = merged_entries(agent.tool_entries(), defaults)
                merged = agent.model_copy(update={"tools": [entry.name for entry in entries]})
                merged._tool_entries = entries
                agents[name] = merged
        object.__setattr__(self, "agents", agents)  # still validating: the frozen model is not handed out yet
        return self

    @model_validator(mode="after")
    def _references_exist(self) -> Config:
        problems = reference_problems(
            models=self.models,
            agents=self.agents,
            teams=self.teams,
            router_model=self.router.model,
            room_models=self.room_models,
            reserved=ROUTER_AGENT_NAME,
        )
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @model_validator(mode="after")
    def _knowledge_references(self) -> Config:
        named = {name: agent.knowledge_bases for name, agent in self.agents.items()}
        check_knowledge_references(self.knowledge_bases, named, list(self.models))
        return self

    def memory_enabled(self, agent_name: str) -> bool:
        """Whether agent `agent_name` recalls and writes memories (its `memory_backend`, else `memory.backend`);
        a team does not (its answers are its members' work)."""
        if agent_name in self.teams:
            return False
        agent = self.agents.get(agent_name)
        backend = agent.memory_backend if agent is not None and agent.memory_backend is not None else None
        return (backend or self.memory.backend) == "mem0"

    @property
    def plugin_entries(self) -> list[PluginEntryConfig]:
        """Every `plugins:` entry in object form (string entries become `PluginEntryConfig(path=...)`)."""
        return [PluginEntryConfig(path=entry) if isinstance(entry, str) else entry for entry in self.plugins]

    def agent_rooms(self, agent_name: str) -> list[str]:
        """The room keys or ids an agent (or a team) belongs to."""
        return list(self.responders()[agent_name].rooms)

    def responders(self) -> dict[str, AgentConfig | TeamConfig]:
        """Every entity that answers with an account of its own, by name: the agents, then the teams."""
        return {**self.agents, **self.teams}

    def thread_mode(self, agent_name: str, room_keys: Iterable[str]) -> ThreadMode:
        """How `agent_name` answers in the room known by `room_keys`: the room's setting, else the agent's,
        else the default."""
        for key in room_keys:
            room = self.rooms.get(key)
            if room is not None and room.thread_mode is not None:
                return room.thread_mode
        team = self.teams.get(agent_name)
        if team is not None:  # the members' mode when they agree, else threads
            modes = {self.thread_mode(member, ()) for member in team.agents}
            return modes.pop() if len(modes) == 1 else "thread"
        agent = self.agents.get(agent_name)
        if agent is not None and agent.thread_mode is not None:
            return agent.thread_mode
        return self.defaults.thread_mode

    def managed_room_keys(self) -> list[str]:
        """Every room the daemon manages: the config's rooms, then the admin room."""
        keys = self.all_room_keys()
        if self.admin_room and self.admin_room not in keys:
            keys.append(self.admin_room)
        return keys

    def all_room_keys(self) -> list[str]:
        """Every room named in config, under `rooms:` or in an agent's or team's `rooms`, in first-seen order."""
        seen: dict[str, None] = dict.fromkeys(self.rooms)
        for entity in self.responders().values():
            seen.update(dict.fromkeys(entity.rooms))
        return list(seen)
