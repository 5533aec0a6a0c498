"""`mindroom usage`: what turns spent, from the state of a data directory (or its database), as a table or JSON."""

from __future__ import annotations

import json
import time
from typing import Annotated

import typer
from rich.table import Table

from mindroom.cli.common import ConfigOption, StorageOption, fail, locate, new_console

__all__ = ["usage"]

_GROUPS = "requester, agent, room_id, thread_id, model, day"


def usage(
    config: ConfigOption = None,
    storage_path: StorageOption = None,
    period: Annotated[str, typer.Option(help="today, month, 7d, 30d, all, YYYY-MM or YYYY-MM-DD (UTC).")] = "month",
    person: Annotated[str | None, typer.Option(help="Only this person's turns (a Matrix user id).")] = None,
    agent: Annotated[str | None, typer.Option(help="Only this agent's or team's turns.")] = None,
    room: Annotated[str | None, typer.Option(help="Only turns in this room (its id).")] = None,
    model: Annotated[str | None, typer.Option(help="Only turns on this model (its key in models:).")] = None,
    by: Annotated[str, typer.Option(help=f"Sum by these, comma-separated: {_GROUPS}.")] = "requester,agent",
    as_json: Annotated[bool, typer.Option("--json", help="Rows as JSON.")] = False,
) -> None:
    """Turns, tokens, tool calls and cost per person and agent (or what --by names), for a period."""
    from mindroom.config.loading import load_config
    from mindroom.errors import ConfigError
    from mindroom.logging_config import configure_logging, redact_value
    from mindroom.state.errors import StateError
    from mindroom.state.usage import UsageQuery
    from mindroom.state.usage_period import period_bounds
    from mindroom.state.usage_reader import read_usage

    configure_logging("CRITICAL")
    environment = locate(config, storage_path).environment
    url = environment.database_url
    if url is None and environment.config_path.is_file():
        try:
            url = load_config(environment.config_path, environment.values).storage.database_url
        except ConfigError:
            url = None
    groups = tuple(name.strip() for name in by.split(",") if name.strip())
    try:
        since, until = period_bounds(period, time.time())
        query = UsageQuery(since, until, person, agent, room, model, groups)
        rows = read_usage(environment.storage_root, url, query)
    except (ValueError, StateError) as exc:
        fail(f"mindroom usage: {exc}")
        return
    # Only the names are redacted: the sums are numbers (and `*_tokens` would read as secret names).
    listed = [{**row.as_dict(groups), **redact_value(dict(zip(groups, row.key, strict=True)))} for row in rows]
    if as_json:
        typer.echo(json.dumps({"period": period, "since": since, "until": until, "rows": listed}))
        return
    if not rows:
        typer.echo(f"No turns recorded for {period}.")
        return
    table = Table(*groups, "turns", "in", "cached", "out", "tool calls", "USD", "unpriced", box=None, pad_edge=False)
    for row in rows:
        sums = (row.turns, row.input_tokens, row.cached_tokens, row.output_tokens, row.tool_calls)
        names = [str(name) for name in redact_value(list(row.key))]
        table.add_row(*names, *(f"{n:,}" for n in sums), f"{row.cost_usd:.4f}", str(row.unpriced_turns))
    new_console().print(table)
