"""What `mindroom run` checks of a config before it starts the bots, in one place: `check_start`.

The `live state` phase of a start, `mindroom config validate` and `mindroom doctor` all call it, so they say the
same thing in the same words. An error refuses the start (`mindroom run` and `validate` exit 2, `doctor` fails
the line): the config does not load, its state cannot be used here (a database URL that is not PostgreSQL's, the
driver missing), an agent names a tool that does not exist or a setting a toolkit does not take, plugin tools
clash, a skill folder is malformed. A warning lets the daemon start without what it names:
a config key accepted and not used here (`Config.notices`), a tool whose package or credential is missing, a
plugin that does not load (and the tool names that may have been its), the offline model.

Each finding names the key path (with its line in the file where one is known) and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from mindroom.config.chat_settable import parse_key_path
from mindroom.config.loading import load_config, read_config_text
from mindroom.config.main import Config
from mindroom.config.project_extras import install_extra_command
from mindroom.config.providers import PROVIDER_ENV_VARS, detect_provider
from mindroom.constants import RuntimePaths
from mindroom.daemon.live import LiveBuild, build_live_state
from mindroom.errors import ConfigError
from mindroom.plugins.skills import SkillError
from mindroom.state.errors import StateError
from mindroom.state.location import is_postgres_url, open_state_backend
from mindroom.tool_system.catalog import ToolCatalogError

__all__ = ["CONFIG_FIX", "Finding", "StartCheck", "check_start", "state_problem"]

CONFIG_FIX = "fix the file (see docs/configuration.md)"
"""The fix of a problem the loader names (its own words carry no fix: `mindroom run` prints them as they are)."""
_TOOL_FIX = "name a tool `mindroom tools list` shows (or a tool of a configured plugin), or remove it"
_SETTING_FIX = "fix or remove the setting the line names (`mindroom tools list` names each toolkit)"
_PLUGIN_TOOLS_FIX = "fix the plugin's tools or remove the plugin from `plugins:`"
_SKILL_FIX = "fix the skill folder or remove it"

_KeyPath = tuple[str | int, ...]
_QUOTED = re.compile(r"'([^']+)'")


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing the start check found: where (a key path, with its line when known), what, and the fix.

    `topic` says which part of the daemon it concerns: `config`, `notice`, `tools`, `plugins` or `models`.
    """

    text: str
    fix: str = ""
    topic: str = "config"

    def __str__(self) -> str:
        return f"{self.text} — fix: {self.fix}" if self.fix else self.text


@dataclass(frozen=True, slots=True)
class StartCheck:
    """The outcome: the config (None when it does not load), what refuses the start, what only warns, and the
    live state built (None when an error refused it)."""

    config_path: Path
    config: Config | None
    errors: tuple[Finding, ...] = ()
    warnings: tuple[Finding, ...] = ()
    build: LiveBuild | None = None

    def error(self) -> ConfigError:
        """The refusal as the one error `mindroom run` and `mindroom config validate` both report."""
        return ConfigError(self.config_path, [str(finding) for finding in self.errors])


def check_start(runtime_paths: RuntimePaths) -> StartCheck:
    """Build what a start builds (config, plugins, tools, skills, hooks) and say what refuses or warns."""
    path = runtime_paths.config_path
    try:
        config = load_config(path, runtime_paths.env_values, strict=False)
    except ConfigError as exc:
        return StartCheck(path, None, tuple(Finding(problem) for problem in exc.problems))
    refused = [found for found in (state_problem(runtime_paths, config),) if found is not None]
    warnings = [Finding(str(item), topic="notice") for item in config.notices]
    warnings.extend(_model_warnings(config, runtime_paths.env_values))
    try:
        build = build_live_state(runtime_paths, previous=None)
    except ToolCatalogError as exc:
        places = _places(path)
        refused.extend(
            Finding(_with_line(problem, places), _tool_problem_fix(problem), "tools") for problem in exc.problems
        )
        return StartCheck(path, config, tuple(refused), tuple(warnings))
    except SkillError as exc:
        refused.append(Finding(str(exc), _SKILL_FIX, "tools"))
        return StartCheck(path, config, tuple(refused), tuple(warnings))
    except ConfigError as exc:  # the environment changed between the two reads
        return StartCheck(path, None, tuple(Finding(problem) for problem in exc.problems))
    warnings.extend(_build_warnings(build))
    if refused:
        return StartCheck(path, build.live.config, tuple(refused), tuple(warnings))
    return StartCheck(path, build.live.config, (), tuple(warnings), build)


def state_problem(runtime_paths: RuntimePaths, config: Config) -> Finding | None:
    """Why the state named by `MINDROOM_DATABASE_URL` or `storage.database_url` cannot be used here (a URL that is
    not PostgreSQL's, the driver missing), or None; `mindroom run` refuses it before taking the state's lock."""
    from_env = runtime_paths.env_values.get("MINDROOM_DATABASE_URL")
    key = "MINDROOM_DATABASE_URL" if from_env else "storage.database_url"
    try:
        open_state_backend(runtime_paths.storage_root, from_env or config.storage.database_url)
    except StateError as exc:
        fix = (
            f"set {key} to a postgresql:// URL, or unset it for SQLite"
            if not is_postgres_url(from_env or config.storage.database_url)
            else install_extra_command("postgres")
        )
        return Finding(f"{key}: {exc}", fix, "state")
    return None


def _build_warnings(build: LiveBuild) -> list[Finding]:
    live = build.live
    found = [
        Finding(
            f"plugin {error.plugin!r} ({error.path}): {error.cause}; the daemon runs without it",
            f"fix {error.path} or remove it from the config",
            "plugins",
        )
        for error in build.plugin_errors
    ]
    found.extend(Finding(tool.describe(), tool.fix, "tools") for tool in live.tools.unavailable)
    if build.plugin_errors:  # the names were tolerated: they may be tools of a plugin that did not load
        found.extend(
            Finding(
                f"agents.{agent_name}.tools: unknown tool {name!r}; the agent runs without it",
                "it may be a tool of a plugin that did not load: fix that plugin, or name a tool `mindroom tools list`"
                " shows",
                "tools",
            )
            for agent_name, agent in live.config.agents.items()
            for name in live.tools.unknown(agent.tools)
        )
    return found


def _model_warnings(config: Config, env: Mapping[str, str]) -> list[Finding]:
    choice = detect_provider(env)
    found = [
        Finding(f"{var} is set but its model package {package} is missing", f"pip install {package}", "models")
        for var, package in choice.skipped
    ]
    used = {entity.model for entity in config.responders().values()}
    offline = sorted(name for name in used if name in config.models and config.models[name].provider == "offline")
    if offline:
        found.append(
            Finding(
                f"models.{offline[0]}: agents use the offline model (it repeats what they are told)",
                "set one of " + ", ".join(PROVIDER_ENV_VARS) + " for a real model",
                "models",
            )
        )
    return found


def _tool_problem_fix(problem: str) -> str:
    if ": unknown tool " in problem or "is not offered here" in problem:
        return _TOOL_FIX
    if problem.startswith("agents."):
        return _SETTING_FIX
    return _PLUGIN_TOOLS_FIX


def _with_line(problem: str, places: _Places) -> str:
    """`agents.a.tools: unknown tool 'x'` -> `agents.a.tools[2] (line 7): unknown tool 'x'`: the list item that
    names the tool where the file has one, else the key's own line."""
    key, sep, rest = problem.partition(": ")
    if not sep:
        return problem
    try:
        path = parse_key_path(key)
    except ValueError:
        return problem
    quoted = _QUOTED.search(rest)
    if quoted is not None:
        for position in range(places.items.get(path, 0)):
            item = (*path, position)
            if places.names.get(item) == quoted.group(1):
                return f"{key}[{position}] (line {places.lines[item]}): {rest}"
    line = places.lines.get(path)
    return f"{key} (line {line}): {rest}" if line else problem


@dataclass(frozen=True, slots=True)
class _Places:
    """Where each key path of the file is: its line, how many items a list has, and the name an item gives."""

    lines: dict[_KeyPath, int] = field(default_factory=dict)
    items: dict[_KeyPath, int] = field(default_factory=dict)
    names: dict[_KeyPath, str] = field(default_factory=dict)


def _places(path: Path) -> _Places:
    """The places of the file's keys (it loaded once already, so it is within the loader's limits)."""
    places = _Places()
    try:
        root = yaml.compose(read_config_text(path), Loader=yaml.SafeLoader)
    except (ConfigError, yaml.YAMLError):
        return places
    _index(root, (), places)
    return places


def _index(node: yaml.Node | None, where: _KeyPath, places: _Places) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                key = (*where, key_node.value)
                places.lines[key] = key_node.start_mark.line + 1
                _index(value_node, key, places)
    elif isinstance(node, yaml.SequenceNode):
        items: Sequence[yaml.Node] = node.value
        places.items[where] = len(items)
        for position, item in enumerate(items):
            places.lines[(*where, position)] = item.start_mark.line + 1
            named = item.value[0][0] if isinstance(item, yaml.MappingNode) and item.value else item
            if isinstance(named, yaml.ScalarNode):  # a tool's name, or the one key of `- name: {settings}`
                places.names[(*where, position)] = named.value
            _index(item, (*where, position), places)
