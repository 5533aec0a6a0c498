"""What the names in the agents' `tools:` lists that are MindRoom's catalogue names come to here.

A missing package or credential never keeps the daemon down: an agno toolkit that cannot run here, and a
tool that comes with a capability still to come (`tool_names.LATER`), leave the agent without that tool
while it runs with its others. Each is an `UnavailableTool` naming the agent, the tool, what is missing and
the fix (the start log, `mindroom doctor`, `mindroom tools list` and the dashboard show them). A name this
daemon does not offer (`tool_names.NOT_OFFERED`) and a setting a toolkit does not take are config errors.

Availability is read afresh at each build (start and reload), so a package installed meanwhile
(`mindroom tools install`) is found by the next reload without a restart.
"""

from __future__ import annotations

import importlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from mindroom.config.main import Config
from mindroom.tool_system.builtin.groups import missing_needs
from mindroom.tool_system.tool_names import LATER, NOT_OFFERED
from mindroom.tool_system.toolkit_table import AGNO_TOOLKITS, AgnoToolkit
from mindroom.tool_system.toolkits import ToolkitStatus, check_toolkit_settings, credential_fix, toolkit_status

__all__ = ["NamedTools", "UnavailableTool", "later_fix", "later_reason", "named_tools"]


@dataclass(frozen=True, slots=True)
class UnavailableTool:
    """A tool an agent names that cannot run here: the agent runs without it until the fix is applied."""

    agent: str
    tool: str
    reason: str
    fix: str

    def describe(self) -> str:
        """One line naming the agent's key, the tool and what is missing."""
        return f"agents.{self.agent}.tools: {self.tool!r} cannot run here ({self.reason}); the agent runs without it"


@dataclass(frozen=True, slots=True)
class NamedTools:
    """The catalogue names the agents use: toolkits to build, names known but without tools here, and why."""

    toolkits: Mapping[str, AgnoToolkit] = field(default_factory=dict)
    absent: tuple[str, ...] = ()
    unavailable: tuple[UnavailableTool, ...] = ()
    problems: tuple[str, ...] = ()


def later_reason(name: str) -> str:
    """Why a tool that comes later gives nothing yet, e.g. `comes with threads`."""
    return f"comes with {LATER[name].capability}"


def later_fix(name: str) -> str:
    """What to do about a tool that comes later: what does its work meanwhile, if anything."""
    meanwhile = LATER[name].meanwhile
    return f"meanwhile: {meanwhile}" if meanwhile else "nothing meanwhile"


def named_tools(config: Config, env: Mapping[str, str], taken: Collection[str]) -> NamedTools:
    """Sort every agent's catalogue names (other than those in `taken`: groups and plugins) into what runs."""
    importlib.invalidate_caches()  # a package installed since the last build is found now
    statuses: dict[str, ToolkitStatus] = {}
    toolkits: dict[str, AgnoToolkit] = {}
    absent: dict[str, None] = {}
    unavailable: list[UnavailableTool] = []
    problems: list[str] = []
    for agent_name, agent in config.agents.items():
        for entry in agent.tool_entries():
            name = entry.name
            needed = missing_needs(name, entry.overrides, env)
            if needed:  # a built-in group missing a credential: this agent runs without it, as without a toolkit
                reason = f"missing credential {', '.join(needed)}"
                unavailable.append(UnavailableTool(agent_name, name, reason, credential_fix(needed)))
                continue
            if name in taken:
                continue
            toolkit = AGNO_TOOLKITS.get(name)
            if toolkit is not None:
                where = f"agents.{agent_name}.tools: {name!r}"
                problems.extend(f"{where}: {problem}" for problem in check_toolkit_settings(toolkit, entry.overrides))
                status = statuses.get(name) or statuses.setdefault(name, toolkit_status(toolkit, env))
                if status.available:
                    toolkits[name] = toolkit
                    continue
                unavailable.append(UnavailableTool(agent_name, name, status.reason, status.fix))
            elif name in LATER:
                unavailable.append(UnavailableTool(agent_name, name, later_reason(name), later_fix(name)))
            elif name in NOT_OFFERED:
                problems.append(f"agents.{agent_name}.tools: {name!r} is not offered here: {NOT_OFFERED[name]}")
            else:
                continue
            absent[name] = None  # known: the catalogue does not also call it unknown
    return NamedTools(toolkits, tuple(absent), tuple(unavailable), tuple(problems))
