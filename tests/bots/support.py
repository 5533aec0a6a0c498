"""The daemon's capabilities for unit tests of the bots package: real stores in a temporary folder, no homeserver."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from mindroom.bots.approvals.desk import ApprovalDesk
from mindroom.bots.directory import Directory
from mindroom.bots.ingress import Ingress
from mindroom.bots.pipeline_capabilities import RunClock, TurnStores
from mindroom.bots.runtime import Entity, LiveCell, LiveState
from mindroom.bots.usage.ledger import UsageLedger
from mindroom.constants import RuntimePaths
from mindroom.daemon.wiring import RunningDaemon
from mindroom.state.attachments import AttachmentStore
from mindroom.state.journal import TurnJournal
from mindroom.state.sqlite.answers import SqliteAnswerLog
from mindroom.state.sqlite.journal import SqliteTurnJournal
from mindroom.state.sqlite.rooms import SqliteRoomMemory
from mindroom.state.sqlite.usage import SqliteUsageStore


def unit_daemon(
    tmp_path: Path,
    live: LiveState,
    *,
    bots: Mapping[str, str],
    rooms: Mapping[str, str],
    started_at_ms: int,
    approvals: ApprovalDesk | None = None,
    entities: Mapping[str, Entity] | None = None,
    journal: TurnJournal | None = None,
) -> RunningDaemon:
    """What the orchestrator builds, with the journal, room memory, answer log and attachments under `tmp_path`.

    `bots` are the accounts' user ids, `rooms` the configured rooms; close the stores with `close_stores`.
    `journal` replaces the SQLite journal (one a state backend opened, which that backend closes).
    """
    directory = Directory(
        "localhost", SqliteRoomMemory(tmp_path / "rooms.db"), entities=entities, bot_user_ids=bots, room_ids=rooms
    )
    stores = TurnStores(
        journal or SqliteTurnJournal(tmp_path / "daemon.db"),
        SqliteAnswerLog(tmp_path / "answers.db"),
        AttachmentStore(tmp_path),
        approvals,
        # Not started: records wait in memory until a report asks (which writes them first), as on a quiet run.
        usage=UsageLedger(SqliteUsageStore(tmp_path / "usage.db"), lambda: 90),
    )
    return RunningDaemon(
        cell=LiveCell(live),
        directory=directory,
        stores=stores,
        paths=RuntimePaths.for_directory(tmp_path),
        clock=RunClock(started_at_ms),
    )


def ingress_of(daemon: RunningDaemon) -> Ingress:
    """The ingress stage as the orchestrator wires it."""
    return Ingress(daemon.directory, daemon.stores, daemon.clock, daemon.traffic.bot_turns)


def close_stores(daemon: RunningDaemon) -> None:
    """Close the stores `unit_daemon` opened."""
    daemon.stores.journal.close()
    daemon.stores.answers.close()
    daemon.directory.memory.close()
    if daemon.stores.usage is not None:
        daemon.stores.usage.store.close()
