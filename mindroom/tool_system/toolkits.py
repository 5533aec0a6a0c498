"""agno toolkits by catalogue name: whether each can run here, its settings, and its provider in the catalogue.

Nothing here imports a toolkit. Availability is decided from what is installed (`importlib.util.find_spec`)
and what the environment holds (each required credential, or its `<VAR>_FILE`). A toolkit's settings are
the keyword arguments of its class's constructor, read from agno's source with `ast`, so a typo or a value
of the wrong type is a config error at load, before anything is imported (importing the class would cost the
daemon's start agno's tool base, about 0.2 s, and the toolkit's own packages; the reading leans on the layout
of agno's source instead, and `tests/tool_system/test_agno_contract.py` checks it gives what
`inspect.signature` gives for every toolkit installed). Credentials are never settings:
they come from the environment only, so no config edit and no chat message can set one.

The provider a toolkit gets in the catalogue builds it for one agent (`ToolkitRef`, handed to the adapter
`mindroom.ai.toolkit_specs` provides) when that agent's tools are first built.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mindroom.config.environment import secret_value
from mindroom.config.main import Config
from mindroom.logging_config import get_logger, register_secret_values
from mindroom.tool_system.providers import ToolProvider
from mindroom.tool_system.spec import AgentToolEnvironment, ToolSpec
from mindroom.tool_system.tool_packages import install_fix
from mindroom.tool_system.toolkit_table import AgnoToolkit, ToolkitConnection

__all__ = [
    "DEFAULT_TOOLKIT_TIMEOUT_S",
    "FILTER_KEYS",
    "ToolkitRef",
    "ToolkitState",
    "ToolkitStatus",
    "check_toolkit_settings",
    "credential_fix",
    "toolkit_build",
    "toolkit_parameters",
    "toolkit_providers",
    "toolkit_status",
]

logger = get_logger(__name__)

DEFAULT_TOOLKIT_TIMEOUT_S = 120.0
FILTER_KEYS = frozenset({"include_tools", "exclude_tools"})
ToolkitState = Literal["available", "missing_package", "missing_credential"]
_KINDS = {"bool": "boolean", "int": "number", "float": "number", "str": "text"}


@dataclass(frozen=True, slots=True)
class ToolkitStatus:
    """Whether a toolkit can run here; when not, what is missing and the fix."""

    name: str
    state: ToolkitState
    missing: tuple[str, ...] = ()
    fix: str = ""

    @property
    def available(self) -> bool:
        """True when every package is installed and every required credential set."""
        return self.state == "available"

    @property
    def reason(self) -> str:
        """What is missing, e.g. `missing package wikipedia` (empty when available)."""
        return f"{self.state.replace('_', ' ')} {', '.join(self.missing)}" if self.missing else ""


@dataclass(frozen=True, slots=True)
class ToolkitRef:
    """One toolkit to build for one agent: the class, its constructor arguments and the functions to keep."""

    toolkit: AgnoToolkit
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    timeout_s: float = DEFAULT_TOOLKIT_TIMEOUT_S
    connection: ToolkitConnection | None = None
    """Set when each call acts with the requester's connection (the operator set no credential of their own)."""


def _installed(module: str) -> bool:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return False
    # A folder that merely has the module's name (a namespace package, `docker/` beside a config) is not it.
    return spec is not None and spec.origin not in (None, "namespace")


def toolkit_status(toolkit: AgnoToolkit, env: Mapping[str, str]) -> ToolkitStatus:
    """Whether `toolkit` can run with what is installed and what `env` holds."""
    absent = tuple(package.pip for package in toolkit.packages if not _installed(package.module))
    if absent or not _installed("agno"):
        return ToolkitStatus(toolkit.name, "missing_package", absent or ("agno",), install_fix(toolkit))
    # A person's connection stands in for the operator's credential it replaces.
    replaced = toolkit.connection.operator if toolkit.connection is not None else None
    unset = tuple(
        credential.env
        for credential in toolkit.credentials
        if credential.required and credential.kwarg != replaced and secret_value(env, credential.env) is None
    )
    if unset:
        return ToolkitStatus(toolkit.name, "missing_credential", unset, credential_fix(unset))
    return ToolkitStatus(toolkit.name, "available")


def credential_fix(names: Sequence[str]) -> str:
    """Set each variable (or the file its `<VAR>_FILE` names) in the daemon's environment."""
    ways = (name if name.endswith("_FILE") else f"{name} (or {name}_FILE)" for name in names)
    return "set " + " and ".join(ways) + " in the daemon's environment"


# -- settings: the constructor's keyword arguments, from agno's source --------------------------------------------


def _agno_tools_dir() -> Path | None:
    try:
        spec = importlib.util.find_spec("agno")  # the top-level package: found without being imported
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) / "tools" if locations else None


def _source(module: str) -> ast.Module | None:
    root = _agno_tools_dir()
    if root is None:
        return None
    relative = Path(*module.split("."))
    for candidate in (root / relative.with_suffix(".py"), root / relative / "__init__.py"):
        if candidate.is_file():
            return ast.parse(candidate.read_text(encoding="utf-8"))
    return None


def _kind(annotation: ast.expr | None) -> str:
    if annotation is None:
        return "any"
    text = ast.unparse(annotation).replace("Optional[", "").replace("typing.", "")
    parts = {part.strip(" ]") for part in text.replace("|", ",").replace("Union[", "").split(",")} - {"None"}
    if len(parts) == 1:
        part = parts.pop()
        if part.lower().startswith("list[") and part[5:].strip("[] ") == "str":
            return "string[]"
        return _KINDS.get(part, "any")
    return "number" if parts <= {"int", "float"} else "any"


def _class_parameters(module: str, class_name: str, depth: int = 0) -> dict[str, str] | None:
    tree = _source(module)
    if tree is None or depth > 3:
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            init = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
            if init is None:
                return {}
            arguments = [*init.args.args[1:], *init.args.kwonlyargs]
            return {argument.arg: _kind(argument.annotation) for argument in arguments}
    for node in tree.body:  # the class is re-exported from another agno module
        if isinstance(node, ast.ImportFrom) and any(alias.name == class_name for alias in node.names):
            source = (node.module or "").removeprefix("agno.tools.").removeprefix("agno.tools")
            if (node.module or "").startswith("agno.tools") and source:
                return _class_parameters(source, class_name, depth + 1)
    return None


@functools.cache
def toolkit_parameters(toolkit: AgnoToolkit) -> Mapping[str, str] | None:
    """The toolkit constructor's keyword arguments and their kinds (None when agno's source is not found)."""
    return _class_parameters(toolkit.module, toolkit.class_name)


def _fits(kind: str, value: Any) -> bool:
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "text":
        return isinstance(value, str)
    if kind == "string[]":
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    return True


_KIND_NAMES = {"boolean": "true or false", "number": "a number", "text": "a string", "string[]": "a list of strings"}


def _kind_problem(kind: str, value: Any) -> str | None:
    if value is None or _fits(kind, value):
        return None
    return f"must be {_KIND_NAMES[kind]}"


def check_toolkit_settings(toolkit: AgnoToolkit, overrides: Mapping[str, Any]) -> list[str]:
    """What is wrong with an agent's inline settings for `toolkit` (empty when nothing is)."""
    problems: list[str] = []
    parameters = toolkit_parameters(toolkit) or {}
    secrets = {credential.kwarg: credential.env for credential in toolkit.credentials}
    allowed = sorted(set(parameters) - set(secrets) - set(toolkit.workspace_args) | FILTER_KEYS)
    for key, value in overrides.items():
        if key in FILTER_KEYS:
            problem = _kind_problem("string[]", value)
        elif key in secrets:
            problem = f"is a credential: {credential_fix([secrets[key]])} instead"
        elif key in toolkit.workspace_args:
            problem = "is set by the daemon (the agent's workspace)"
        elif key not in parameters:
            problem = f"is not a setting of this tool (allowed: {', '.join(allowed)})"
        else:
            problem = _kind_problem(parameters[key], value)
        if problem is not None:
            problems.append(f"setting {key!r} {problem}")
    return problems


def _credentials(toolkit: AgnoToolkit, env: Mapping[str, str]) -> dict[str, str]:
    values = {credential.kwarg: secret_value(env, credential.env) for credential in toolkit.credentials}
    found = {kwarg: value for kwarg, value in values.items() if value is not None}
    register_secret_values(found.values())  # never in a log line, an error the model reads or a room
    return found


def toolkit_build(
    toolkit: AgnoToolkit,
    config: Config,
    env: Mapping[str, str],
    adapt: Callable[[Any], Sequence[ToolSpec] | None] | None,
) -> Callable[[AgentToolEnvironment], tuple[ToolSpec, ...]]:
    """The catalogue provider's builder: the toolkit with the agent's settings, credentials and workspace."""

    def build(agent_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
        """This agent's instance of the toolkit as our tools (none when it cannot be built)."""
        if adapt is None:
            return ()
        agent = config.agents.get(agent_env.agent_name)
        entry = next((e for e in agent.tool_entries() if e.name == toolkit.name), None) if agent else None
        overrides = dict(entry.overrides) if entry is not None else {}
        include = overrides.pop("include_tools", None)
        exclude = overrides.pop("exclude_tools", None) or ()
        kwargs: dict[str, Any] = {**overrides, **_credentials(toolkit, env)}
        # As in MindRoom, the operator's own credential wins: then nobody's connection is asked for.
        connection = toolkit.connection
        if connection is not None and kwargs.get(connection.operator):
            connection = None
        if toolkit.workspace_args:
            agent_env.workspace.mkdir(parents=True, exist_ok=True, mode=0o700)
        kwargs.update(dict.fromkeys(toolkit.workspace_args, str(agent_env.workspace)))
        chosen = None if include is None else tuple(include)
        ref = ToolkitRef(toolkit, kwargs, chosen, tuple(exclude), connection=connection)
        try:
            return tuple(adapt(ref) or ())
        except Exception as exc:  # the toolkit's constructor (third-party code): the agent goes without it
            logger.error(
                "toolkit could not be built for an agent", tool=toolkit.name, agent=agent_env.agent_name, error=str(exc)
            )
            return ()

    return build


def toolkit_providers(
    toolkits: Mapping[str, AgnoToolkit],
    config: Config,
    env: Mapping[str, str],
    adapt: Callable[[Any], Sequence[ToolSpec] | None] | None,
) -> list[ToolProvider]:
    """A catalogue provider for each agno toolkit that agents name and that can run here."""
    return [
        ToolProvider(name, "agno toolkit", (), toolkit_build(toolkit, config, env, adapt), dynamic=True)
        for name, toolkit in toolkits.items()
    ]
