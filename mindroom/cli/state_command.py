"""`mindroom state`: move the daemon's durable state."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from mindroom.cli.common import ConfigOption, StorageOption, fail, locate
from mindroom.logging_config import configure_logging

__all__ = ["state_app", "state_migrate"]

state_app = typer.Typer(no_args_is_help=True, help="Move the daemon's durable state.")


@state_app.command("migrate")
def state_migrate(
    to: Annotated[
        str, typer.Option("--to", envvar="MINDROOM_DATABASE_URL", help="Target: postgresql://user:pw@host/db.")
    ],
    config: ConfigOption = None,
    storage_path: StorageOption = None,
) -> None:
    """Copy the data directory's SQLite state into PostgreSQL and print the counts verified on both sides."""
    from mindroom.daemon.migrate import count_lines, migrate_state
    from mindroom.state.errors import StateError, StateLockedError

    configure_logging("WARNING")
    paths = locate(config, storage_path)  # only the data dir is needed: the config may be elsewhere or gone
    found = paths.environment
    if not (found.storage_root / "state").is_dir():
        fail(f"mindroom state migrate: no daemon state in the data dir {paths.data_dir()}; {paths.data_dir_fix()}")
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
