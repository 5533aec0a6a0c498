"""`StateConnection`: one PostgreSQL session per daemon on its own thread, holding the state's advisory lock.

The event loop never waits on the network for state: stores keep what they read in memory (the lock makes
this daemon the state's only writer) and hand every write to this thread, which applies them in order, in
one transaction per batch. Whatever reaches the database is therefore always a prefix of what the daemon
wrote, as if it had crashed a little earlier, which the journal and the stable transaction ids already
absorb. Every statement is idempotent (upserts, deletes), so a batch cut by a lost connection is applied
again after reconnecting.

The lock is a session-level advisory lock of the same session: when the daemon dies, its session ends
and the lock is free for a standby. When the connection drops, the thread reconnects and takes the lock
again; if another daemon took it meanwhile, the lock is lost: writes stop and `on_lost` is called.

The lock is fenced. Each time it is taken, the holder gets the next generation (`mindroom.fence`); every
batch of writes checks, in its transaction, that its generation is still the latest, and a session that
takes the lock back after a drop checks that nobody held it in between. A stale holder is lost, even when
the lock happened to be free again. And this daemon answers only while it can show it holds the lock
(`holds_lock`): a statement on the session succeeded less than `lease_s` ago (the thread checks every
`idle_check_s` when idle), and no failure was seen since. The moment the connection fails, claims are
refused; a holder that takes the lock from one that did not release it waits `lease_s` first, so the
two never answer at once.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg

from mindroom.backoff import Backoff
from mindroom.logging_config import get_logger
from mindroom.state.errors import StateError
from mindroom.state.postgres.schema import read_generation, release_generation, take_generation

__all__ = ["DEFAULT_LEASE_S", "StateConnection"]

logger = get_logger(__name__)

_T = TypeVar("_T")
_MAX_BATCH = 500
_CONNECT_TIMEOUT_S = 5
_RECONNECT = Backoff(first_s=0.2, max_s=1.0)
"""The waits between attempts to reach the state database again: short, since the lock's lease is running."""
DEFAULT_LEASE_S = 3.0
"""How long a successful statement shows that this daemon still holds the lock."""
# The server side notices a vanished client (a dead machine sends no FIN) after idle + interval * count
# seconds and ends its session, which frees the lock for a standby.
_SESSION_SETTINGS = (
    "SET tcp_keepalives_idle = 5",
    "SET tcp_keepalives_interval = 2",
    "SET tcp_keepalives_count = 3",
    "SET tcp_user_timeout = 10000",
    "SET idle_session_timeout = 0",
    "SET statement_timeout = 0",
)


@dataclass(frozen=True, slots=True)
class _Write:
    sql: str
    params: Sequence[Any]


@dataclass(frozen=True, slots=True)
class _Call:
    function: Callable[[psycopg.Connection[Any]], Any]
    future: concurrent.futures.Future[Any]


class _LostError(Exception):
    """The lock went to another daemon while this one was reconnecting, or the fence moved past this one."""


_STOP = object()


class StateConnection:
    """The writer thread and its session: `open()`, then `call`/`write`, `flush`, `close()`."""

    def __init__(
        self,
        url: str,
        lock_key: int,
        *,
        on_lost: Callable[[str], None] | None = None,
        reclaim: Callable[[psycopg.Connection[Any]], bool] | None = None,
        relocked: Callable[[psycopg.Connection[Any]], None] | None = None,
        idle_check_s: float = 0.5,
        lease_s: float = DEFAULT_LEASE_S,
    ) -> None:
        """`reclaim` ends this daemon's own earlier session when it still holds the lock after a reconnect;
        `relocked` runs on the new session once it holds the lock again (to name the holder anew)."""
        self._url = url
        self.lease_s = lease_s
        self._generation: int | None = None
        self._confirmed_at = float("-inf")
        self._healthy = False
        self._reclaim = reclaim
        self._relocked = relocked
        self._lock_key = lock_key
        self._on_lost = on_lost
        self._idle_check_s = idle_check_s
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._conn: psycopg.Connection[Any] | None = None
        self._locked = False
        self._lost: str | None = None
        self._stopping = threading.Event()
        self.writes = 0
        """Statements applied so far (for tests and benchmarks)."""

    @property
    def lost(self) -> str | None:
        """Why the lock was lost, or None while it was not."""
        return self._lost

    @property
    def generation(self) -> int | None:
        """The fence generation this daemon holds the lock as (None before it took it)."""
        return self._generation

    def holds_lock(self) -> bool:
        """True while this daemon can show it holds the lock: a statement succeeded on its locked session less
        than `lease_s` ago, and no failure came since. Any thread may ask; the answer costs no round trip."""
        return (
            self._locked
            and self._healthy
            and self._lost is None
            and time.monotonic() - self._confirmed_at < self.lease_s
        )

    # -- the caller's side ------------------------------------------------------------------------------

    def open(self) -> None:
        """Connect, then start the thread (blocks while connecting; `StateError` when the server cannot be reached)."""
        if self._thread is not None:
            return
        try:
            self._connect()
        except psycopg.Error as exc:
            raise StateError(f"cannot connect to the state database: {exc}") from exc
        # The session is handed to the thread here and used by no other thread from now on.
        self._thread = threading.Thread(target=self._run, name="state-writer", daemon=True)
        self._thread.start()

    def call(self, function: Callable[[psycopg.Connection[Any]], _T], timeout: float = 60.0) -> _T:
        """Run `function` on the session after every write queued before it; blocks the calling thread."""
        return self.submit(function).result(timeout)

    def submit(self, function: Callable[[psycopg.Connection[Any]], _T]) -> concurrent.futures.Future[_T]:
        """Queue `function` for the session; its future holds the result."""
        future: concurrent.futures.Future[_T] = concurrent.futures.Future()
        self._queue.put(_Call(function, future))
        return future

    def write(self, sql: str, params: Sequence[Any] = ()) -> None:
        """Queue one idempotent statement; returns at once (applied in order, soon)."""
        self._queue.put(_Write(sql, params))

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every write queued so far is applied; False when that took longer than `timeout`."""
        if self._thread is None or not self._thread.is_alive():
            return False
        try:
            self.call(lambda conn: None, timeout)
        except (concurrent.futures.TimeoutError, StateError):
            return False
        return True

    def close(self, timeout: float = 10.0) -> None:
        """Apply what is queued (up to `timeout`), end the session (which releases the lock), stop the thread."""
        if self._thread is None:
            return
        flushed = self.flush(timeout)
        if not flushed:
            logger.error("state writes not applied before closing", pending=self._queue.qsize())
        self._stopping.set()
        self._queue.put(_STOP)
        self._thread.join(timeout)
        self._thread = None

    # -- the thread's side ------------------------------------------------------------------------------

    def _connect(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        conn = psycopg.connect(
            self._url,
            autocommit=True,
            connect_timeout=_CONNECT_TIMEOUT_S,
            application_name="mindroom",
            keepalives=1,
            keepalives_idle=5,
            keepalives_interval=2,
            keepalives_count=3,
        )
        for statement in _SESSION_SETTINGS:
            conn.execute(statement)  # type: ignore[arg-type]  # constant text
        self._conn = conn

    def try_lock(self, conn: psycopg.Connection[Any]) -> bool:
        """On the thread: take the advisory lock if free (a no-op once held)."""
        if not self._locked:
            row = conn.execute("SELECT pg_try_advisory_lock(%s)", (self._lock_key,)).fetchone()
            self._locked = bool(row and row[0])
        return self._locked

    def take_generation(self, conn: psycopg.Connection[Any]) -> bool:
        """On the thread, with the lock just taken (tables made): become the next generation. Returns whether
        the previous holder released the lock cleanly; when not, it may answer until its lease runs out."""
        started = time.monotonic()
        self._generation, released = take_generation(conn)
        self._confirmed_at, self._healthy = started, True
        return released

    def _run(self) -> None:
        pending: object | None = None
        while not self._stopping.is_set():
            if pending is None:
                try:
                    pending = self._queue.get(timeout=self._idle_check_s)
                except queue.Empty:
                    pending = _Call(lambda conn: conn.execute("SELECT 1"), concurrent.futures.Future())
            if pending is _STOP:
                break
            if self._lost is not None:
                self._drop(pending)
                pending = None
                continue
            try:
                if isinstance(pending, _Write):
                    pending = self._apply_writes(pending)
                    continue
                assert isinstance(pending, _Call)
                self._apply_call(pending)
                pending = None
            except _LostError as lost:
                self._lose(str(lost))
                if isinstance(pending, _Call) and pending.future.done():
                    pending = None  # its caller has the error already
            except StateError as exc:
                # Only when closing with the database gone: what is left cannot be applied anymore.
                logger.error("state writes dropped", reason=str(exc), pending=self._queue.qsize())
                pending = None
            except Exception as exc:
                # The thread must outlive any one failure, or every later write would wait forever.
                logger.exception("state writer step failed", error=str(exc))
                pending = None
        if self._conn is not None:
            if self._locked and not self._conn.broken:
                # Released here, not by the disconnect: the server ends a closed session a moment later,
                # and a daemon starting right after this one stopped must find the lock free (and need not
                # wait out this one's lease).
                with contextlib.suppress(psycopg.Error):
                    if self._generation is not None:
                        release_generation(self._conn, self._generation)
                    self._conn.execute("SELECT pg_advisory_unlock(%s)", (self._lock_key,))
                self._locked = False
            self._conn.close()
            self._conn = None

    def _apply_writes(self, first: _Write) -> object | None:
        """Apply `first` and the writes queued behind it as one transaction; returns the item that ended the batch."""
        batch = [first]
        following: object | None = None
        while len(batch) < _MAX_BATCH:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if not isinstance(item, _Write):
                following = item
                break
            batch.append(item)
        self._with_reconnect(lambda conn: self._execute_batch(conn, batch))
        return following

    def _execute_batch(self, conn: psycopg.Connection[Any], batch: list[_Write]) -> None:
        try:
            with conn.transaction(), conn.cursor() as cursor:
                self._check_fence(cursor)
                for write in batch:
                    cursor.execute(write.sql, write.params)  # type: ignore[arg-type]  # the stores' constant SQL
        except psycopg.Error as exc:
            if conn.broken or conn.closed:
                raise  # the connection is gone: reconnect and apply the batch again
            if len(batch) == 1:
                # A statement the database refuses (bad data) is dropped alone; the others still apply.
                logger.error("state write refused by the database; dropped", error=str(exc))
                return
            for write in batch:
                self._execute_batch(conn, [write])
            return
        self.writes += len(batch)

    def _check_fence(self, cursor: psycopg.Cursor[Any]) -> None:
        """In a write transaction: the fence still names this daemon's generation (kept so until the commit)."""
        if self._generation is None:
            return
        row = cursor.execute("SELECT generation FROM mindroom.fence WHERE id = 1 FOR SHARE").fetchone()
        if row is None or int(row[0]) != self._generation:
            raise _LostError(f"the state's fence moved past this daemon's generation {self._generation}")

    def _apply_call(self, call: _Call) -> None:
        if not call.future.set_running_or_notify_cancel():
            return
        try:
            result = self._with_reconnect(call.function)
        except _LostError:
            call.future.set_exception(StateError("the state lock was lost"))
            raise
        except Exception as exc:
            call.future.set_exception(exc)
        else:
            call.future.set_result(result)

    def _with_reconnect(self, function: Callable[[psycopg.Connection[Any]], _T]) -> _T:
        retries = _RECONNECT.retries()
        while True:
            conn = self._conn
            if conn is not None and not conn.closed:
                started = time.monotonic()
                try:
                    result = function(conn)
                except psycopg.Error as exc:
                    if not conn.closed and not conn.broken:
                        raise
                    self._healthy = False  # from now until the lock is shown again, nothing is answered
                    logger.warning("state database connection lost; reconnecting", error=str(exc))
                else:
                    if self._locked:
                        self._confirmed_at, self._healthy = started, True
                    return result
            else:
                self._healthy = False
            if self._stopping.is_set():
                raise StateError("the state database connection is closed")
            try:
                was_locked, self._locked = self._locked, False
                self._connect()
                assert self._conn is not None
                if was_locked and not self._relock(self._conn):
                    raise _LostError("another daemon took the state while the database connection was down")
                logger.info("state database connection restored", locked=self._locked)
            except psycopg.OperationalError as exc:
                self._locked = was_locked
                delay = retries.next_wait()
                logger.warning("state database unreachable; retrying", error=str(exc), retry_in_s=delay)
                time.sleep(delay)

    def _relock(self, conn: psycopg.Connection[Any]) -> bool:
        """Take the lock again after a reconnect. The old session may still hold it (the server notices a dead
        client later than the client does); that one is this daemon's own, so it is ended, not yielded to."""
        for _attempt in range(50):
            if self.try_lock(conn):
                if self._generation is not None and read_generation(conn) != self._generation:
                    # Free again, but someone held it in between: what this daemon has in memory is stale.
                    conn.execute("SELECT pg_advisory_unlock(%s)", (self._lock_key,))
                    self._locked = False
                    return False
                if self._relocked is not None:
                    self._relocked(conn)
                return True
            if self._reclaim is None or not self._reclaim(conn):
                return False
            time.sleep(0.1)  # the ended session releases its locks as it exits
        return False

    def _lose(self, reason: str) -> None:
        self._lost = reason
        self._locked = False
        logger.error("state lock lost; this daemon must stop", reason=reason)
        if self._on_lost is not None:
            self._on_lost(reason)

    def _drop(self, item: object) -> None:
        if isinstance(item, _Call) and item.future.set_running_or_notify_cancel():
            item.future.set_exception(StateError(f"the state lock was lost: {self._lost}"))
