"""Delivery policy for the daemon's sends: stable transaction ids, and retrying through homeserver outages.

`HomeserverRetries` is how every loop that talks to the homeserver waits through an outage (the sync, the
sends, an appservice's catch-up and its watch): about `REFUSED_RETRY_S` while the homeserver refuses
connections, and `HOMESERVER_BACKOFF` after failures that reached it.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import time
import uuid
from collections.abc import Awaitable, Callable

from mindroom.backoff import Backoff, Retries
from mindroom.logging_config import get_logger
from mindroom.matrix.errors import MatrixConnectionError

__all__ = [
    "HOMESERVER_BACKOFF",
    "REFUSED_RETRY_S",
    "SEND_RETRY_WINDOW_S",
    "STREAM_CURSOR",
    "HomeserverRetries",
    "send_until_accepted",
    "stable_txn_id",
]

logger = get_logger(__name__)

SEND_RETRY_WINDOW_S = 600.0
STREAM_CURSOR = " ⋯"
"""Shown after the text of an answer still streaming (the terminal chat strips it the same way)."""
REFUSED_RETRY_S = 1.0
"""Retry interval while the homeserver refuses connections: it is down or restarting, and a refused connection
costs it nothing, so there is no backing off; the first try after it listens again is at most this late."""
HOMESERVER_BACKOFF = Backoff(first_s=0.5, max_s=30.0, jitter=(1.0, 1.1))
"""The waits after failures that reached the homeserver (errors, timeouts, broken connections): from half a
second, doubling, to 30 s, each up to a tenth longer so that the bots of a daemon do not ask all at once."""


class HomeserverRetries(Retries):
    """The waits between tries at the homeserver through one outage; `reset()` once it answers."""

    def __init__(self) -> None:
        super().__init__(HOMESERVER_BACKOFF)

    def wait(self, *, refused: bool) -> float:
        """The wait before the next try: a little under `REFUSED_RETRY_S` after a refused connection (not counted
        as a failure: a long refused spell does not start the backoff at its cap), else the backoff's next step."""
        if refused:
            return REFUSED_RETRY_S * random.uniform(0.9, 1.0)
        return self.next_wait()


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
    retries = HomeserverRetries()
    deadline = time.monotonic() + window_s
    while True:
        try:
            return await send(txn_id)
        except MatrixConnectionError as exc:
            wait = retries.wait(refused=exc.refused)
            if time.monotonic() + wait > deadline:
                raise
            logger.debug("homeserver unreachable; will retry", what=what, retry_in_s=wait)
            await asyncio.sleep(wait)
