"""The tool catalogue: every tool an agent could be given, and which of them each agent gets.

Naming and per-agent filtering (an agent's `tools:` list):

- a built-in group name (`calculator`, `file`, `shell`, `matrix`) gives every tool of that group;
- a plugin's name gives every tool of that plugin;
- a tool's own name (`read_file`, a plugin function's name) gives just that tool;
- a toolkit a plugin registered with `register_tool_with_metadata` gives its functions under the
  registered name (`thread_goal`); one registered under its plugin's own name joins the plugin's tools;
- one of MindRoom's catalogue names for an agno toolkit (`duckduckgo`, `tavily`: `toolkit_table.py`) gives
  that toolkit's functions, built with the agent's settings when its tools are first built;
- every other name of MindRoom's catalogue is known (`tool_names.py`): one that comes later, or a toolkit
  whose package or credential is missing, gives nothing (the agent runs without it, and the catalogue's
  `unavailable` says why and the fix); one this daemon does not offer is an error giving the reason.

Built-in groups are registered in one place, `BUILTIN_PROVIDERS` (`builtin_groups.py`, exported here too);
one named like a tool that comes later (`tool_names.LATER`) takes that name over.

An agent gets exactly the tools its list names, in list order, nothing else. Tool names are the names the
model calls, so they are unique among one agent's tools: two groups, plugins or toolkits may define tools of
the same name (as MindRoom's `todo` toolkit and a plugin's own to-do toolkit do), and an agent may have one of
them, not both; a name two of them define is not a name an agent can ask for by itself. A tool may not be
named like a group or plugin it does not belong to. A clash is a `ToolCatalogError` at startup naming both
owners (and the agent, for one of an agent's list).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mindroom.constants import RuntimePaths
from mindroom.errors import MindroomError
from mindroom.logging_config import get_logger
from mindroom.tool_system.builtin_groups import BUILTIN_PROVIDERS
from mindroom.tool_system.isolation import shared_pool
from mindroom.tool_system.mcp.servers import MCPServerPool, mcp_providers
from mindroom.tool_system.named_tools import UnavailableTool, named_tools
from mindroom.tool_system.plugin_tools import (
    ForeignToolAdapter,
    plugin_providers,
    plugin_tool_specs,
    registered_toolkits,
)
from mindroom.tool_system.providers import ToolProvider
from mindroom.tool_system.spec import AgentToolEnvironment, ToolSpec
from mindroom.tool_system.toolkits import toolkit_providers

if TYPE_CHECKING:
    from mindroom.config.main import Config
    from mindroom.plugins.loader import Plugin

__all__ = [
    "BUILTIN_PROVIDERS",
    "ForeignToolAdapter",
    "ToolCatalog",
    "ToolCatalogError",
    "ToolProvider",
    "build_tool_catalog",
    "plugin_tool_specs",
    "registered_toolkits",
]

logger = get_logger(__name__)


class ToolCatalogError(MindroomError):
    """The tools of the loaded plugins and the config do not fit together (clashes, unknown names)."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("tool catalogue problems:\n" + "\n".join(f"  {problem}" for problem in self.problems))


@dataclass(frozen=True, slots=True, eq=False)
class ToolCatalog:
    """Every tool provider by name, and the owner of every tool name.

    `revision()` changes when a dynamic provider's tools may have (an MCP server listed new ones):
    tools built from the catalogue before are stale then. `unavailable`: the tools agents name that
    cannot run here, each with the agent, the reason and the fix.
    """

    providers: Mapping[str, ToolProvider]
    owners: Mapping[str, str]
    mcp: MCPServerPool | None = None
    unavailable: tuple[UnavailableTool, ...] = ()
    shared_names: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    """Tool names more than one provider defines, with those providers: an agent may have one of them."""

    def revision(self) -> int:
        """A number that changes whenever the MCP servers' tool lists do."""
        return self.mcp.revision if self.mcp is not None else 0

    @classmethod
    def builtin(cls) -> ToolCatalog:
        """The built-in tools only (no plugins)."""
        return cls(
            {provider.name: provider for provider in BUILTIN_PROVIDERS},
            {name: provider.name for provider in BUILTIN_PROVIDERS for name in provider.tool_names},
        )

    def unknown(self, wanted: Iterable[str]) -> list[str]:
        """The names in `wanted` that are neither a provider nor a tool."""
        known = (self.providers, self.owners, self.shared_names)
        return [name for name in wanted if not any(name in table for table in known)]

    def clashes(self, wanted: Iterable[str]) -> list[str]:
        """What is wrong with a `tools:` list in tool names: one two providers define, named by itself, or
        given by two providers of the list."""
        problems: list[str] = []
        wanted = tuple(dict.fromkeys(wanted))
        for name in wanted:
            if name in self.shared_names:
                labels = " and ".join(self.providers[owner].label for owner in self.shared_names[name])
                problems.append(f"{name!r} is a tool of {labels}: name the one whose tools the agent gets")
        given: dict[str, str] = {}
        for name in wanted:
            provider = self.providers.get(name)
            if provider is None:
                continue
            for tool_name in provider.tool_names:
                first = given.setdefault(tool_name, name)
                if first != name:
                    other = self.providers[first].label
                    problems.append(f"tool {tool_name!r} is defined by {provider.label} and by {other}: take one")
        return problems

    def selection(self, wanted: Iterable[str]) -> tuple[str, ...]:
        """The tool names a `tools:` list gives, in list order, each once (unknown names are skipped)."""
        chosen: dict[str, None] = {}
        for name in wanted:
            provider = self.providers.get(name)
            if provider is not None:
                chosen.update(dict.fromkeys(provider.tool_names))
            elif name in self.owners:
                chosen[name] = None
        return tuple(chosen)

    def tools_for(self, wanted: Iterable[str], env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
        """The tools an agent with this `tools:` list gets, built for its environment, in list order."""
        built: dict[str, dict[str, ToolSpec]] = {}

        def of(owner: str) -> dict[str, ToolSpec]:
            if owner not in built:
                specs = self.providers[owner].build(env)
                built[owner] = {spec.name: dataclasses.replace(spec, toolkit=owner) for spec in specs}
            return built[owner]

        chosen: dict[str, ToolSpec] = {}
        withheld = {tool.tool for tool in self.unavailable if tool.agent == env.agent_name}
        for name in wanted:
            if name in withheld:  # a group this agent lacks a credential for (another agent may have it)
                continue
            provider = self.providers.get(name)
            if provider is not None:
                owned = of(name)
                names: Iterable[str] = tuple(owned) if provider.dynamic else provider.tool_names
            elif name in self.owners:
                owned, names = of(self.owners[name]), (name,)
            else:
                continue
            for tool_name in names:
                spec = owned.get(tool_name)
                if spec is not None and chosen.setdefault(tool_name, spec) is not spec:
                    logger.warning("two tools of an agent share a name", tool=tool_name, agent=env.agent_name)
        result = tuple(chosen.values())
        if any(spec.isolated for spec in result):
            shared_pool().warm()  # the worker starts now, so the agent's first isolated call does not wait for it
        return result


def _catalog(
    providers: Sequence[ToolProvider], problems: list[str]
) -> tuple[dict[str, ToolProvider], dict[str, str], dict[str, tuple[str, ...]]]:
    by_name: dict[str, ToolProvider] = {}
    owners: dict[str, str] = {}
    shared: dict[str, tuple[str, ...]] = {}
    for provider in providers:
        if provider.name in by_name:
            problems.append(f"{provider.label} has the same name as {by_name[provider.name].label}")
            continue
        by_name[provider.name] = provider
    for provider in by_name.values():
        for tool_name in provider.tool_names:
            group = by_name.get(tool_name)
            if group is not None and group is not provider:
                problems.append(f"tool {tool_name!r} of {provider.label} has the name of {group.label}")
                continue
            owner = owners.get(tool_name)
            if tool_name in shared:
                shared[tool_name] = (*shared[tool_name], provider.name)
            elif owner is not None and owner != provider.name:
                shared[tool_name] = (owner, provider.name)  # an agent may have one of them (checked per agent)
                del owners[tool_name]
            else:
                owners[tool_name] = provider.name
    return by_name, owners, shared


def build_tool_catalog(
    config: Config,
    plugins: Sequence[Plugin],
    *,
    adapt: ForeignToolAdapter | None = None,
    strict: bool = True,
    runtime_paths: RuntimePaths | None = None,
    mcp: MCPServerPool | None = None,
) -> ToolCatalog:
    """The catalogue of built-in and plugin tools, checked against every agent's `tools:` list.

    Clashes are always errors. An agent naming an unknown tool is an error when `strict`, else
    (some plugin failed to load, and the name may be one of its tools) a warning, and the name is skipped.
    `runtime_paths` and `config` are what registered toolkits asking for them get in their constructor.
    Each enabled server of `config.mcp_servers` is the tool `mcp_<id>`; its tools come from `mcp`, the
    running servers (default: the daemon's, `MCPServerPool.shared()`).
    """
    mcp = mcp if mcp is not None else MCPServerPool.shared()
    problems: list[str] = []
    providers = list(BUILTIN_PROVIDERS)
    shared = {"runtime_paths": runtime_paths, "runtime_config": config}
    for plugin in plugins:
        providers.extend(plugin_providers(plugin, adapt, problems, shared))
    env = runtime_paths.env_values if runtime_paths is not None else {}
    named = named_tools(config, env, {provider.name for provider in providers})
    problems.extend(named.problems)
    providers.extend(toolkit_providers(named.toolkits, config, env, adapt))
    providers.extend(ToolProvider(name, "tool not available here", (), _no_tools) for name in named.absent)
    providers.extend(mcp_providers(config, mcp, {provider.name for provider in providers}, problems))
    by_name, owners, shared_names = _catalog(providers, problems)
    catalog = ToolCatalog(by_name, owners, mcp, named.unavailable, shared_names)
    problems.extend(
        f"agents.{agent_name}.tools: {problem}"
        for agent_name, agent in config.agents.items()
        for problem in catalog.clashes(agent.tools)
    )
    missing = [
        f"agents.{agent_name}.tools: unknown tool {name!r}"
        for agent_name, agent in config.agents.items()
        for name in catalog.unknown(agent.tools)
    ]
    if strict:
        problems.extend(missing)
    else:
        for problem in missing:
            logger.warning("agent names a tool that is not available", problem=problem)
    if problems:
        raise ToolCatalogError(problems)
    for tool in catalog.unavailable:
        logger.warning("agent runs without a tool that cannot run here", **dataclasses.asdict(tool))
    return catalog


def _no_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """A name known here whose tool cannot run: it gives nothing."""
    return ()
