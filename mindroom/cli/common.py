"""What every `mindroom` command shares: the config and data-directory options, output, failure, environment."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from mindroom.logging_config import redact_text, register_secret_env

if TYPE_CHECKING:
    from mindroom.config.environment import DaemonEnvironment

__all__ = ["ConfigOption", "StorageOption", "fail", "new_console", "read_cli_environment"]

ConfigOption = Annotated[
    Path, typer.Option("--config", "-c", envvar="MINDROOM_CONFIG_PATH", help="Path to config.yaml.")
]
StorageOption = Annotated[
    Path | None, typer.Option("--storage-path", envvar="MINDROOM_STORAGE_PATH", help="Data directory.")
]


def new_console() -> Console:
    """The console commands print to (wide when not a terminal)."""
    console = Console(highlight=False, soft_wrap=True)
    if not console.is_terminal:
        console.width = 200  # tables piped to a file or another program stay on one line per row
    return console


def fail(message: str, code: int = 2) -> None:
    """Print `message` (redacted) to stderr and exit with `code`."""
    typer.echo(redact_text(message), err=True)
    raise typer.Exit(code=code)


def read_cli_environment(config: Path, storage_path: Path | None) -> DaemonEnvironment:
    """The process environment read once, its secrets registered for redaction."""
    from mindroom.config.environment import daemon_environment

    found = daemon_environment(config, storage_path)
    register_secret_env(found.values)
    return found
