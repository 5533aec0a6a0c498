"""The key backup's uploader: every room key a bot's device saves goes to the backup, in batches, off the reply path.

The store tells the uploader of each room key as it is saved (`queue`), which costs a set insertion; a
task owned by the bot's client waits a moment for more to gather, encrypts them for the backup and
uploads them in one request, then marks them backed up (`backed_up` items, with the backup version).
A connection failure puts the batch back for later; a backup replaced by another client
(`M_WRONG_ROOM_KEYS_VERSION`) is handed to `on_replaced`, which says whether to go on with a new version.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from nio.crypto import InboundGroupSession

from mindroom.logging_config import get_logger
from mindroom.matrix.crypto.bot_vault import BotVault
from mindroom.matrix.crypto.key_backup import KeyBackupApi, backup_entry
from mindroom.matrix.errors import MatrixConnectionError, MatrixRequestError

__all__ = ["BACKED_UP", "BackupTarget", "KeyBackupUploader"]

logger = get_logger(__name__)

BACKED_UP = "backed_up"
"""The vault kind marking a room key as in the backup (key: session id; value: the backup version)."""
_GATHER_S = 0.5
_BATCH = 200
_RETRY_S = 5.0
_FLUSH_S = 5.0

BackupTarget = tuple[str, str]
"""(backup version, its public key)."""
_Replaced = Callable[[], Awaitable[BackupTarget | None]]


class KeyBackupUploader:
    """Uploads one device's room keys to one backup version; `start()` and `stop()` bracket its task."""

    def __init__(
        self,
        api: KeyBackupApi,
        vault: BotVault,
        name: str,
        target: BackupTarget,
        on_replaced: _Replaced,
        sessions: Callable[[], Iterable[InboundGroupSession]],
    ) -> None:
        """`sessions`: every room key the device holds (queued again when the keys go to a new version)."""
        self._api = api
        self._sessions = sessions
        self._vault = vault
        self._name = name
        self._version, self._public_key = target
        self._on_replaced = on_replaced
        self._pending: dict[str, InboundGroupSession] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.uploaded = 0
        """Room keys uploaded by this uploader (for tests and `mindroom doctor`)."""

    @property
    def version(self) -> str | None:
        """The backup version keys go to; None once the uploader gave up on a replaced backup."""
        return self._version or None

    @property
    def pending(self) -> int:
        """Room keys waiting to be uploaded."""
        return len(self._pending)

    def backed_up(self, session_id: str) -> bool:
        """True when the room key is marked as in the current backup version."""
        mark = self._vault.get(BACKED_UP, session_id)
        return mark is not None and mark.get("version") == self._version

    def queue(self, session: InboundGroupSession) -> None:
        """Upload this room key soon (nothing when it is in the backup already)."""
        if self._version and not self.backed_up(session.id):
            self._pending[session.id] = session
            self._wake.set()

    def queue_missing(self, sessions: Iterable[InboundGroupSession]) -> None:
        """Queue every room key not yet in the current backup version (at start, or for a new version)."""
        for session in sessions:
            self.queue(session)

    def start(self) -> None:
        """Start the task (once)."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"key-backup-{self._name}")

    async def stop(self, flush_s: float = _FLUSH_S) -> None:
        """Upload what is pending (within `flush_s`), then end the task."""
        task, self._task = self._task, None
        if task is None:
            return
        if self._pending and self._version and not task.done():
            with contextlib.suppress(TimeoutError, MatrixConnectionError, MatrixRequestError):
                async with asyncio.timeout(flush_s):
                    await self._upload_pending()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def _run(self) -> None:
        while self._version:
            await self._wake.wait()
            await asyncio.sleep(_GATHER_S)  # more keys usually follow the first (a room's members' sessions)
            self._wake.clear()
            try:
                await self._upload_pending()
            except MatrixConnectionError as exc:
                logger.info("key backup upload postponed", agent=self._name, error=str(exc), retry_in_s=_RETRY_S)
                await self._retry_later()
            except MatrixRequestError as exc:
                if exc.errcode in ("M_WRONG_ROOM_KEYS_VERSION", "M_NOT_FOUND"):  # replaced, or deleted
                    await self._replaced()
                else:
                    logger.warning("key backup upload refused", agent=self._name, error=str(exc), retry_in_s=_RETRY_S)
                    await self._retry_later()

    async def _retry_later(self) -> None:
        await asyncio.sleep(_RETRY_S)
        self._wake.set()

    async def _replaced(self) -> None:
        """The backup is no longer the current version: go on with the new one, or stop."""
        target = await self._on_replaced()
        if target is None:
            self._version = ""
            self._pending.clear()
            return
        self._version, self._public_key = target
        self._pending.clear()
        self.queue_missing(self._sessions())

    async def _upload_pending(self) -> None:
        while self._pending and self._version:
            batch = dict(list(self._pending.items())[:_BATCH])
            rooms: dict[str, dict[str, Any]] = {}
            for session_id, session in batch.items():
                rooms.setdefault(session.room_id, {})[session_id] = backup_entry(session, self._public_key)
            version = self._version
            await self._api.upload(version, rooms)
            self._vault.put_many(BACKED_UP, {session_id: {"version": version} for session_id in batch})
            for session_id in batch:
                self._pending.pop(session_id, None)
            self.uploaded += len(batch)
            logger.debug("room keys backed up", agent=self._name, keys=len(batch), version=version)
