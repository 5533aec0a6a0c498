"""`mindroom tools list` and `mindroom tools install`: every tool name an agent can use, whether it can run
here (and if not, the fix), and installing the packages of the ones that miss them."""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from mindroom.cli.common import ConfigOption, StorageOption, fail, new_console, read_cli_environment
from mindroom.errors import ConfigError

if TYPE_CHECKING:
    from mindroom.config.oauth import OAuthProviderConfig
    from mindroom.oauth.providers import ProviderState

__all__ = ["ToolRow", "install_plan", "tool_rows", "tools_app", "tools_install", "tools_list"]

tools_app = typer.Typer(no_args_is_help=True, help="The tools agents can use.")


@dataclass(frozen=True, slots=True)
class ToolRow:
    """One line of `mindroom tools list`."""

    name: str
    kind: str
    status: str
    detail: str = ""
    used_by: tuple[str, ...] = ()


def tool_rows(config_path: Path | None, storage_path: Path | None) -> list[ToolRow]:
    """Every name an agent can use: built-in groups, agno toolkits (available, missing a package or a
    credential), MindRoom's tools that come later or are not offered, and the configured MCP servers."""
    from mindroom.config.loading import load_config
    from mindroom.tool_system.builtin.groups import missing_needs
    from mindroom.tool_system.builtin_groups import BUILTIN_PROVIDERS
    from mindroom.tool_system.named_tools import later_fix, later_reason
    from mindroom.tool_system.tool_names import LATER, NOT_OFFERED
    from mindroom.tool_system.toolkit_connections import connection_state
    from mindroom.tool_system.toolkit_table import AGNO_TOOLKITS
    from mindroom.tool_system.toolkits import credential_fix, toolkit_status

    environment = read_cli_environment(config_path, storage_path, config_required=False)
    users: dict[str, list[str]] = {}
    settings: dict[str, list[dict[str, object]]] = {}
    servers: dict[str, str] = {}
    oauth_entries: dict[str, OAuthProviderConfig] = {}
    if environment.config_path.is_file():
        config = load_config(environment.config_path, environment.values)
        oauth_entries = dict(config.oauth_providers)
        for agent_name, agent in config.agents.items():
            for entry in agent.tool_entries():
                users.setdefault(entry.name, []).append(agent_name)
                settings.setdefault(entry.name, []).append(dict(entry.overrides))
        servers = {
            f"mcp_{server_id}": f"{server.transport}, {'enabled' if server.enabled else 'disabled'}"
            for server_id, server in config.mcp_servers.items()
        }
    providers = _provider_states(oauth_entries, environment.values, environment.config_path.parent)
    groups = {provider.name for provider in BUILTIN_PROVIDERS}
    rows = []
    for provider in BUILTIN_PROVIDERS:
        entries = settings.get(provider.name) or [{}]  # a URL set in an agent's tool entry counts as set
        needed = min((missing_needs(provider.name, entry, environment.values) for entry in entries), key=len)
        state = "missing credential" if needed else "available"
        detail = f"{', '.join(needed)}: {credential_fix(needed)}" if needed else ", ".join(provider.tool_names)
        rows.append(ToolRow(provider.name, "built-in group", state, detail))
    for name, toolkit in sorted(AGNO_TOOLKITS.items()):
        status = toolkit_status(toolkit, environment.values)
        state = status.state.replace("_", " ")
        detail = f"{', '.join(status.missing)}: {status.fix}" if status.missing else toolkit.target
        if toolkit.connection is not None and status.available:
            state, detail = connection_state(toolkit, environment.values, providers)
        rows.append(ToolRow(name, "agno toolkit", state, detail))
    rows.extend(
        ToolRow(name, "catalogue name", later_reason(name), later_fix(name))
        for name in sorted(LATER)
        if name not in groups
    )
    rows.extend(ToolRow(name, "mcp server", "configured", detail) for name, detail in sorted(servers.items()))
    rows.extend(ToolRow(name, "catalogue name", "not offered", reason) for name, reason in sorted(NOT_OFFERED.items()))
    return [ToolRow(**{**asdict(row), "used_by": tuple(users.get(row.name, ()))}) for row in rows]


def _provider_states(
    entries: Mapping[str, OAuthProviderConfig], env: Mapping[str, str], config_dir: Path
) -> dict[str, ProviderState]:
    from mindroom.oauth.errors import OAuthError
    from mindroom.oauth.providers import ProviderState, provider_states

    try:
        return provider_states(entries, env, config_dir)
    except OAuthError as error:  # unreadable seeds: every provider is then unusable, and says why
        return {name: ProviderState(name, name, None, str(error)) for name in entries}


@tools_app.command("list")
def tools_list(
    config: ConfigOption = None,
    storage_path: StorageOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array instead of a table.")] = False,
) -> None:
    """Every tool name an agent can use: available, or what it misses and the command or variable that fixes it."""
    try:
        rows = tool_rows(config, storage_path)
    except ConfigError as exc:
        fail(str(exc))
        return
    if as_json:
        typer.echo(json.dumps([asdict(row) for row in rows], indent=2))
        return
    table = Table("tool", "kind", "status", "used by", "details")
    styles = {"available": "green", "configured": "green", "not offered": "dim"}
    for row in rows:
        style = styles.get(row.status, "yellow")
        table.add_row(row.name, row.kind, f"[{style}]{row.status}[/]", ", ".join(row.used_by), escape(row.detail))
    new_console().print(table)


def install_plan(names: list[str]) -> tuple[tuple[str, ...], list[str], list[str]]:
    """For `tools install`: the requirements to install, a note per name with nothing to install, and the
    names refused (unknown, not offered, or coming later), each with the reason."""
    from mindroom.tool_system.builtin_groups import BUILTIN_PROVIDERS
    from mindroom.tool_system.named_tools import later_reason
    from mindroom.tool_system.tool_names import LATER, NOT_OFFERED
    from mindroom.tool_system.tool_packages import tool_requirements
    from mindroom.tool_system.toolkit_table import AGNO_TOOLKITS
    from mindroom.tool_system.toolkits import toolkit_status

    groups = {provider.name for provider in BUILTIN_PROVIDERS}
    requirements: dict[str, None] = {}
    notes: list[str] = []
    refused: list[str] = []
    for name in dict.fromkeys(names):
        toolkit = AGNO_TOOLKITS.get(name)
        if name in groups:
            notes.append(f"{name}: built in, nothing to install")
        elif toolkit is not None and toolkit_status(toolkit, {}).state == "missing_package":
            requirements.update(dict.fromkeys(tool_requirements(toolkit)))
        elif toolkit is not None:
            have = "its packages are installed already" if toolkit.packages else "nothing to install"
            notes.append(f"{name}: {have}")
        elif name in LATER:
            refused.append(f"{name}: nothing to install, it {later_reason(name)}")
        elif name in NOT_OFFERED:
            refused.append(f"{name}: not offered here: {NOT_OFFERED[name]}")
        else:
            refused.append(f"{name}: unknown tool (`mindroom tools list` shows every name)")
    return tuple(requirements), notes, refused


@tools_app.command("install")
def tools_install(
    names: Annotated[list[str], typer.Argument(help="Tool names, as agents' tools: lists name them.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the pip command without running it.")] = False,
) -> None:
    """Install the packages of each named tool's extra into the environment mindroom runs in (with pip)."""
    from mindroom.tool_system.tool_packages import install_command

    requirements, notes, refused = install_plan(names)
    if refused:
        fail("nothing installed:\n" + "\n".join(f"  {line}" for line in refused))
        return
    for note in notes:
        typer.echo(note)
    if not requirements:
        return
    command = install_command(requirements)
    typer.echo(f"{'would run' if dry_run else 'running'}: {shlex.join(command)}")
    if dry_run:
        return
    finished = subprocess.run(command, check=False)  # pip of this interpreter, with the table's packages
    if finished.returncode != 0:
        fail(f"pip failed (exit status {finished.returncode}); nothing else was changed", finished.returncode)
        return
    typer.echo("installed; agents get these tools at the daemon's next reload (!reload-plugins) or restart")
