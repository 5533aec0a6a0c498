"""What every `mindroom` command shares: where the config and data directory are, output, failure, environment.

Every command that reads the config or the data directory finds them through `locate()`, the way `mindroom
run` does: `--config`, else `MINDROOM_CONFIG_PATH`, else `./config.yaml`, else `~/.mindroom/config.yaml` (the
order MindRoom searches); the data directory from `--storage-path`, else `MINDROOM_STORAGE_PATH` (also from the
`.env` beside the config), else `mindroom_data/` beside the config. When something is missing, the message says
where the command looked and which flag to pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from mindroom.constants import DEFAULT_CONFIG_FILENAME, DEFAULT_STORAGE_DIRNAME
from mindroom.logging_config import redact_text, register_secret_env

if TYPE_CHECKING:
    from mindroom.config.environment import DaemonEnvironment

__all__ = [
    "CONFIG_SEARCH",
    "CliPaths",
    "ConfigOption",
    "StorageOption",
    "fail",
    "locate",
    "new_console",
    "read_cli_environment",
]

CONFIG_SEARCH = (Path(DEFAULT_CONFIG_FILENAME), Path("~/.mindroom") / DEFAULT_CONFIG_FILENAME)
"""Where the config is looked for when neither `--config` nor `MINDROOM_CONFIG_PATH` names it, first found wins."""

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        show_default=False,
        help="Path to config.yaml (default: MINDROOM_CONFIG_PATH, else ./config.yaml, else ~/.mindroom/config.yaml).",
    ),
]
StorageOption = Annotated[
    Path | None,
    typer.Option(
        "--storage-path",
        show_default=False,
        help="Data directory (default: MINDROOM_STORAGE_PATH, else mindroom_data beside the config).",
    ),
]
_CONFIG_FLAGS = "pass --config PATH (or set MINDROOM_CONFIG_PATH)"


@dataclass(frozen=True, slots=True)
class CliPaths:
    """Where a command found the config and the data directory, and where it looked for them."""

    environment: DaemonEnvironment
    config_from: str
    """`--config`, `MINDROOM_CONFIG_PATH`, or "" when the config was searched for in `CONFIG_SEARCH`."""
    looked_in: tuple[Path, ...]
    storage_from: str
    """`--storage-path`, `MINDROOM_STORAGE_PATH`, the `.env` file that set it, or "" for the default."""

    @property
    def config_found(self) -> bool:
        """Whether the config file exists."""
        return self.environment.config_path.is_file()

    def config_missing(self) -> str:
        """Where the config was looked for (no file there), as a sentence."""
        if self.config_from:
            return f"{self.environment.config_path}: file not found (given by {self.config_from})"
        return f"config file not found: looked for {_listed(self.looked_in)}"

    def config_fix(self) -> str:
        """What to pass to name the config."""
        if self.config_from == "--config":
            return "pass --config with the path of the daemon's config.yaml"
        if self.config_from:
            return f"set {self.config_from} to the daemon's config.yaml, or pass --config PATH"
        return f"{_CONFIG_FLAGS} naming the daemon's config.yaml, or write one here with `mindroom config init`"

    def data_dir(self) -> str:
        """The data directory and how it was chosen, as a phrase (for messages about what is not in it)."""
        root = self.environment.storage_root
        if self.storage_from:
            return f"{root} (given by {self.storage_from})"
        beside = f"{root} ({DEFAULT_STORAGE_DIRNAME} beside {self.environment.config_path}"
        return beside + (")" if self.config_found else f"; {self.config_missing()})")

    def data_dir_fix(self) -> str:
        """What to pass to name the data directory of a running daemon."""
        return (
            "pass --storage-path DIR (or set MINDROOM_STORAGE_PATH) with the running daemon's data directory,"
            " or --config PATH with its config.yaml"
        )


def _listed(paths: tuple[Path, ...]) -> str:
    return " and ".join(str(path) for path in paths)


def locate(config: Path | None, storage_path: Path | None) -> CliPaths:
    """Find the config and the data directory as `mindroom run` does, and read the environment with them.

    The one place every command (`run` included) resolves `--config`, `MINDROOM_CONFIG_PATH`, `--storage-path`
    and `MINDROOM_STORAGE_PATH`. The environment's secrets are registered for redaction.
    """
    from mindroom.config.environment import daemon_environment, process_environ

    process = process_environ()
    named = process.get("MINDROOM_CONFIG_PATH", "").strip()
    candidates: tuple[Path, ...]
    if config is not None:
        candidates, config_from = (config,), "--config"
    elif named:
        candidates, config_from = (Path(named),), "MINDROOM_CONFIG_PATH"
    else:
        candidates, config_from = CONFIG_SEARCH, ""
    # Run from ~/.mindroom, both places of the search are one file: it is named once.
    looked_in = tuple(dict.fromkeys(path.expanduser().resolve() for path in candidates))
    chosen = next((path for path in looked_in if path.is_file()), looked_in[0])
    environment = daemon_environment(chosen, storage_path)
    register_secret_env(environment.values)
    if storage_path is not None:
        storage_from = "--storage-path"
    elif process.get("MINDROOM_STORAGE_PATH"):
        storage_from = "MINDROOM_STORAGE_PATH"
    elif environment.values.get("MINDROOM_STORAGE_PATH"):
        storage_from = f"MINDROOM_STORAGE_PATH in {chosen.parent / '.env'}"
    else:
        storage_from = ""
    return CliPaths(environment, config_from, looked_in, storage_from)


def read_cli_environment(
    config: Path | None, storage_path: Path | None, *, config_required: bool = True
) -> DaemonEnvironment:
    """The environment `locate()` reads; when `config_required` and there is no config file, exit 2 saying
    where the command looked and which flag to pass."""
    paths = locate(config, storage_path)
    if config_required and not paths.config_found:
        fail(f"{paths.config_missing()}; {paths.config_fix()}")
    return paths.environment


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
