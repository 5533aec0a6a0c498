"""Threads people find again, for one run: summaries attached to the run, and the thread commands registered."""

from __future__ import annotations

from mindroom.bots.commands.table import CommandTable
from mindroom.bots.commands.threads import thread_commands
from mindroom.bots.thread_export_targets import attach_export_reader
from mindroom.bots.thread_summaries import SummaryRun
from mindroom.daemon.startup.plan import PhaseStops
from mindroom.daemon.wiring import RunningDaemon
from mindroom.tasks import TaskOwner

__all__ = ["start_threads"]


def start_threads(running: RunningDaemon, commands: CommandTable, stops: PhaseStops) -> None:
    """Summaries start with this run (their tasks stop with it), as do export passes of plugins;
    `!tag`, `!resolve`, `!reopen`, `!summary`."""
    directory, summaries = running.directory, running.stores.summaries
    summaries.attach(
        SummaryRun(
            room_keys=directory.room_keys,
            trusted=lambda: frozenset(directory.bot_user_ids.values()),
            env=running.paths.env_values,
            tasks=TaskOwner("thread summaries"),
            storage_root=running.paths.storage_root,
        )
    )
    stops.add("thread summaries", lambda stopping: summaries.stop(stopping.grace_s))
    stop_exports = attach_export_reader(running.paths.storage_root, directory)  # for `mindroom.thread_export`
    stops.add("thread export passes", lambda stopping: stop_exports(stopping.grace_s))
    for command in thread_commands(summaries, directory.room_keys):
        commands.register(command)
