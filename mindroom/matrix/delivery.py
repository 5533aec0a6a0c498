"""Delivery policy for the daemon's sends: stable transaction ids, and retrying through homeserver outages."""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from collections.abc import Awaitable, Callable

from mindroom.logging_config import get_logger
from mindroom.matrix.errors import MatrixConnectionError

__all__ = ["REFUSED_RETRY_S", "SEND_RETRY_WINDOW_S", "STREAM_CURSOR", "send_until_accepted", "stable_txn_id"]

logger = get_logger(__name__)

SEND_RETRY_WINDOW_S = 600.0
STREAM_CURSOR = " ⋯"
"""Shown after the text of an answer still streaming (the terminal chat strips it the same way)."""
REFUSED_RETRY_S = 1.0
"""Retry interval while the homeserver refuses connections: it is down or restarting, and a refused connection
costs it nothing, so there is no backing off; the first try after it listens again is at most this late."""
_FIRST_RETRY_S = 0.5
_MAX_RETRY_S = 30.0


def stable_txn_id(entity: str, source_event_id: str, kind: str) -> str:
    """The transaction id of an entity's `kind` send for one message: the same after a restart.

    A turn that is replayed after a crash sends with the same id, so the homeserver returns the
    message it already has instead of posting a second one.
    """
    digest = hashlib.sha256(f"{entity}\0{source_event_id}\0{kind}".encode()).hexdigest()
    return f"mr{digest[:40]}"


async def send_until_accepted(
    send: Callable[[str], Awaitable[str]],
    what: str,
    txn_id: str | None = None,
    window_s: float = SEND_RETRY_WINDOW_S,
) -> str:
    """Run a Matrix send until the homeserver takes it, waiting out outages (same transaction id each try)."""
    txn_id = txn_id or uuid.uuid4().hex
    delay = _FIRST_RETRY_S
    deadline = time.monotonic() + window_s
    while True:
        try:
            return await send(txn_id)
        except MatrixConnectionError as exc:
            wait = min(delay, REFUSED_RETRY_S) if exc.refused else delay
            if time.monotonic() + wait > deadline:
                raise
            logger.debug("homeserver unreachable; will retry", what=what, retry_in_s=wait)
            await asyncio.sleep(wait)
            if not exc.refused:
                delay = min(delay * 2, _MAX_RETRY_S)
