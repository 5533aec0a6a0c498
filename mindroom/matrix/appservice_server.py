"""`Appservice`: the daemon's listener for the homeserver's transactions, and the bots receiving through it.

Every transaction is accepted: one the homeserver sees fail marks the service down, and the transactions it
then stores for later keep their room events but lose their to-device messages (room keys). So transactions
are queued in-process and handed out in order: the queue is held until `open()` (every bot signed in and
receiving), and while a transaction concerns a bot between two instances (a reload restarting it). The
transaction ids are remembered, so one sent twice is taken once.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import uuid
from collections import OrderedDict, deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
from aiohttp import web

from mindroom.logging_config import get_logger
from mindroom.matrix.appservice import AppserviceConfigError, AppserviceRegistration
from mindroom.matrix.errors import MatrixConnectionError
from mindroom.matrix.inbox import TIDY_INTERVAL_S, BotInbox
from mindroom.matrix.transactions import TransactionRouter
from mindroom.state.tokens import SyncTokens

__all__ = ["Appservice", "listening_appservice"]

logger = get_logger(__name__)

_PREFIX = "/_matrix/app/v1"
_MAX_BODY_BYTES = 64 * 1024 * 1024
_REMEMBERED_TRANSACTIONS = 1024
_PING_ATTEMPTS = 5
_PING_INTERVAL_S = 1.0
_RECHECK_S = 1.0
_QUEUE_LIMIT = 10_000
"""Transactions kept while held; beyond this the oldest is dropped (a bot that never comes back)."""
_UNSUPPORTED = frozenset({"M_UNRECOGNIZED", "M_NOT_FOUND"})


def _error(status: int, errcode: str, error: str) -> web.Response:
    return web.json_response({"errcode": errcode, "error": error}, status=status)


def _utf8(token: str) -> bytes:
    # Header bytes that are not UTF-8 reach us as lone surrogates; they must compare unequal, not raise.
    return token.encode("utf-8", "surrogatepass")


class Appservice:
    """Listens where the registration says: `start()` before the bots sign in, `open()` once they all receive,
    `stop()` before they stop."""

    def __init__(self, registration: AppserviceRegistration, homeserver_url: str) -> None:
        self.registration = registration
        self.router = TransactionRouter()
        self._homeserver_url = homeserver_url.rstrip("/")
        self._runner: web.AppRunner | None = None
        self._lock = asyncio.Lock()
        self._done: OrderedDict[str, None] = OrderedDict()
        self._queue: deque[tuple[str, Mapping[str, Any]]] = deque()
        """Accepted transactions not handed out yet, oldest first."""
        self._open = False
        self._watch: asyncio.Task[None] | None = None

    # -- the bots' side --------------------------------------------------------------------------------
    async def serve(self, inbox: BotInbox, tokens: SyncTokens, ready: asyncio.Event) -> None:
        """One bot's receiving, until cancelled: catch up, then take its part of every transaction."""
        await inbox.catch_up(tokens)
        self.router.attach(inbox)
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
        """Stop listening (a transaction being handled finishes; later ones wait in the homeserver)."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.cancel()
            await asyncio.gather(watch, return_exceptions=True)
        if self._queue:
            logger.warning("transactions not handed out at stop", transactions=len(self._queue))
            self._queue.clear()
        self._open = False

    def open(self) -> None:
        """Every bot of this run receives: hand out what was queued, and each transaction from now on."""
        self._open = True
        self._kick()

    async def ping(self) -> bool:
        """Ask the homeserver to ping the listener (and retry what it kept); True when it got through.

        A homeserver without the ping endpoint counts as reached: the first transaction will tell.
        """
        url = f"{self._homeserver_url}/_matrix/client/v1/appservice/{quote(self.registration.id, safe='')}/ping"
        headers = {"Authorization": f"Bearer {self.registration.as_token}"}
        try:
            async with (
                aiohttp.ClientSession() as session,
                session.post(url, json={"transaction_id": uuid.uuid4().hex}, headers=headers) as response,
            ):
                status = response.status
                body = await response.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError, OSError) as exc:
            logger.warning("appservice ping failed", appservice=self.registration.id, error=str(exc))
            return False
        errcode = body.get("errcode") if isinstance(body, dict) else None
        if status == 200:
            return True
        if status in (404, 405) and (errcode in _UNSUPPORTED or errcode is None):
            logger.info("homeserver has no appservice ping; not pinging", appservice=self.registration.id)
            return True
        logger.warning("appservice ping refused", appservice=self.registration.id, status=status, errcode=errcode)
        return False

    def _kick(self) -> None:
        """Hand out the queue in the background, and keep looking while something in it waits."""
        if self._queue and (self._watch is None or self._watch.done()):
            self._watch = asyncio.create_task(self._watch_queue(), name="appservice-queue")

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
            txn_id, body = self._queue[0]
            waiting = self.router.waiting_for(body)
            if waiting:
                logger.debug("transaction waits for its bots", txn_id=txn_id, user_ids=waiting)
                return
            try:
                await self._route(txn_id, body)
            except MatrixConnectionError as exc:
                logger.warning("transaction not handled yet; trying again", txn_id=txn_id, error=str(exc))
                return
            self._queue.popleft()

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
            if txn_id in self._done:
                return web.json_response({})
            self._done[txn_id] = None
            while len(self._done) > _REMEMBERED_TRANSACTIONS:
                self._done.popitem(last=False)
            self._queue.append((txn_id, body))
            if len(self._queue) > _QUEUE_LIMIT:
                dropped, _ = self._queue.popleft()
                logger.warning("transaction dropped: too many wait for a bot", txn_id=dropped)
            await self._drain()
        self._kick()
        return web.json_response({})

    async def _route(self, txn_id: str, body: Mapping[str, Any]) -> None:
        for user_id, (inbox, part) in self.router.split(txn_id, body).items():
            try:
                await inbox.receive(part)
            except MatrixConnectionError:
                raise
            except Exception:
                # One bot's failure must not hold back the others' events (it would be sent again forever).
                logger.exception("transaction part failed", user_id=user_id, txn_id=txn_id)
            self.router.received(txn_id, user_id)

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
