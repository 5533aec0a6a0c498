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
model calls; they are unique across the built-ins and every plugin, and a tool may not be named like a
group or plugin it does not belong to. A clash is a `ToolCatalogError` at startup naming both owners.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from mindroom.constants import RuntimePaths
from mindroom.errors import MindroomError
from mindroom.hooks.decorators import get_hook_metadata
from mindroom.logging_config import get_logger
from mindroom.tool_system.builtin_groups import BUILTIN_PROVIDERS
from mindroom.tool_system.isolation import function_reference, isolation_limits, shared_pool
from mindroom.tool_system.mcp.servers import MCPServerPool, mcp_providers
from mindroom.tool_system.named_tools import UnavailableTool, named_tools
from mindroom.tool_system.providers import ToolProvider
from mindroom.tool_system.registration import ToolRegistration, get_tool_registration, managed_init_kwargs
from mindroom.tool_system.spec import RESERVED_PARAMETERS, AgentToolEnvironment, ToolSpec
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

ForeignToolAdapter = Callable[[Any], Sequence[ToolSpec] | None]
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ToolCatalogError(MindroomError):
    """The tools of the loaded plugins and the config do not fit together (clashes, unknown names)."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("tool catalogue problems:\n" + "\n".join(f"  {problem}" for problem in self.problems))


def _public_values(module: ModuleType) -> list[tuple[str, Any]]:
    exported = getattr(module, "__all__", None)
    names = list(exported) if exported is not None else [name for name in vars(module) if not name.startswith("_")]
    return [(name, getattr(module, name)) for name in names if hasattr(module, name)]


def plugin_tool_specs(plugin: Plugin, adapt: ForeignToolAdapter | None = None) -> tuple[ToolSpec, ...]:
    """The tools in a plugin's `tools_module`.

    The module's public values (those in `__all__` when it defines one, else names not starting with `_`)
    that are plain functions defined in the module itself, other than `@hook` callbacks, are one tool each,
    named after the function and described by its docstring (synchronous ones run in a worker thread,
    those marked `@isolated` in a worker process). Values `adapt` recognises (agno toolkits and
    `Function`s) give their functions. Anything else (classes, imported functions, constants, factories
    marked by `register_tool_with_metadata`) is not a tool here.
    """
    module = plugin.tools_module
    if module is None:
        return ()
    specs: list[ToolSpec] = []
    for _name, value in _public_values(module):
        if get_hook_metadata(value) is not None or get_tool_registration(value) is not None:
            continue
        foreign = adapt(value) if adapt is not None else None
        if foreign is not None:
            specs.extend(foreign)
        elif inspect.isfunction(value) and value.__module__ == module.__name__:
            specs.append(_plugin_function_spec(value))
    return tuple(specs)


def _plugin_function_spec(function: Callable[..., Any]) -> ToolSpec:
    limits = isolation_limits(function)
    if limits is None:
        return ToolSpec(name=function.__name__, function=function, in_thread=not inspect.iscoroutinefunction(function))
    function_reference(function)  # a worker must be able to import it: fail at load time, not at the first call
    return ToolSpec(name=function.__name__, function=function, isolated=True, limits=limits)


def registered_toolkits(plugin: Plugin) -> tuple[ToolRegistration, ...]:
    """The toolkits a plugin's tools module registered with `register_tool_with_metadata`, in module order."""
    module = plugin.tools_module
    if module is None:
        return ()
    found = (get_tool_registration(value) for value in vars(module).values())
    # By identity: a factory bound to two names is one toolkit.
    unique = {id(registration): registration for registration in found if registration is not None}
    return tuple(unique.values())


# The managed constructor values that differ per agent: a toolkit listing one is built once per agent.
_PER_AGENT = frozenset({"agent_name", "tool_output_workspace_root", "agent_state_root", "current_room_id"})


def _toolkit_specs(
    registration: ToolRegistration, adapt: ForeignToolAdapter | None, values: Mapping[str, Any]
) -> tuple[ToolSpec, ...]:
    """Build the registered toolkit with its managed constructor values and turn it into our tools."""
    toolkit_class = registration.factory()
    instance = toolkit_class(**managed_init_kwargs(registration.metadata, values))
    specs = adapt(instance) if adapt is not None else None
    if specs is None:
        msg = f"its factory must return a toolkit class, got {toolkit_class!r}"
        raise TypeError(msg)
    return tuple(specs)


def _toolkit_provider(
    plugin: Plugin,
    registration: ToolRegistration,
    adapt: ForeignToolAdapter | None,
    shared: Mapping[str, Any],
) -> ToolProvider:
    """A provider named by the registration, whose tools are the toolkit's functions."""
    probe = _toolkit_specs(registration, adapt, shared)
    listed = {arg.kwarg for arg in registration.metadata.managed_init_args}

    def build(env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
        """The toolkit's tools for one agent (one shared instance unless it asks for per-agent values)."""
        if not listed & _PER_AGENT:
            return probe
        values = {**shared, "agent_name": env.agent_name, "tool_output_workspace_root": env.workspace}
        try:
            return _toolkit_specs(registration, adapt, values)
        except Exception as exc:  # plugin constructor code: the agent goes without this toolkit
            logger.error(
                "plugin toolkit could not be built for an agent",
                plugin=plugin.name,
                tool=registration.name,
                agent=env.agent_name,
                error=repr(exc),
            )
            return ()

    return ToolProvider(registration.name, "plugin toolkit", tuple(dict.fromkeys(s.name for s in probe)), build)


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
        return [name for name in wanted if name not in self.providers and name not in self.owners]

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


def _parameter_names(spec: ToolSpec) -> set[str]:
    if spec.parameters is not None:
        return set()  # an explicit schema says what the model fills
    try:
        return set(inspect.signature(spec.function).parameters)
    except (TypeError, ValueError):
        return set()


def _plugin_providers(
    plugin: Plugin, adapt: ForeignToolAdapter | None, problems: list[str], shared: Mapping[str, Any]
) -> list[ToolProvider]:
    """The plugin's own provider (functions and toolkit values) and one per registered toolkit."""
    providers: list[ToolProvider] = []
    own = _plugin_provider(plugin, adapt, problems)
    for registration in registered_toolkits(plugin):
        try:
            toolkit = _toolkit_provider(plugin, registration, adapt, shared)
        except Exception as exc:  # plugin code (factory, constructor, functions) may fail in any way
            problems.append(f"plugin {plugin.name!r}: cannot use its tool {registration.name!r}: {exc}")
            continue
        if own is not None and toolkit.name == own.name:
            own = _joined(own, toolkit)  # a toolkit named like its plugin is the plugin's tool set
        else:
            providers.append(toolkit)
    if own is not None:
        providers.insert(0, own)
    return providers


def _joined(own: ToolProvider, toolkit: ToolProvider) -> ToolProvider:
    def build(env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
        """The plugin's own tools, then the toolkit's."""
        return (*own.build(env), *toolkit.build(env))

    return ToolProvider(own.name, own.kind, tuple(dict.fromkeys((*own.tool_names, *toolkit.tool_names))), build)


def _plugin_provider(plugin: Plugin, adapt: ForeignToolAdapter | None, problems: list[str]) -> ToolProvider | None:
    try:
        specs = plugin_tool_specs(plugin, adapt)
    except Exception as exc:  # plugin code (a toolkit's functions) may fail in any way
        problems.append(f"plugin {plugin.name!r}: cannot use its tools: {exc}")
        return None
    seen: set[str] = set()
    for spec in specs:
        reserved = sorted(_parameter_names(spec) & RESERVED_PARAMETERS)
        if reserved:
            problems.append(f"plugin {plugin.name!r}: tool {spec.name!r} has reserved parameter names {reserved}")
        if not _TOOL_NAME.match(spec.name):
            problems.append(f"plugin {plugin.name!r}: tool name {spec.name!r} must be 1-64 of A-Z a-z 0-9 _ -")
        elif spec.name in seen:
            problems.append(f"plugin {plugin.name!r}: defines the tool {spec.name!r} twice")
        seen.add(spec.name)
    return ToolProvider(plugin.name, "plugin", tuple(dict.fromkeys(s.name for s in specs)), lambda _env: specs)


def _catalog(providers: Sequence[ToolProvider], problems: list[str]) -> tuple[dict[str, ToolProvider], dict[str, str]]:
    by_name: dict[str, ToolProvider] = {}
    owners: dict[str, str] = {}
    for provider in providers:
        if provider.name in by_name:
            problems.append(f"{provider.label} has the same name as {by_name[provider.name].label}")
            continue
        by_name[provider.name] = provider
    for provider in by_name.values():
        for tool_name in provider.tool_names:
            owner = owners.get(tool_name)
            if owner is not None and owner != provider.name:
                other = by_name[owner].label
                problems.append(f"tool {tool_name!r} is defined by {provider.label} and by {other}")
                continue
            group = by_name.get(tool_name)
            if group is not None and group is not provider:
                problems.append(f"tool {tool_name!r} of {provider.label} has the name of {group.label}")
                continue
            owners[tool_name] = provider.name
    return by_name, owners


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
        providers.extend(_plugin_providers(plugin, adapt, problems, shared))
    env = runtime_paths.env_values if runtime_paths is not None else {}
    named = named_tools(config, env, {provider.name for provider in providers})
    problems.extend(named.problems)
    providers.extend(toolkit_providers(named.toolkits, config, env, adapt))
    providers.extend(ToolProvider(name, "tool not available here", (), _no_tools) for name in named.absent)
    providers.extend(mcp_providers(config, mcp, {provider.name for provider in providers}, problems))
    by_name, owners = _catalog(providers, problems)
    catalog = ToolCatalog(by_name, owners, mcp, named.unavailable)
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
