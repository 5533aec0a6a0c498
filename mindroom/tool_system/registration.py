"""`register_tool_with_metadata`: how a plugin of the 2026 API declares a toolkit.

The decorator marks a zero-argument factory that returns a toolkit class (an agno `Toolkit`) and returns
the factory unchanged. The tool catalogue finds marked factories in a plugin's tools module, builds the
toolkit (passing the `managed_init_args` it lists) and offers its functions under the registered `name`.

Both generations' calls work: the 2026 API requires `file_access`; plugins written before it leave it
out. A registration without it is treated as `ToolFileAccess.UNCONFINED`, the assumption that is safe
when nothing is declared (the tool may reach any file), and a warning is logged once per tool name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from mindroom.logging_config import get_logger
from mindroom.tool_system.declarations import (
    ConfigField,
    SetupType,
    ToolCategory,
    ToolExecutionTarget,
    ToolFileAccess,
    ToolManagedInitArg,
    ToolStatus,
)

__all__ = [
    "DEFAULT_FILE_ACCESS",
    "TOOL_REGISTRATION_ATTR",
    "ToolMetadata",
    "ToolRegistration",
    "get_tool_registration",
    "managed_init_kwargs",
    "register_tool_with_metadata",
    "registered_tools",
]

logger = get_logger(__name__)

TOOL_REGISTRATION_ATTR = "__mindroom_tool__"
DEFAULT_FILE_ACCESS = ToolFileAccess.UNCONFINED
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_F = TypeVar("_F", bound=Callable[..., Any])

# The newest registration of each name, for `get_tool_by_name` (a reloaded plugin registers again).
_registry: dict[str, ToolRegistration] = {}
_warned_without_file_access: set[str] = set()


@dataclass(frozen=True, slots=True)
class ToolMetadata:
    """Everything a registration declared; `file_access_declared` is False for a call without `file_access`."""

    name: str
    display_name: str
    description: str
    category: ToolCategory
    file_access: ToolFileAccess
    file_access_declared: bool = True
    status: ToolStatus = ToolStatus.AVAILABLE
    setup_type: SetupType = SetupType.NONE
    default_execution_target: ToolExecutionTarget = ToolExecutionTarget.PRIMARY
    requires_primary_runtime: bool = False
    consumes_workspace_paths: bool = False
    executes_code: bool = False
    requires_room_context: bool = False
    requires_conversation: bool = False
    icon: str | None = None
    icon_color: str | None = None
    config_fields: tuple[ConfigField, ...] = ()
    agent_override_fields: tuple[ConfigField, ...] = ()
    dependencies: tuple[str, ...] = ()
    auth_provider: str | None = None
    oauth_fallback_fields: tuple[str, ...] = ()
    docs_url: str | None = None
    helper_text: str | None = None
    function_names: tuple[str, ...] = ()
    worker_inert_agent_functions: tuple[str, ...] = ()
    managed_init_args: tuple[ToolManagedInitArg, ...] = ()
    supports_toolkit_filters: bool = True


@dataclass(frozen=True, slots=True, eq=False)
class ToolRegistration:
    """A registered toolkit: what it declared, the factory that returns its class, and the defining module."""

    metadata: ToolMetadata
    factory: Callable[[], Any]
    module: str

    @property
    def name(self) -> str:
        """The tool's registered name (what agents list under `tools:`)."""
        return self.metadata.name


def _enum(kind: type[Any], value: Any, what: str) -> Any:
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(member.name for member in kind)
        msg = f"{what} must be a {kind.__name__} ({allowed}), got {value!r}"
        raise ValueError(msg) from None


def _fields(values: Iterable[ConfigField] | None, what: str) -> tuple[ConfigField, ...]:
    fields = tuple(values or ())
    if not all(isinstance(field, ConfigField) for field in fields):
        msg = f"{what} must be ConfigField objects"
        raise TypeError(msg)
    return fields


def register_tool_with_metadata(
    *,
    name: str,
    display_name: str,
    description: str,
    category: ToolCategory | str,
    file_access: ToolFileAccess | str | None = None,
    status: ToolStatus | str = ToolStatus.AVAILABLE,
    setup_type: SetupType | str = SetupType.NONE,
    default_execution_target: ToolExecutionTarget | str = ToolExecutionTarget.PRIMARY,
    requires_primary_runtime: bool = False,
    consumes_workspace_paths: bool = False,
    executes_code: bool = False,
    requires_room_context: bool = False,
    requires_conversation: bool = False,
    icon: str | None = None,
    icon_color: str | None = None,
    config_fields: Iterable[ConfigField] | None = None,
    agent_override_fields: Iterable[ConfigField] | None = None,
    dependencies: Iterable[str] | None = None,
    auth_provider: str | None = None,
    oauth_fallback_fields: Iterable[str] = (),
    docs_url: str | None = None,
    helper_text: str | None = None,
    function_names: Iterable[str] = (),
    worker_inert_agent_functions: Iterable[str] = (),
    managed_init_args: Iterable[ToolManagedInitArg | str] = (),
    supports_toolkit_filters: bool = True,
) -> Callable[[_F], _F]:
    """Register the toolkit a zero-argument factory returns; the factory comes back unchanged.

    `ValueError` for a bad name, an unknown enum value, or `oauth_fallback_fields` without OAuth setup or
    naming no config field. Without `file_access` the tool counts as `UNCONFINED` (logged once).
    """
    if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
        msg = f"tool name {name!r} must be 1-64 of A-Z a-z 0-9 _ -"
        raise ValueError(msg)
    declared = file_access is not None
    fields = _fields(config_fields, "config_fields")
    fallback = tuple(oauth_fallback_fields)
    setup = _enum(SetupType, setup_type, "setup_type")
    if fallback and setup is not SetupType.OAUTH:
        msg = f"tool {name!r}: oauth_fallback_fields needs setup_type=SetupType.OAUTH"
        raise ValueError(msg)
    unknown = sorted(set(fallback) - {field.name for field in fields})
    if unknown:
        msg = f"tool {name!r}: oauth_fallback_fields {unknown} are not config_fields"
        raise ValueError(msg)
    metadata = ToolMetadata(
        name=name,
        display_name=display_name,
        description=description,
        category=_enum(ToolCategory, category, "category"),
        file_access=_enum(ToolFileAccess, file_access, "file_access") if declared else DEFAULT_FILE_ACCESS,
        file_access_declared=declared,
        status=_enum(ToolStatus, status, "status"),
        setup_type=setup,
        default_execution_target=_enum(ToolExecutionTarget, default_execution_target, "default_execution_target"),
        requires_primary_runtime=requires_primary_runtime,
        consumes_workspace_paths=consumes_workspace_paths,
        executes_code=executes_code,
        requires_room_context=requires_room_context,
        requires_conversation=requires_conversation,
        icon=icon,
        icon_color=icon_color,
        config_fields=fields,
        agent_override_fields=_fields(agent_override_fields, "agent_override_fields"),
        dependencies=tuple(dependencies or ()),
        auth_provider=auth_provider,
        oauth_fallback_fields=fallback,
        docs_url=docs_url,
        helper_text=helper_text,
        function_names=tuple(function_names),
        worker_inert_agent_functions=tuple(worker_inert_agent_functions),
        managed_init_args=tuple(_enum(ToolManagedInitArg, arg, "managed_init_args") for arg in managed_init_args),
        supports_toolkit_filters=supports_toolkit_filters,
    )

    def decorate(factory: _F) -> _F:
        """Mark `factory` and record the registration; hand the factory back unchanged."""
        if not callable(factory):
            msg = f"register_tool_with_metadata decorates a factory function, got {factory!r}"
            raise TypeError(msg)
        registration = ToolRegistration(metadata, factory, getattr(factory, "__module__", "") or "")
        setattr(factory, TOOL_REGISTRATION_ATTR, registration)
        _registry[name] = registration
        if not declared and name not in _warned_without_file_access:
            _warned_without_file_access.add(name)
            logger.warning(
                "tool registered without file_access; it is treated as unconfined",
                tool=name,
                file_access=DEFAULT_FILE_ACCESS.value,
            )
        return factory

    return decorate


def get_tool_registration(value: object) -> ToolRegistration | None:
    """The registration `register_tool_with_metadata` put on a factory, or None."""
    try:
        registration = getattr(value, TOOL_REGISTRATION_ATTR, None)
    except Exception:  # a plugin's object whose attribute lookup raises is no registered factory
        return None
    return registration if isinstance(registration, ToolRegistration) else None


def registered_tools() -> Mapping[str, ToolRegistration]:
    """Every tool registered in this process, newest registration per name."""
    return dict(_registry)


def managed_init_kwargs(metadata: ToolMetadata, values: Mapping[str, Any]) -> dict[str, Any]:
    """The constructor keywords for the `managed_init_args` a tool listed, from `values` (missing ones: None).

    Only the listed ones are passed; `file_access` defaults to the tool's declared access.
    """
    kwargs: dict[str, Any] = {}
    for arg in metadata.managed_init_args:
        if arg is ToolManagedInitArg.FILE_ACCESS:
            kwargs[arg.kwarg] = values.get(arg.kwarg, metadata.file_access)
        elif arg is ToolManagedInitArg.SHARED_DIRECTORY_ROOTS:
            kwargs[arg.kwarg] = values.get(arg.kwarg, ())
        else:
            kwargs[arg.kwarg] = values.get(arg.kwarg)
    return kwargs
