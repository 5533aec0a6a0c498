"""Threads written into export targets: folders, each with an optional person or bot who must be in a room.

A pass reads through the daemon running on the same data directory (`attach_export_reader`, from its start
to its stop): every room one of its accounts is in (`room_filter`: one of them, by id, key or alias), each
room's latest threads, written as `thread_export` writes them (`<room>/<thread>.md` and `.json`, 0600) into
every target that takes the room. A target with `required_member_user_id` takes a room only while that user
is joined to it; once the room's members show the user gone, the room's files leave the target (a failed
look-up leaves them). `include_invited_rooms=False` keeps out rooms the config does not name. A thread whose
content did not change since it was last written is counted unchanged and left as it is. A pass started on
another event loop (a plugin's worker thread) runs on the daemon's loop, as a task the daemon owns; one
started while the daemon starts (from a `bot:ready` hook) waits until the daemon is ready to read.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from mindroom.bots.directory import Directory
from mindroom.bots.thread_export import ThreadExport, export_file_name, read_thread, write_export
from mindroom.logging_config import get_logger
from mindroom.matrix.room_account import RoomAccount
from mindroom.matrix.thread_reader import room_thread_roots
from mindroom.tasks import TaskOwner

__all__ = [
    "ATTACH_WAIT_S",
    "ThreadExportFailure",
    "ThreadExportStats",
    "ThreadExportTarget",
    "attach_export_reader",
    "export_to_targets",
]

logger = get_logger(__name__)

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class ThreadExportTarget:
    """A folder to export into, and who must be joined to a room for its threads to go there."""

    output_dir: Path
    required_member_user_id: str | None = None
    include_invited_rooms: bool = True


@dataclass(frozen=True, slots=True)
class ThreadExportFailure:
    """A room or thread a pass could not export into a target, and why."""

    room_id: str | None
    thread_id: str | None
    error: str


@dataclass(frozen=True, slots=True)
class ThreadExportStats:
    """What one pass did for one target."""

    output_dir: Path
    rooms_exported: int = 0
    threads_seen: int = 0
    threads_exported: int = 0
    threads_unchanged: int = 0
    failed_items: tuple[ThreadExportFailure, ...] = ()

    @property
    def failures(self) -> int:
        """How many rooms or threads failed."""
        return len(self.failed_items)


@dataclass(slots=True)
class _Tally:
    target: ThreadExportTarget
    rooms: int = 0
    seen: int = 0
    written: int = 0
    unchanged: int = 0
    failed: list[ThreadExportFailure] = field(default_factory=list)

    def stats(self) -> ThreadExportStats:
        return ThreadExportStats(
            self.target.output_dir, self.rooms, self.seen, self.written, self.unchanged, tuple(self.failed)
        )


@dataclass(frozen=True, slots=True)
class _Reader:
    directory: Directory
    loop: asyncio.AbstractEventLoop
    tasks: TaskOwner


_readers: dict[Path, _Reader] = {}
"""The running daemon's reader per data directory (one daemon runs per data directory)."""
_attached = threading.Condition()
"""Notified when a reader attaches: a pass may be started from any thread while the daemon starts."""

ATTACH_WAIT_S = 30.0
"""How long a pass waits for the daemon on its data directory to be ready to read (its hooks run before)."""


def attach_export_reader(storage_root: Path, directory: Directory) -> Callable[[float], Coroutine[Any, Any, None]]:
    """Passes on `storage_root` read through `directory` on this loop; the returned stop ends that (and them)."""
    key = Path(storage_root).resolve()
    reader = _Reader(directory, asyncio.get_running_loop(), TaskOwner("thread export passes"))
    with _attached:
        _readers[key] = reader
        _attached.notify_all()

    async def stop(grace_s: float) -> None:
        with _attached:
            if _readers.get(key) is reader:
                del _readers[key]
        await reader.tasks.cancel_all(grace_s)

    return stop


async def _owned(reader: _Reader, work: Coroutine[Any, Any, _T]) -> _T:
    done: list[_T] = []

    async def run() -> None:
        done.append(await work)

    await reader.tasks.spawn(run(), "thread export pass")
    if not done:
        raise RuntimeError("the thread export pass failed (logged by the daemon)")
    return done[0]


def _reader_of(storage_root: Path, wait_s: float) -> _Reader | None:
    key = Path(storage_root).resolve()
    with _attached:
        _attached.wait_for(lambda: key in _readers, wait_s)
        return _readers.get(key)


async def export_to_targets(
    storage_root: Path, targets: Sequence[ThreadExportTarget], room_filter: str | None, max_thread_roots: int
) -> tuple[ThreadExportStats, ...]:
    """Export through the daemon running on `storage_root` into every target; `RuntimeError` when none is ready
    to read within `ATTACH_WAIT_S` (a pass from a hook that runs while the daemon starts waits for it)."""
    if not targets:
        return ()
    reader = await asyncio.to_thread(_reader_of, storage_root, ATTACH_WAIT_S)
    if reader is None or reader.loop.is_closed():
        msg = f"no running daemon reads threads for the data directory {storage_root}"
        raise RuntimeError(msg)
    work = _pass(reader.directory, targets, room_filter, max_thread_roots)
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is reader.loop:
        return await _owned(reader, work)
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_owned(reader, work), reader.loop))


def _rooms(directory: Directory, room_filter: str | None) -> list[str]:
    joined = sorted({room for entity in directory.entities.values() for room in entity.joined_rooms})
    if room_filter is None:
        return joined
    wanted = directory.room_ids.get(room_filter, room_filter)
    return [room for room in joined if room == wanted or room_filter in directory.room_keys(room)]


def _account(directory: Directory, room_id: str, user_id: str | None) -> RoomAccount | None:
    # The required member's own account when it is one of the daemon's: the export is what that account reads.
    entities = sorted(directory.entities.values(), key=lambda entity: not entity.is_router)
    joined = [entity.client for entity in entities if room_id in entity.joined_rooms]
    own = [client for client in joined if client.user_id == user_id]
    return next(iter(own or joined), None)


async def _pass(
    directory: Directory, targets: Sequence[ThreadExportTarget], room_filter: str | None, max_thread_roots: int
) -> tuple[ThreadExportStats, ...]:
    tallies = [_Tally(target) for target in targets]
    trusted = frozenset(directory.bot_user_ids.values())
    for room_id in _rooms(directory, room_filter):
        managed = directory.is_managed(room_id)
        takers = [tally for tally in tallies if managed or tally.target.include_invited_rooms]
        for tally in tallies:
            if tally not in takers:
                await asyncio.to_thread(_retract, tally.target.output_dir, room_id)
        by_member: dict[str | None, list[_Tally]] = {}
        for tally in takers:
            by_member.setdefault(tally.target.required_member_user_id, []).append(tally)
        for member, group in by_member.items():
            await _export_room(directory, room_id, member, group, trusted, max_thread_roots)
    return tuple(tally.stats() for tally in tallies)


async def _export_room(
    directory: Directory,
    room_id: str,
    member: str | None,
    tallies: list[_Tally],
    trusted: frozenset[str],
    max_thread_roots: int,
) -> None:
    client = _account(directory, room_id, member)
    if client is None:
        return
    try:
        if member is not None and member not in await client.room_members(room_id):
            for tally in tallies:
                await asyncio.to_thread(_retract, tally.target.output_dir, room_id)
            return
        roots = await room_thread_roots(client, room_id, max_thread_roots)
    except Exception as error:  # a failed look-up keeps what was exported: only a known absence retracts
        for tally in tallies:
            tally.failed.append(ThreadExportFailure(room_id, None, str(error)))
        return
    for tally in tallies:
        tally.rooms += 1
    for root in roots:
        try:
            export = await read_thread(client, room_id, root, trusted)
        except Exception as error:
            for tally in tallies:
                tally.failed.append(ThreadExportFailure(room_id, root, str(error)))
            continue
        await asyncio.to_thread(_store, export, tallies)  # the files are written off the daemon's loop


def _store(export: ThreadExport, tallies: list[_Tally]) -> None:
    for tally in tallies:
        tally.seen += 1
        if _unchanged(export, tally.target.output_dir):
            tally.unchanged += 1
        else:
            write_export(export, tally.target.output_dir)
            tally.written += 1


def _unchanged(export: ThreadExport, folder: Path) -> bool:
    path = folder / export_file_name(export.room_id) / f"{export_file_name(export.thread_id)}.json"
    try:
        before = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    now = json.loads(export.as_json())
    if not isinstance(before, dict):
        return False
    before.pop("exported_at", None)
    now.pop("exported_at", None)
    return bool(before == now)


def _retract(folder: Path, room_id: str) -> None:
    room_folder = folder / export_file_name(room_id)
    if not room_folder.is_dir() or room_folder.is_symlink():
        return
    for path in room_folder.iterdir():
        if path.suffix in (".md", ".json") and path.is_file() and not path.is_symlink():
            path.unlink()
    if not any(room_folder.iterdir()):
        room_folder.rmdir()
    logger.info("thread exports retracted", room_id=room_id, folder=str(folder))
