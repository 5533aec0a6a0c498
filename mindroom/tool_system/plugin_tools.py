"""A plugin's tools: the functions and toolkit values of its `tools_module`, and the toolkits it registered.

Each plugin gives one provider named after it (its functions, plus a registered toolkit of the same name) and
one per other registered toolkit; what is wrong with them (a reserved parameter, a malformed or repeated name,
a factory or constructor that fails) goes into the caller's problems, named by plugin and tool.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from mindroom.hooks.decorators import get_hook_metadata
from mindroom.logging_config import get_logger
from mindroom.tool_system.isolation import function_reference, isolation_limits
from mindroom.tool_system.providers import ToolProvider
from mindroom.tool_system.registration import ToolRegistration, get_tool_registration, managed_init_kwargs
from mindroom.tool_system.spec import RESERVED_PARAMETERS, AgentToolEnvironment, ToolSpec

if TYPE_CHECKING:
    from mindroom.plugins.loader import Plugin

__all__ = ["ForeignToolAdapter", "plugin_providers", "plugin_tool_specs", "registered_toolkits"]

logger = get_logger(__name__)

ForeignToolAdapter = Callable[[Any], Sequence[ToolSpec] | None]
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


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


def _parameter_names(spec: ToolSpec) -> set[str]:
    if spec.parameters is not None:
        return set()  # an explicit schema says what the model fills
    try:
        return set(inspect.signature(spec.function).parameters)
    except (TypeError, ValueError):
        return set()


def plugin_providers(
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
