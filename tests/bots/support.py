"""A `DaemonRuntime` for unit tests of the bots package: real stores in a temporary folder, no homeserver."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mindroom.bots.runtime import DaemonRuntime, LiveState
from mindroom.constants import RuntimePaths
from mindroom.state.answers import AnswerLog
from mindroom.state.attachments import AttachmentStore
from mindroom.state.journal import TurnJournal
from mindroom.state.rooms import RoomMemory


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
        journal=TurnJournal(tmp_path / "daemon.db"),
        room_memory=RoomMemory(tmp_path / "rooms.db"),
        answers=AnswerLog(tmp_path / "answers.db"),
        attachments=AttachmentStore(tmp_path),
        bot_user_ids=dict(bots),
        room_ids=dict(rooms),
        started_at_ms=started_at_ms,
        **extra,
    )
