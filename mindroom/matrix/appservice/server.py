"""`Appservice`: the daemon's listener for the homeserver's transactions, and the bots receiving through it.

Every transaction is accepted: one the homeserver sees fail marks the service down, and the transactions it
then stores for later keep their room events but lose their to-device messages (room keys). So transactions
are queued in-process and handed out in order: the queue is held until `open()` (every bot signed in and
receiving), and while a transaction concerns a bot between two instances (a reload restarting it).

Room events are taken once by their ids (`SeenEvents`), not by transaction id: a transaction sent again brings
nothing new, and a homeserver that restarted may number its transactions from 1 again (Synapse on SQLite does),
which must not pass for a repeat of what came before. From `open()` on, a `HomeserverWatch` notices the
homeserver going away and coming back; then the bots read what their devices' inboxes kept, and the events no
transaction brought are fetched and handed out like a transaction (`missed_events`). The same catch-up runs when
the numbers show a restart the watch did not see, or transactions the homeserver skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import secrets
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aiohttp import web

from mindroom.logging_config import get_logger
from mindroom.matrix.appservice.catchup import SeenEvents, missed_events
from mindroom.matrix.appservice.inbox import TIDY_INTERVAL_S, BotInbox
from mindroom.matrix.appservice.link import HomeserverLink
from mindroom.matrix.appservice.registration_file import AppserviceConfigError, AppserviceRegistration
from mindroom.matrix.appservice.transactions import TransactionRouter
from mindroom.matrix.appservice.watch import QUIET_S, HomeserverWatch
from mindroom.matrix.errors import MatrixConnectionError
from mindroom.state.tokens import SyncTokens

__all__ = ["Appservice", "listening_appservice"]

logger = get_logger(__name__)

_PREFIX = "/_matrix/app/v1"
_MAX_BODY_BYTES = 64 * 1024 * 1024
_PING_ATTEMPTS = 5
_PING_INTERVAL_S = 1.0
_RECHECK_S = 1.0
_NUMBER_DIGITS = 18
_QUEUE_LIMIT = 10_000
"""Transactions kept while held; beyond this the oldest is dropped (a bot that never comes back)."""


def _error(status: int, errcode: str, error: str) -> web.Response:
    return web.json_response({"errcode": errcode, "error": error}, status=status)


def _utf8(token: str) -> bytes:
    # Header bytes that are not UTF-8 reach us as lone surrogates; they must compare unequal, not raise.
    return token.encode("utf-8", "surrogatepass")


class Appservice:
    """Listens where the registration says: `start()` before the bots sign in, `open()` once they all receive,
    `stop()` before they stop."""

    def __init__(self, registration: AppserviceRegistration, homeserver_url: str, *, quiet_s: float = QUIET_S) -> None:
        self.registration = registration
        self.router = TransactionRouter()
        self._link = HomeserverLink(homeserver_url, registration.id, registration.as_token)
        self._watch = HomeserverWatch(self._link.probe, self._after_outage, quiet_s=quiet_s)
        self._runner: web.AppRunner | None = None
        self._lock = asyncio.Lock()
        self._seen = SeenEvents()
        self._queue: deque[tuple[str, Mapping[str, Any]]] = deque()
        """Accepted transactions not handed out yet, oldest first, each under a key of its own."""
        self._serial = itertools.count(1)
        self._last_number: int | None = None
        self._inboxes: set[BotInbox] = set()
        self._open = False
        self._handing_out: asyncio.Task[None] | None = None

    # -- the bots' side --------------------------------------------------------------------------------
    async def serve(self, inbox: BotInbox, tokens: SyncTokens, ready: asyncio.Event) -> None:
        """One bot's receiving, until cancelled: catch up, then take its part of every transaction."""
        await inbox.catch_up(tokens)
        self.router.attach(inbox)
        self._inboxes.add(inbox)
        restarting = False
        try:
            self._kick()
            ready.set()
            while True:
                await asyncio.sleep(TIDY_INTERVAL_S)
                await inbox.tidy()
        except asyncio.CancelledError:
            restarting = True  # stopped by its owner: a next instance (or the next run) takes what comes meanwhile
            raise
        finally:
            self._inboxes.discard(inbox)
            self.router.detach(inbox, hold=restarting)
            await inbox.close()

    # -- lifecycle -------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Listen and ping the homeserver (which makes it send what it kept meanwhile, queued until `open()`).

        Raises `AppserviceConfigError` when the port is taken or the homeserver cannot reach the listener.
        """
        app = web.Application(client_max_size=_MAX_BODY_BYTES)
        app.router.add_put(_PREFIX + "/transactions/{txn_id}", self._transaction)
        app.router.add_post(_PREFIX + "/ping", self._ping)
        app.router.add_get(_PREFIX + "/users/{user_id}", self._unknown)
        app.router.add_get(_PREFIX + "/rooms/{alias}", self._unknown)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        host, port = self.registration.listen_address
        try:
            await web.TCPSite(runner, host, port, reuse_address=True).start()
        except OSError as exc:
            await runner.cleanup()
            msg = f"the appservice listener cannot use {host}:{port} ({exc}); free it or change the registration's url"
            raise AppserviceConfigError(msg) from exc
        self._runner = runner
        logger.info("appservice listening", host=host, port=port, appservice=self.registration.id)
        for attempt in range(_PING_ATTEMPTS):
            if await self.ping():
                return
            if attempt + 1 < _PING_ATTEMPTS:
                await asyncio.sleep(_PING_INTERVAL_S)
        await self.stop()
        msg = (
            f"the homeserver does not reach the daemon at {self.registration.url}: check the registration's url and"
            " that the homeserver loaded the registration file (app_service_config_files)"
        )
        raise AppserviceConfigError(msg)

    async def stop(self) -> None:
        """Stop watching and listening (a transaction being handled finishes; later ones wait in the homeserver)."""
        await self._watch.stop()
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        task, self._handing_out = self._handing_out, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self._queue:
            logger.warning("transactions not handed out at stop", transactions=len(self._queue))
            self._queue.clear()
        self._open = False
        await self._link.close()

    def open(self) -> None:
        """Every bot of this run receives: hand out what was queued, and each transaction from now on."""
        self._open = True
        self._watch.start()
        self._kick()

    async def ping(self) -> bool:
        """Ask the homeserver to ping the listener (and retry what it kept); True when it got through.

        A homeserver without the ping endpoint counts as reached: the first transaction will tell.
        """
        return await self._link.ping()

    def _kick(self) -> None:
        """Hand out the queue in the background, and keep looking while something in it waits."""
        if self._queue and (self._handing_out is None or self._handing_out.done()):
            self._handing_out = asyncio.create_task(self._watch_queue(), name="appservice-queue")

    async def _watch_queue(self) -> None:
        while True:
            async with self._lock:
                await self._drain()
                if not self._queue:
                    return
            await asyncio.sleep(_RECHECK_S)  # a bot restarting, one given up on, or the homeserver unreachable

    async def _drain(self) -> None:
        """Hand out queued transactions in order until one must wait (call with `_lock` held)."""
        while self._open and self._queue:
            key, body = self._queue[0]
            waiting = self.router.waiting_for(body)
            if waiting:
                logger.debug("transaction waits for its bots", txn_id=key, user_ids=waiting)
                return
            try:
                await self._route(key, body)
            except MatrixConnectionError as exc:
                logger.warning("transaction not handled yet; trying again", txn_id=key, error=str(exc))
                self._watch.doubt()
                return
            self._queue.popleft()

    def _enqueue(self, txn_id: str, body: Mapping[str, Any]) -> None:
        """Queue a transaction (call with `_lock` held); its key is its own even when the homeserver reuses ids."""
        self._queue.append((f"{txn_id}#{next(self._serial)}", body))
        if len(self._queue) > _QUEUE_LIMIT:
            dropped, _ = self._queue.popleft()
            logger.warning("transaction dropped: too many wait for a bot", txn_id=dropped)

    async def _after_outage(self, last_heard_ms: int) -> None:
        """The homeserver is back: what it kept comes now, the devices' inboxes are read, missed events fetched."""
        await self.ping()
        for inbox in list(self._inboxes):
            await inbox.tidy()
        readers = self.router.readers()
        missed = await missed_events(self._link, readers, self._seen, last_heard_ms)
        async with self._lock:
            fresh = self._seen.fresh(missed)  # a transaction may have brought some while they were fetched
            if fresh:
                self._enqueue("catch-up", {"events": fresh})
            await self._drain()
        self._kick()
        logger.info("caught up after the homeserver came back", events=len(fresh), rooms=len(readers))

    # -- the homeserver's side -------------------------------------------------------------------------
    def _refusal(self, request: web.Request) -> web.Response | None:
        """None when the request shows the hs_token (in the header, the query, or both alike); else 401 when it
        shows none and 403 when it shows another, as the application service API says."""
        header = request.headers.get("Authorization")
        query = request.query.get("access_token")
        if header is None and query is None:
            return _error(401, "M_UNAUTHORIZED", "no hs_token given")
        shown: list[str | None] = []
        if header is not None:
            scheme, _, token = header.strip().partition(" ")
            shown.append(token.strip() if scheme.lower() == "bearer" else None)
        if query is not None:
            shown.append(query)
        expected = _utf8(self.registration.hs_token)
        if all(token is not None and secrets.compare_digest(_utf8(token), expected) for token in shown):
            return None
        return _error(403, "M_FORBIDDEN", "wrong hs_token")

    async def _ping(self, request: web.Request) -> web.Response:
        refusal = self._refusal(request)
        return refusal if refusal is not None else web.json_response({})

    async def _unknown(self, request: web.Request) -> web.Response:
        refusal = self._refusal(request)
        if refusal is not None:
            return refusal
        return _error(404, "M_NOT_FOUND", "the daemon creates no users or rooms on demand")

    async def _transaction(self, request: web.Request) -> web.Response:
        refusal = self._refusal(request)
        if refusal is not None:
            return refusal
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "M_NOT_JSON", "the transaction is not JSON")
        if not isinstance(body, dict):
            return _error(400, "M_BAD_JSON", "the transaction is not an object")
        txn_id = request.match_info["txn_id"]
        async with self._lock:  # one at a time, in order, whatever the homeserver does
            events = body.get("events")
            if isinstance(events, list):
                fresh = self._seen.fresh(events)
                numbering = self._numbering(txn_id, has_new=bool(fresh))
                if numbering == "renumbered":
                    logger.info("homeserver restarted: it numbers its transactions from the start again", txn_id=txn_id)
                    self._watch.restarted()
                elif numbering == "skipped":
                    logger.info("homeserver skipped transactions; fetching the events they held", txn_id=txn_id)
                    self._watch.restarted()
                if len(fresh) != len(events):
                    body = {**body, "events": fresh}  # a transaction sent again: what it still brings is new
            self._watch.heard()
            self._enqueue(txn_id, body)
            await self._drain()
        self._kick()
        return web.json_response({})

    def _numbering(self, txn_id: str, *, has_new: bool) -> str | None:
        """What a transaction's number tells: `renumbered` when it has new events and is no higher than the last
        one's, `skipped` when it is past the next: the homeserver sends its transactions one at a time, in order,
        so those in between are stored and not sent (Synapse leaves one so when events come just as it finishes
        catching the service up); else None."""
        if not (txn_id.isascii() and txn_id.isdigit() and len(txn_id) <= _NUMBER_DIGITS):
            return None  # ids are opaque: only plain numbers tell an order
        number, last = int(txn_id), self._last_number
        if last is not None and number <= last and not has_new:
            return None  # a transaction sent again
        self._last_number = number
        if last is None or last + 1 == number:
            return None
        return "renumbered" if number <= last else "skipped"

    async def _route(self, key: str, body: Mapping[str, Any]) -> None:
        for user_id, (inbox, part) in self.router.split(key, body).items():
            try:
                await inbox.receive(part)
            except MatrixConnectionError:
                raise
            except Exception:
                # One bot's failure must not hold back the others' events (it would be sent again forever).
                logger.exception("transaction part failed", user_id=user_id, txn_id=key)
            self.router.received(key, user_id)

    async def __aenter__(self) -> Appservice:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            await self.stop()


async def listening_appservice(registration: Path | None, homeserver_url: str) -> Appservice | None:
    """The started appservice of the registration file at `registration` (what the homeserver sends is queued
    until `open()`), or None (sync mode) when there is none."""
    if registration is None:
        return None
    appservice = Appservice(AppserviceRegistration.load(registration), homeserver_url)
    await appservice.start()
    return appservice
