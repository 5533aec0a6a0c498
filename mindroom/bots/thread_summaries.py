"""`ThreadSummaries`: a thread's summary written once it has grown, renewed as it grows, after the answer.

The summary model is the room's (`room_thread_summary_models`, by room key, alias or id, or by the answering
agent's name) or `defaults.thread_summary_model`; with neither, nothing happens and an answer costs one
lookup. A thread is summarized once it has `thread_summary_first_threshold` messages (summary notices and
chat commands not counted), then again each `thread_summary_subsequent_interval` more; the count of the last
summary is read back from its notice, so a restart neither repeats nor forgets one. A resolved thread and
one whose summary was pinned are left alone. The work runs in a task the daemon owns (cancelled on stop), never on the
answer's path; one thread is summarized once at a time.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from weakref import WeakValueDictionary

from mindroom.bots.commands.table import is_command
from mindroom.bots.thread_export import read_thread, write_export
from mindroom.config.main import Config
from mindroom.logging_config import get_logger
from mindroom.matrix.events import MatrixEvent
from mindroom.matrix.room_account import RoomAccount
from mindroom.matrix.thread_reader import thread_messages
from mindroom.matrix.thread_summaries import ThreadSummary, is_summary, latest_summary, send_summary
from mindroom.matrix.thread_tags import RESOLVED_TAG, ThreadTagStore
from mindroom.tasks import TaskOwner
from mindroom.tool_system.spec import workspace_dir

if TYPE_CHECKING:
    from mindroom.bots.runtime import Entity

__all__ = ["MAX_WAITING_THREADS", "SummaryRun", "ThreadSummaries", "summary_model"]

logger = get_logger(__name__)

MAX_WAITING_THREADS = 10_000
"""The most threads whose next reading is put off, remembered at once (the oldest is forgotten: read again)."""


def summary_model(config: Config, room_id: str, room_keys: Collection[str], entity: str | None) -> str | None:
    """The model that writes this room's thread summaries, None when no summary model is configured."""
    per_room = config.room_thread_summary_models
    if per_room:
        for key in (*sorted(room_keys), room_id):
            if key in per_room:
                return per_room[key]
        if entity is not None and entity in per_room:
            return per_room[entity]
    return config.defaults.thread_summary_model


def _counted(event: MatrixEvent, trusted: Collection[str]) -> bool:
    """Whether a message is part of the conversation: not a summary notice, not a chat command."""
    return not is_summary(event, trusted) and not is_command(str(event.content.get("body") or ""))


@dataclass(frozen=True, slots=True)
class SummaryRun:
    """What summaries need of the running daemon: room keys, its accounts, the environment, the task owner, the
    data directory (where agents' workspaces are)."""

    room_keys: Callable[[str], Collection[str]]
    trusted: Callable[[], Collection[str]]
    env: Mapping[str, str]
    tasks: TaskOwner
    storage_root: Path


class ThreadSummaries:
    """Automatic and asked-for thread summaries of one run (idle until `attach`)."""

    def __init__(self) -> None:
        self._run: SummaryRun | None = None
        self._busy: set[tuple[str, ...]] = set()
        self._locks: WeakValueDictionary[tuple[str, str], asyncio.Lock] = WeakValueDictionary()
        self._waits: OrderedDict[tuple[str, str], int] = OrderedDict()
        """Per thread, how many more answers pass before it is read again: each answer adds at least itself,
        so a thread `n` messages short of its threshold is not due before `n` more answers."""

    def attach(self, run: SummaryRun) -> None:
        """Start summarizing for the running daemon."""
        self._run = run

    async def settled(self) -> None:
        """Wait until no summary is being written."""
        if self._run is not None:
            await self._run.tasks.settled()

    async def stop(self, grace_s: float) -> None:
        """Let running summaries finish within `grace_s`, then cancel them."""
        run, self._run = self._run, None
        if run is not None:
            await run.tasks.cancel_all(grace_s)

    def answered(self, config: Config, by: Entity, room_id: str, thread_root: str, opened: bool = False) -> None:
        """An answer was given in a thread: summarize it in the background if it has grown enough, and export it
        into the agent's workspace if the agent keeps `thread_exports`. `opened`: the question started the thread,
        so it holds the question and this answer (it is not read while that is short of the first threshold)."""
        run = self._run
        if run is None:
            return
        client, entity = by.client, by.name
        agent = config.agents.get(entity)
        if agent is not None and agent.thread_exports is not None and (entity, room_id, thread_root) not in self._busy:
            self._busy.add((entity, room_id, thread_root))
            run.tasks.spawn(self._export(client, entity, room_id, thread_root), "thread export")
        if not config.room_thread_summary_models and config.defaults.thread_summary_model is None:
            return
        model = summary_model(config, room_id, run.room_keys(room_id), entity)
        key = (room_id, thread_root)
        if model is None or key in self._busy:
            return
        wait = self._waits.pop(key, config.defaults.thread_summary_first_threshold - 3 if opened else 0)
        if wait >= 0 and opened:
            self._note_wait(key, wait)
            return
        if wait > 0:
            self._note_wait(key, wait - 1)
            return
        self._busy.add(key)
        run.tasks.spawn(self._automatic(config, client, model, key), "thread summary")

    def _note_wait(self, key: tuple[str, str], answers: int) -> None:
        if answers > 0:
            self._waits[key] = answers
            if len(self._waits) > MAX_WAITING_THREADS:
                self._waits.popitem(last=False)

    async def _export(self, client: RoomAccount, entity: str, room_id: str, root: str) -> None:
        run = self._run
        try:
            if run is not None:
                exported = await read_thread(client, room_id, root, run.trusted())
                folder = workspace_dir(run.storage_root, entity) / "thread_exports"
                await asyncio.to_thread(write_export, exported, folder)
        finally:
            self._busy.discard((entity, room_id, root))

    async def _automatic(self, config: Config, client: RoomAccount, model: str, key: tuple[str, str]) -> None:
        try:
            await self.summarize(config, client, key[0], key[1], model, force=False)
        finally:
            self._busy.discard(key)

    async def summarize(
        self, config: Config, client: RoomAccount, room_id: str, root: str, model: str, *, force: bool
    ) -> ThreadSummary | None:
        """Write the thread's summary now (`force`), or only when it is due; the summary sent, if any."""
        run = self._run
        if run is None:
            return None
        lock = self._locks.get((room_id, root))
        if lock is None:
            lock = self._locks[(room_id, root)] = asyncio.Lock()
        async with lock:
            events = await thread_messages(client, room_id, root)
            trusted = run.trusted()
            messages = [event for event in events if _counted(event, trusted)]
            if not force and not await self.is_due(config, client, room_id, root, events):
                return None
            self._note_wait((room_id, root), config.defaults.thread_summary_subsequent_interval - 1)
            entry = config.models.get(model)
            if entry is None:
                logger.warning("thread summary model not in models:", model=model, key="room_thread_summary_models")
                return None
            lines = [(event.sender, str(event.content.get("body") or "")) for event in messages]
            from mindroom.ai.thread_summary import write_thread_summary

            defaults = config.defaults
            text = await write_thread_summary(entry, model, run.env, lines, defaults.thread_summary_temperature)
            latest = messages[-1].event_id if messages else root
            sent = await send_summary(client, room_id, root, text, len(messages), model, latest_event_id=latest)
            logger.info("thread summarized", room_id=room_id, thread_id=root, messages=len(messages), model=model)
            return sent

    async def is_due(
        self, config: Config, client: RoomAccount, room_id: str, root: str, events: Sequence[MatrixEvent]
    ) -> bool:
        """Whether the thread of `events` has grown past its next threshold, and is neither pinned nor resolved."""
        trusted = self._run.trusted() if self._run is not None else frozenset()
        count = sum(1 for event in events if _counted(event, trusted))
        last = latest_summary(events, trusted)
        defaults = config.defaults
        threshold = (
            defaults.thread_summary_first_threshold
            if last is None
            else last.message_count + defaults.thread_summary_subsequent_interval
        )
        key = (room_id, root)
        if count < threshold:
            self._note_wait(key, threshold - count - 1)
            return False
        pinned = last is not None and last.pinned
        if pinned or RESOLVED_TAG in await ThreadTagStore(client).thread_tags(room_id, root):
            self._note_wait(key, defaults.thread_summary_subsequent_interval - 1)
            return False
        return True
