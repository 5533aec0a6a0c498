"""Isolated tool calls: a tool runs in a warm worker process under hard limits, and an overrun kills the worker.

A thread cannot be stopped, so a tool whose cost the model's arguments decide (a calculator asked for
`round(1, -10**8)`) runs in a separate process and the event loop only waits on a pipe. Before each call
the worker lowers its `RLIMIT_AS` and `RLIMIT_CPU` to the call's `IsolationLimits`; the parent kills it
when the wall-clock timeout passes. Either way the call fails with a `ToolError` the model reads, and a
fresh worker takes the dead one's place. Workers die with the daemon (`PR_SET_PDEATHSIG`).

Built-in tools opt in with `ToolSpec(isolated=True)`; plugin tools with the `@isolated(...)` marker.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from mindroom.config.environment import process_environ
from mindroom.logging_config import get_logger
from mindroom.tool_system.runtime_context import set_registry_provider
from mindroom.tool_system.spec import IsolationLimits, ToolError, ToolSpec

__all__ = [
    "DEFAULT_POOL_SIZE",
    "MAX_ANSWER_BYTES",
    "FunctionReference",
    "IsolatedWorkerPool",
    "close_tool_runtime",
    "function_reference",
    "isolated",
    "isolation_limits",
    "run_isolated",
    "shared_pool",
]

logger = get_logger(__name__)

DEFAULT_POOL_SIZE = 2
MAX_ANSWER_BYTES = 16 * 1024 * 1024
_MARKER = "__mindroom_isolation__"
_READ_CHUNK = 65536
_F = TypeVar("_F", bound=Callable[..., Any])


def isolated(*, timeout_s: float = 10.0, memory_mb: int = 512, cpu_s: float | None = None) -> Callable[[_F], _F]:
    """Mark a plugin tool function to run in a worker process under these limits."""
    limits = IsolationLimits(timeout_s=timeout_s, memory_bytes=memory_mb * 1024 * 1024, cpu_s=cpu_s)

    def mark(function: _F) -> _F:
        setattr(function, _MARKER, limits)
        return function

    return mark


def isolation_limits(function: Callable[..., Any]) -> IsolationLimits | None:
    """The limits `@isolated` set on `function`, or None when it is not marked."""
    limits = getattr(function, _MARKER, None)
    return limits if isinstance(limits, IsolationLimits) else None


@dataclass(frozen=True, slots=True)
class FunctionReference:
    """How a worker finds a module-level function: its module (with the file, for plugin modules) and name."""

    module: str
    qualname: str
    file: str | None = None
    package: str | None = None
    package_path: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """The reference as the worker reads it."""
        return {
            "module": self.module,
            "qualname": self.qualname,
            "file": self.file,
            "package": self.package,
            "package_path": list(self.package_path),
        }


def function_reference(function: Callable[..., Any]) -> FunctionReference:
    """Where `function` (unwrapped) is defined; `ValueError` unless a worker can import it by that name."""
    target = inspect.unwrap(function)
    module_name = getattr(target, "__module__", None)
    qualname = getattr(target, "__qualname__", "")
    module = sys.modules.get(module_name or "")
    if module is None or not qualname or "<" in qualname:
        msg = f"an isolated tool must be a module-level function, not {qualname or function!r}"
        raise ValueError(msg)
    try:
        found: Any = functools.reduce(getattr, qualname.split("."), module)
    except AttributeError:
        found = None
    if not callable(found) or inspect.unwrap(found) is not target:
        msg = f"{module_name}.{qualname} is not reachable by its name, so a worker could not import it"
        raise ValueError(msg)
    package = module.__package__ or None
    package_module = sys.modules.get(package or "")
    return FunctionReference(
        module=module.__name__,
        qualname=qualname,
        file=getattr(module, "__file__", None),
        package=package,
        package_path=tuple(getattr(package_module, "__path__", ())),
    )


class _WorkerDiedError(Exception):
    """The worker closed its answer pipe: it exited or was killed in the middle of a call."""


async def _ready(add: Callable[..., None], remove: Callable[[int], object], fd: int) -> None:
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def wake() -> None:
        if not future.done():
            future.set_result(None)

    add(fd, wake)
    try:
        await future
    finally:
        remove(fd)


class _Worker:
    """One worker process and the non-blocking pipe ends the parent talks to it through."""

    def __init__(self, preload: list[str]) -> None:
        search = [entry for entry in sys.path if entry]
        env = {**process_environ(), "PYTHONPATH": os.pathsep.join(search)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mindroom.tool_system.isolation_worker", str(os.getpid()), *preload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self._to = self.process.stdin.fileno()
        self._from = self.process.stdout.fileno()
        os.set_blocking(self._to, False)
        os.set_blocking(self._from, False)

    async def exchange(self, request: bytes) -> bytes:
        """Send one request line and return the answer line."""
        loop = asyncio.get_running_loop()
        view = memoryview(request)
        while view:
            try:
                view = view[os.write(self._to, view) :]
            except BlockingIOError:
                await _ready(loop.add_writer, loop.remove_writer, self._to)
            except BrokenPipeError:
                raise _WorkerDiedError from None
        answer = bytearray()
        while not answer.endswith(b"\n"):
            try:
                chunk = os.read(self._from, _READ_CHUNK)
            except BlockingIOError:
                await _ready(loop.add_reader, loop.remove_reader, self._from)
                continue
            if not chunk:
                raise _WorkerDiedError
            answer += chunk
            if len(answer) > MAX_ANSWER_BYTES:
                raise ToolError(f"the tool's result is larger than {MAX_ANSWER_BYTES} bytes")
        return bytes(answer)

    def kill(self) -> None:
        """Stop the worker now and close the pipes (it is reaped later, by `reaped`)."""
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGKILL)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def reaped(self) -> bool:
        """Whether the killed process has been waited for (so it is no zombie)."""
        return self.process.poll() is not None


def _failure(answer: Mapping[str, Any], limits: IsolationLimits) -> ToolError:
    if answer.get("kind") == "memory":
        mebibytes = limits.memory_bytes // (1024 * 1024)
        return ToolError(f"the tool ran out of memory (limit {mebibytes} MiB) and was stopped")
    return ToolError(str(answer.get("error", "the tool failed")))


def _death(returncode: int | None, limits: IsolationLimits) -> ToolError:
    if returncode == -signal.SIGXCPU:
        return ToolError(f"the tool used more than {_cpu_budget(limits):g} s of CPU time and was stopped")
    return ToolError(f"the tool's worker process died (exit status {returncode}); the call did not finish")


def _cpu_budget(limits: IsolationLimits) -> float:
    return limits.cpu_s if limits.cpu_s is not None else limits.timeout_s + 1.0


class IsolatedWorkerPool:
    """Up to `size` warm worker processes for isolated tool calls, one call per worker at a time.

    Workers are plain processes, not tied to an event loop; only the wait for a free worker is.
    `close()` kills them all (the daemon's owner of the pool calls it on stop).
    """

    def __init__(self, size: int = DEFAULT_POOL_SIZE) -> None:
        self.size = size
        self._idle: list[_Worker] = []
        self._alive: set[_Worker] = set()
        self._dying: list[_Worker] = []
        self._preload: dict[str, None] = {}
        self._slots: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._slots is None or self._slots[0] is not loop:
            self._slots = (loop, asyncio.Semaphore(self.size))
        return self._slots[1]

    def _spawn(self) -> _Worker:
        worker = _Worker(list(self._preload))
        self._alive.add(worker)
        return worker

    def _discard(self, worker: _Worker, *, replace: bool) -> None:
        worker.kill()
        self._alive.discard(worker)
        self._dying.append(worker)
        self._reap()
        if replace and len(self._alive) < self.size:
            self._idle.append(self._spawn())

    def _reap(self) -> None:
        self._dying = [dying for dying in self._dying if not dying.reaped()]

    def warm(self) -> None:
        """Start one worker now, so the first call does not wait for a process to start."""
        if not self._idle and len(self._alive) < self.size:
            self._idle.append(self._spawn())

    async def call(self, reference: FunctionReference, arguments: Mapping[str, Any], limits: IsolationLimits) -> Any:
        """Run `reference(**arguments)` in a worker under `limits`; its JSON result, or `ToolError`."""
        try:
            request = {
                "reference": reference.as_json(),
                "arguments": dict(arguments),
                "memory_bytes": limits.memory_bytes,
                "cpu_s": _cpu_budget(limits),
            }
            line = json.dumps(request, ensure_ascii=False).encode() + b"\n"
        except (TypeError, ValueError) as exc:
            raise ToolError(f"the arguments are not plain JSON values: {exc}") from None
        self._preload.setdefault(reference.module)
        self._reap()
        async with self._semaphore():
            worker = self._idle.pop() if self._idle else self._spawn()
            try:
                async with asyncio.timeout(limits.timeout_s):
                    answer = json.loads(await worker.exchange(line))
            except TimeoutError:
                self._discard(worker, replace=True)
                logger.warning("isolated tool call stopped at its timeout", function=reference.qualname)
                raise ToolError(f"the tool ran longer than {limits.timeout_s:g} s and was stopped") from None
            except _WorkerDiedError:
                self._discard(worker, replace=True)
                returncode = await asyncio.to_thread(worker.process.wait)
                logger.warning("isolated tool worker died", function=reference.qualname, returncode=returncode)
                raise _death(returncode, limits) from None
            except BaseException:  # cancelled, or an answer too large or garbled: never reuse that worker
                self._discard(worker, replace=False)
                raise
            if answer.get("kind") == "memory":
                self._discard(worker, replace=True)
            else:
                self._idle.append(worker)
        if not answer.get("ok"):
            raise _failure(answer, limits)
        return answer.get("value")

    def close(self) -> None:
        """Kill every worker (calls still running fail)."""
        for worker in list(self._alive):
            self._discard(worker, replace=False)
        self._idle.clear()
        for worker in self._dying:
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.process.wait(timeout=1.0)
        self._reap()


class _Shared:
    """The one pool isolated tool calls share, made on first use."""

    pool: IsolatedWorkerPool | None = None


def shared_pool() -> IsolatedWorkerPool:
    """The daemon's pool of isolated-call workers (created, not started, on first use)."""
    if _Shared.pool is None:
        _Shared.pool = IsolatedWorkerPool()
    return _Shared.pool


async def run_isolated(spec: ToolSpec, arguments: Mapping[str, Any]) -> Any:
    """Run one call of an isolated tool in the shared pool under the tool's limits."""
    try:
        reference = function_reference(spec.function)
    except ValueError as exc:
        raise ToolError(f"{spec.name} cannot run isolated: {exc}") from None
    return await shared_pool().call(reference, arguments, spec.limits)


async def close_tool_runtime() -> None:
    """On shutdown: tools stop resolving the running hook registry, and the shared worker processes end."""
    set_registry_provider(None)
    shared_pool().close()
