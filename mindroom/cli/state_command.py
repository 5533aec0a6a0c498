"""`mindroom state`: move the daemon's durable state."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from mindroom.cli.common import ConfigOption, StorageOption, fail, read_cli_environment
from mindroom.constants import DEFAULT_CONFIG_FILENAME
from mindroom.logging_config import configure_logging

__all__ = ["state_app", "state_migrate"]

state_app = typer.Typer(no_args_is_help=True, help="Move the daemon's durable state.")


@state_app.command("migrate")
def state_migrate(
    to: Annotated[
        str, typer.Option("--to", envvar="MINDROOM_DATABASE_URL", help="Target: postgresql://user:pw@host/db.")
    ],
    config: ConfigOption = Path(DEFAULT_CONFIG_FILENAME),
    storage_path: StorageOption = None,
) -> None:
    """Copy the data directory's SQLite state into PostgreSQL and print the counts verified on both sides."""
    from mindroom.daemon.migrate import count_lines, migrate_state
    from mindroom.state.errors import StateError, StateLockedError

    configure_logging("WARNING")
    found = read_cli_environment(config, storage_path)
    try:
        counts = asyncio.run(migrate_state(found.storage_root, to))
    except StateError as exc:
        fail(f"mindroom state migrate: {exc}", code=3 if isinstance(exc, StateLockedError) else 1)
        return
    for line in count_lines(counts):
        typer.echo(line)
    if not all(count.verified for count in counts):
        fail("mindroom state migrate: some rows are missing in PostgreSQL (see above)", code=1)
    typer.echo(f"State copied. Set MINDROOM_DATABASE_URL (or storage.database_url) and start: {found.storage_root}")
