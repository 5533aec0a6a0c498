"""The pydantic models of `config.yaml` (unknown keys are errors, so typos never pass silently).

MindRoom's keys that this daemon accepts without acting on them never reach these models: they are set
aside with a notice each (`mindroom.config.unused_keys`); `Config.notices` lists them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr, field_validator, model_validator

from mindroom.config.access import AuthorizationConfig, InvitePolicy, concrete_user_ids
from mindroom.config.agent import AgentConfig, timezone_name
from mindroom.config.approval import ToolApprovalConfig
from mindroom.config.budgets import BudgetsConfig
from mindroom.config.defaults import DefaultsConfig
from mindroom.config.environment import homeserver_settings
from mindroom.config.key_notes import MINDROOM_PROMPT_NAMES, PROMPTS_USED
from mindroom.config.knowledge import KnowledgeBaseConfig, check_knowledge_references
from mindroom.config.mcp import MCPServerConfig, oauth_provider_clashes
from mindroom.config.memory import MemoryConfig
from mindroom.config.models import ModelConfig
from mindroom.config.notices import ConfigNotice, notice
from mindroom.config.oauth import OAuthProviderConfig, check_provider_ids
from mindroom.config.plugin import PluginEntryConfig
from mindroom.config.project_extras import install_extra_command
from mindroom.config.providers import PROVIDERS, missing_packages
from mindroom.config.rooms import MatrixSpaceConfig, RoomConfig, RoomDefaultsConfig, RouterConfig, ThreadMode
from mindroom.config.sections import KnowledgeRerankerConfig, StorageConfig, VoiceConfig, reference_problems
from mindroom.config.settings import AgentSettings, entity_settings
from mindroom.config.strict import StrictModel
from mindroom.config.teams import TeamConfig
from mindroom.config.tool_entries import merged_entries, parse_tool_entries
from mindroom.config.tool_settings import FileToolConfig, ShellToolConfig, ToolsConfig
from mindroom.constants import ROUTER_AGENT_NAME, RuntimePaths

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

_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
_RESERVED_NAMES = frozenset({ROUTER_AGENT_NAME, "user", "_shared"})
_PROMPT_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class Config(StrictModel):
    """The whole of `config.yaml`."""

    models: dict[str, ModelConfig] = Field(default_factory=dict)
    agents: dict[str, AgentConfig] = Field(default_factory=dict)
    teams: dict[str, TeamConfig] = Field(default_factory=dict)
    """Agents answering together as one entity, with an account of their own."""
    room_models: dict[str, str] = Field(default_factory=dict)
    """Room key, alias or id -> the model every agent, team and the router uses in that room."""
    room_thread_summary_models: dict[str, str] = Field(default_factory=dict)
    """Room key, alias or id -> the model that writes that room's thread summaries (over the default's)."""
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
    """The zone `!schedule` times are read in and, when set, the one agents are told the date in."""
    voice: VoiceConfig = Field(default_factory=VoiceConfig)
    mcp_servers: dict[str, MCPServerConfig] = Field(default_factory=dict)
    tool_approval: ToolApprovalConfig = Field(default_factory=ToolApprovalConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    knowledge_bases: dict[str, KnowledgeBaseConfig] = Field(default_factory=dict)
    knowledge_reranker: KnowledgeRerankerConfig | None = None
    budgets: BudgetsConfig | None = None
    administrators: list[str] = Field(default_factory=list)
    """Platform administrators, as concrete Matrix user ids (they may wipe a person's memories)."""
    bot_accounts: list[str] = Field(default_factory=list)
    """Other bots (bridges, assistants of other systems): treated as the daemon's own for whom answers go to."""
    matrix_space: MatrixSpaceConfig | None = None
    """A space holding the managed rooms (unset: none)."""
    prompts: dict[str, str] = Field(default_factory=dict)
    """Built-in prompt texts replaced by MindRoom's names for them."""
    oauth_providers: dict[str, OAuthProviderConfig] = Field(default_factory=dict)
    """OAuth providers people connect their accounts with (`!connect`), by MindRoom's provider id."""
    _notices: tuple[ConfigNotice, ...] = PrivateAttr(default=())
    _included: tuple[Path, ...] = PrivateAttr(default=())

    @property
    def notices(self) -> tuple[ConfigNotice, ...]:
        """What this config asks for that the daemon accepts and does not do, each with its key and why."""
        return self._notices

    def attach_notices(self, notices: Iterable[ConfigNotice]) -> None:
        """Record the notices found while this config was read (by `mindroom.config.loading`)."""
        self._notices = tuple(notices)

    @property
    def included_paths(self) -> tuple[Path, ...]:
        """The files the config's file tags read and the folders they walked (resolved), for the file watcher."""
        return self._included

    def attach_included(self, paths: Iterable[Path]) -> None:
        """Record the files and folders included while this config was read (by `mindroom.config.loading`)."""
        self._included = tuple(paths)

    @field_validator(
        "mcp_servers",
        "tool_approval",
        "teams",
        "room_models",
        "room_thread_summary_models",
        "knowledge_bases",
        "prompts",
        mode="before",
    )
    @classmethod
    def _null_is_empty(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("matrix_space", mode="before")
    @classmethod
    def _null_space_is_default(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("mcp_servers")
    @classmethod
    def _server_ids(cls, servers: dict[str, MCPServerConfig]) -> dict[str, MCPServerConfig]:
        bad = [server_id for server_id in servers if not re.match(r"^[A-Za-z0-9_]+$", server_id)]
        if bad:
            msg = f"MCP server ids must be letters, digits and underscores, not {bad}"
            raise ValueError(msg)
        return servers

    @field_validator("oauth_providers")
    @classmethod
    def _provider_ids(cls, providers: dict[str, OAuthProviderConfig]) -> dict[str, OAuthProviderConfig]:
        if problems := check_provider_ids(providers):
            raise ValueError("; ".join(problems))
        return providers

    @field_validator("administrators")
    @classmethod
    def _concrete_users(cls, users: list[str]) -> list[str]:
        return concrete_user_ids(users, "administrators")

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        return timezone_name(value)

    @field_validator("prompts")
    @classmethod
    def _prompt_names(cls, prompts: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(prompts) - MINDROOM_PROMPT_NAMES)
        if unknown:
            msg = f"unknown prompt names {unknown} (allowed: {', '.join(sorted(MINDROOM_PROMPT_NAMES))})"
            raise ValueError(msg)
        for name, text in prompts.items():
            if name not in PROMPTS_USED:
                notice(f"prompts.{name}", "accepted, not used here: this daemon never sends that prompt")
                continue
            odd = sorted(set(_PROMPT_FIELD.findall(text)) - set(PROMPTS_USED[name]))
            if odd:
                msg = f"prompts.{name} names unknown fields {odd} (it may use: {', '.join(PROMPTS_USED[name])})"
                raise ValueError(msg)
        return prompts

    @field_validator("agents", "teams")
    @classmethod
    def _entity_names(cls, entities: dict[str, Any]) -> dict[str, Any]:
        lowered: dict[str, str] = {}
        for name in entities:
            if not _NAME_PATTERN.match(name):
                msg = f"name {name!r} must be letters, digits, '_', '.', '-' (max 64)"
                raise ValueError(msg)
            if name.lower() in _RESERVED_NAMES:
                owner = "the router" if name.lower() == ROUTER_AGENT_NAME else "MindRoom"
                msg = f"name {name!r} is reserved for {owner}"
                raise ValueError(msg)
            if name.lower() in lowered:  # one Matrix account each: its id is the name in lowercase
                msg = f"names {lowered[name.lower()]!r} and {name!r} differ only in case (their accounts would be one)"
                raise ValueError(msg)
            lowered[name.lower()] = name
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
                    f"package{'s' if len(missing) > 1 else ''}: {install_extra_command(extra or '', missing)}"
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
    def _oauth_providers_distinct(self) -> Config:
        if problems := oauth_provider_clashes(self.mcp_servers, self.oauth_providers):
            raise ValueError("; ".join(problems))
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
            summary_models={
                "defaults.thread_summary_model": self.defaults.thread_summary_model,
                **{
                    f"room_thread_summary_models.{room}": model
                    for room, model in self.room_thread_summary_models.items()
                },
            },
        )
        problems += [
            f"{where}.compaction.model: unknown model {entity.compaction.model!r}"
            for where, entity in self._compaction_owners()
            if entity.compaction is not None
            and entity.compaction.model is not None
            and entity.compaction.model not in self.models
        ]
        problems += self.voice.unknown_responders([*self.agents, *self.teams])
        if problems:
            raise ValueError("; ".join(problems))
        if self.knowledge_reranker is not None and self.knowledge_reranker.provider != "cohere":
            notice(
                "knowledge_reranker.provider",
                f"accepted, not used here: only a Cohere-format endpoint reranks ({self.knowledge_reranker.provider}"
                " is not called); hits keep the hybrid order",
            )
        return self

    def _compaction_owners(self) -> list[tuple[str, Any]]:
        return [
            ("defaults", self.defaults),
            *((f"agents.{name}", agent) for name, agent in self.agents.items()),
            *((f"teams.{name}", team) for name, team in self.teams.items()),
        ]

    @model_validator(mode="after")
    def _budget_fallback(self) -> Config:
        fallback = self.budgets.fallback_model if self.budgets is not None else None
        if fallback is not None and fallback not in self.models:
            known = ", ".join(sorted(self.models)) or "none"
            msg = f"budgets.fallback_model: unknown model {fallback!r} (known: {known})"
            raise ValueError(msg)
        return self

    @model_validator(mode="after")
    def _knowledge_references(self) -> Config:
        named = {name: agent.knowledge_bases for name, agent in self.agents.items()}
        check_knowledge_references(self.knowledge_bases, named, list(self.models))
        return self

    def memory_backend(self, agent_name: str) -> str:
        """Agent `agent_name`'s memory: `mem0`, `file` or `none` (its own, else `memory.backend`); a team
        keeps none (its answers are its members' work)."""
        if agent_name in self.teams:
            return "none"
        agent = self.agents.get(agent_name)
        own = agent.memory_backend if agent is not None else None
        return own or self.memory.backend

    def memory_enabled(self, agent_name: str) -> bool:
        """Whether agent `agent_name` recalls and writes memories in the state (`mem0`)."""
        return self.memory_backend(agent_name) == "mem0"

    def settings_for(self, name: str) -> AgentSettings:
        """Agent or team `name`'s turn settings: its own where it sets them, else `defaults`' (`KeyError` if
        it is neither)."""
        explicit_zone = "timezone" in self.model_fields_set
        agent = self.agents.get(name)
        if agent is not None:
            return agent.resolved(self.defaults, self.timezone if explicit_zone else None)
        team = self.teams[name]
        return entity_settings(
            self.defaults,
            enable_streaming=team.enable_streaming,
            markdown=team.markdown,
            num_history_runs=team.num_history_runs,
            num_history_messages=team.num_history_messages,
            max_tool_calls_from_history=team.max_tool_calls_from_history,
            max_tool_calls_per_turn=team.max_tool_calls_per_turn,
            timezone=self.timezone if explicit_zone else None,
            compaction=team.compaction,
        )

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
        """How `agent_name` answers in the room known by `room_keys`: the room's setting, else the agent's for
        that room (`room_thread_modes`), else the agent's, else the default."""
        keys = list(room_keys)
        for key in keys:
            room = self.rooms.get(key)
            if room is not None and room.thread_mode is not None:
                return room.thread_mode
        team = self.teams.get(agent_name)
        if team is not None:  # the members' mode when they agree, else threads
            modes = {self.thread_mode(member, keys) for member in team.agents}
            return modes.pop() if len(modes) == 1 else "thread"
        agent = self.agents.get(agent_name)
        if agent is not None:
            for key in keys:
                if key in agent.room_thread_modes:
                    return agent.room_thread_modes[key]
            if agent.thread_mode is not None:
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

    def get_domain(self, runtime_paths: RuntimePaths) -> str:
        """MindRoom's name for the server name of the daemon's accounts: `MATRIX_SERVER_NAME`, else the host of
        `MATRIX_HOMESERVER`, else the embedded homeserver's `localhost`."""
        settings = homeserver_settings(runtime_paths.env_values)
        return settings.server_name if settings is not None else "localhost"

    def prompt(self, name: str, default: str) -> str:
        """The text of built-in prompt `name`: the config's `prompts` entry, else `default`."""
        return self.prompts.get(name, default)
