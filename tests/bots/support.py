"""A `DaemonRuntime` for unit tests of the bots package: real stores in a temporary folder, no homeserver."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mindroom.bots.runtime import DaemonRuntime, LiveState
from mindroom.constants import RuntimePaths
from mindroom.state.attachments import AttachmentStore
from mindroom.state.sqlite.answers import SqliteAnswerLog
from mindroom.state.sqlite.journal import SqliteTurnJournal
from mindroom.state.sqlite.rooms import SqliteRoomMemory


def unit_runtime(
    tmp_path: Path,
    live: LiveState,
    *,
    bots: Mapping[str, str],
    rooms: Mapping[str, str],
    started_at_ms: int,
    **extra: Any,
) -> DaemonRuntime:
    """The runtime with its journal, room memory, answer log and attachments under `tmp_path` (close the journal).

    `extra` sets further fields (`approvals=`, ...)."""
    return DaemonRuntime(
        live=live,
        runtime_paths=RuntimePaths.for_directory(tmp_path),
        env={},
        server_name="localhost",
        journal=SqliteTurnJournal(tmp_path / "daemon.db"),
        room_memory=SqliteRoomMemory(tmp_path / "rooms.db"),
        answers=SqliteAnswerLog(tmp_path / "answers.db"),
        attachments=AttachmentStore(tmp_path),
        bot_user_ids=dict(bots),
        room_ids=dict(rooms),
        started_at_ms=started_at_ms,
        **extra,
    )
