"""`mindroom tools list`: every tool an agent can name, and whether it can run here (and if not, the fix)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from mindroom.cli.common import ConfigOption, StorageOption, fail, new_console, read_cli_environment
from mindroom.errors import ConfigError

__all__ = ["ToolRow", "tool_rows", "tools_app", "tools_list"]

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
    """Built-in groups, agno toolkits (available, missing package or missing credential) and configured MCP servers."""
    from mindroom.config.loading import load_config
    from mindroom.tool_system.catalog import BUILTIN_PROVIDERS
    from mindroom.tool_system.toolkit_table import AGNO_TOOLKITS, NOT_OFFERED
    from mindroom.tool_system.toolkits import toolkit_status

    environment = read_cli_environment(config_path, storage_path, config_required=False)
    users: dict[str, list[str]] = {}
    servers: dict[str, str] = {}
    if environment.config_path.is_file():
        config = load_config(environment.config_path, environment.values)
        for agent_name, agent in config.agents.items():
            for name in agent.tools:
                users.setdefault(name, []).append(agent_name)
        servers = {
            f"mcp_{server_id}": f"{server.transport}, {'enabled' if server.enabled else 'disabled'}"
            for server_id, server in config.mcp_servers.items()
        }
    rows = [
        ToolRow(provider.name, "built-in group", "available", ", ".join(provider.tool_names))
        for provider in BUILTIN_PROVIDERS
    ]
    for name, toolkit in sorted(AGNO_TOOLKITS.items()):
        status = toolkit_status(toolkit, environment.values)
        state = status.state.replace("_", " ")
        detail = f"{', '.join(status.missing)}: {status.fix}" if status.missing else toolkit.target
        rows.append(ToolRow(name, "agno toolkit", state, detail))
    rows.extend(ToolRow(name, "mcp server", "configured", detail) for name, detail in sorted(servers.items()))
    rows.extend(ToolRow(name, "agno toolkit", "not offered", reason) for name, reason in sorted(NOT_OFFERED.items()))
    return [ToolRow(**{**asdict(row), "used_by": tuple(users.get(row.name, ()))}) for row in rows]


@tools_app.command("list")
def tools_list(
    config: ConfigOption = None,
    storage_path: StorageOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array instead of a table.")] = False,
) -> None:
    """Every tool an agent can name: available, missing a package (and the install command) or a credential."""
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
