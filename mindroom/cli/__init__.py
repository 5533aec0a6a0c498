"""The `mindroom` command: run the daemon, set up and check config, inspect plugins and hooks, chat."""

from mindroom.cli.app import app, main

__all__ = ["app", "main"]
