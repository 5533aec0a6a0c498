"""MindRoom's `mindroom.thread_export` for plugins: threads exported into folders through the running daemon.

`export_threads_to_targets_once` writes the latest threads of the daemon's rooms (or of one room) into each
`ThreadExportTarget`, as Markdown and JSON files (0600), and answers with one `ThreadExportStats` per target;
the rules are `mindroom.bots.thread_export_targets`'s. It reads through the daemon running on
`runtime_paths.storage_root` (from any thread or event loop) and raises `RuntimeError` when none runs there.
MindRoom's `prefer_cache` has no meaning here: the threads are always read from the homeserver, decrypted
by the daemon's accounts. MindRoom's `ThreadExportSource` and `export_threads_to_sources` take its own Matrix
clients and projected history and are not provided.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mindroom.bots.thread_export import export_folder
from mindroom.bots.thread_export_targets import (
    ThreadExportFailure,
    ThreadExportStats,
    ThreadExportTarget,
    export_to_targets,
)
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths

__all__ = [
    "MAX_THREAD_ROOTS",
    "ThreadExportFailure",
    "ThreadExportStats",
    "ThreadExportTarget",
    "export_threads_once",
    "export_threads_to_targets_once",
]

MAX_THREAD_ROOTS = 2000
"""The most threads of one room a pass reads (the latest), as in MindRoom."""


async def export_threads_to_targets_once(
    *,
    config: Config,
    runtime_paths: RuntimePaths,
    targets: Sequence[ThreadExportTarget],
    room_filter: str | None = None,
    prefer_cache: bool = False,
    max_thread_roots: int = MAX_THREAD_ROOTS,
) -> tuple[ThreadExportStats, ...]:
    """One pass into every target: the rooms' latest threads (`room_filter`: one room, by id, key or alias)."""
    del config, prefer_cache  # the running daemon's own config and accounts read the threads
    return await export_to_targets(runtime_paths.storage_root, targets, room_filter, max_thread_roots)


async def export_threads_once(
    *,
    config: Config,
    runtime_paths: RuntimePaths,
    output_dir: Path | None = None,
    room_filter: str | None = None,
    max_thread_roots: int = MAX_THREAD_ROOTS,
    required_member_user_id: str | None = None,
    include_invited_rooms: bool = True,
    prefer_cache: bool = False,
) -> ThreadExportStats:
    """One pass into one folder (default `<data>/thread_exports/`)."""
    target = ThreadExportTarget(
        output_dir or export_folder(runtime_paths.storage_root), required_member_user_id, include_invited_rooms
    )
    (stats,) = await export_threads_to_targets_once(
        config=config,
        runtime_paths=runtime_paths,
        targets=(target,),
        room_filter=room_filter,
        prefer_cache=prefer_cache,
        max_thread_roots=max_thread_roots,
    )
    return stats
