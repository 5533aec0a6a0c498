"""Isolated plugins: `isolated: true` on a plugin entry runs its hooks in a worker process of their own.

A plugin that crashes (`os._exit`, a segfault, a kill) then takes down its worker, never the daemon. Each hook
call sends the context's plain-data parts (the dataclass fields that are JSON values: envelope, settings, ids;
not the config, the clients or the callbacks) to the plugin's worker (`mindroom.plugins.isolated_worker`),
which runs the hook on a read-only copy; what the hook set of the context's `MUTABLE_FIELDS` (a JSON value)
and its return value come back. The call is an ordinary hook call for the engine, so the hook's timeout, its
circuit breaker and its counters apply: a call cut off, or whose worker died, is a failure, the worker is
killed, and the next call starts a fresh one (`restarts` counts them). One call runs at a time per plugin.

The worker's context offers the real context's async methods (`send_message`, `query_room_state`, ...): while
the hook runs, each call comes back as a `{"call", "args", "kwargs"}` line, the daemon runs it on the real
context (its own checks and limits apply) and answers `{"value"}` or `{"error"}` on the worker's stdin. Only
the call in progress is served, so a worker cut off or replaced gets no answer, and a stopped plugin's call is
refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import inspect
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

from mindroom.config.environment import process_environ
from mindroom.hooks.hook_clock import hook_timeout_paused
from mindroom.logging_config import get_logger

__all__ = ["IsolatedPlugin", "IsolatedPlugins", "context_methods", "context_snapshot", "isolated_callback"]

logger = get_logger(__name__)

_WORKER_MODULE = "mindroom.plugins.isolated_worker"


class _UnserializableError(Exception):
    """A value with no plain-data form: the field is left out of the snapshot."""


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"__ctx__": _fields(value)}
    if isinstance(value, list | tuple | frozenset | set):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    raise _UnserializableError


def _fields(value: Any) -> dict[str, Any]:
    names = [item.name for item in dataclasses.fields(value)]
    if type(value).__dataclass_params__.frozen:  # type: ignore[attr-defined]
        # A value object's properties are derived values (`envelope.room_id` reads its target): carry them too.
        names += [name for name in dir(type(value)) if isinstance(getattr(type(value), name, None), property)]
    out: dict[str, Any] = {}
    for name in names:
        if name.startswith("_"):
            continue
        with contextlib.suppress(_UnserializableError):
            out[name] = _plain(getattr(value, name))
    return out


def context_snapshot(ctx: Any) -> dict[str, Any]:
    """The plain-data fields of a hook context (nested dataclasses too), as the worker rebuilds them."""
    return _fields(ctx)


def context_methods(ctx: Any) -> list[str]:
    """The public async methods of a hook context, which the worker's copy forwards to the daemon."""
    kind: type = type(ctx)
    return list(_methods_of(kind))


@functools.cache
def _methods_of(kind: type) -> tuple[str, ...]:
    # Looked up once per context class: every call of an isolated hook needs the list.
    return tuple(
        sorted(
            name
            for name in dir(kind)
            if not name.startswith("_") and inspect.iscoroutinefunction(getattr(kind, name, None))
        )
    )


class IsolatedPlugin:
    """One isolated plugin's worker process, started when needed and restarted after it dies."""

    def __init__(self, name: str, folder: Path, settings: Mapping[str, Any], deps_dir: Path | None = None) -> None:
        self.name = name
        self.folder = folder
        self.settings = dict(settings)
        self.deps_dir = deps_dir
        self.restarts = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._ready = False
        self._closed = False
        self._lock: asyncio.Lock | None = None

    def warm(self) -> None:
        """Start the worker now, so the first hook call does not wait for a process to start."""
        if self._process is None or self._process.poll() is not None:
            self._process, self._ready = self._spawn(), False

    def _spawn(self) -> subprocess.Popen[bytes]:
        search = [entry for entry in sys.path if entry]
        env = {**process_environ(), "PYTHONPATH": os.pathsep.join(search)}
        process = subprocess.Popen(
            [sys.executable, "-m", _WORKER_MODULE, str(os.getpid()), str(self.folder)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert process.stdin is not None
        # Settings go through the pipe, not the command line, where any local user could read them.
        deps = str(self.deps_dir) if self.deps_dir is not None else None
        process.stdin.write(json.dumps({"settings": self.settings, "deps_dir": deps}).encode() + b"\n")
        process.stdin.flush()
        return process

    def _kill(self, why: str) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGKILL)
        process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self.restarts += 1
        logger.warning("isolated plugin worker stopped", plugin=self.name, reason=why, returncode=process.returncode)

    async def call(self, hook_name: str, ctx: Any) -> Any:
        """Run `hook_name` on a snapshot of `ctx` in the worker; copy back its mutable fields; its return value."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        mutable = list(getattr(ctx, "MUTABLE_FIELDS", ()))
        methods = context_methods(ctx)
        snapshot = context_snapshot(ctx)
        fields = {"hook": hook_name, "context": snapshot, "mutable": mutable, "methods": methods}
        request = json.dumps(fields).encode() + b"\n"
        async with self._lock:
            if self._closed:  # a call of a registry a reload replaced: no worker is started for it any more
                msg = f"plugin {self.name}: its worker was stopped (reload or shutdown)"
                raise RuntimeError(msg)
            self.warm()
            process = self._process
            assert process is not None
            assert process.stdin is not None
            assert process.stdout is not None
            try:
                if not self._ready:
                    await self._started(process)
                process.stdin.write(request)
                process.stdin.flush()
                answer = await self._serve(process, ctx, methods)
            except BaseException:  # cut off (its timeout) or cancelled: the worker may be mid-hook
                self._kill("the call was cut off")
                raise
            if answer is None:
                returncode = process.wait()
                self._process = None
                self.restarts += 1
                logger.warning("isolated plugin worker died", plugin=self.name, hook=hook_name, returncode=returncode)
                msg = f"plugin {self.name}: its worker process died (exit status {returncode}) in hook {hook_name}"
                raise RuntimeError(msg)
        if not answer.get("ok"):
            raise RuntimeError(str(answer.get("error", "the isolated hook failed")))
        for name, value in (answer.get("fields") or {}).items():
            if name in getattr(ctx, "MUTABLE_FIELDS", ()):
                setattr(ctx, name, value)
        return answer.get("value")

    async def _serve(self, process: subprocess.Popen[bytes], ctx: Any, methods: list[str]) -> dict[str, Any] | None:
        """Run the context-method calls the hook makes until its answer comes; None when the worker died."""
        assert process.stdin is not None
        assert process.stdout is not None
        while True:
            line = await asyncio.to_thread(process.stdout.readline)
            if not line:
                return None
            message = json.loads(line)
            if "call" not in message:
                return dict(message)
            self._refuse_if_stopped(process, message)
            reply = await self._method(ctx, methods, message)
            self._refuse_if_stopped(process, message)  # stopped while the method ran: the worker gets nothing
            process.stdin.write(json.dumps(reply).encode() + b"\n")
            process.stdin.flush()

    def _refuse_if_stopped(self, process: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
        """A call from a worker stopped (reload, shutdown) or replaced meanwhile fails the hook call."""
        if self._closed or process is not self._process:
            msg = f"plugin {self.name}: context method {message.get('call')!s} refused: its worker was stopped"
            raise RuntimeError(msg)

    async def _method(self, ctx: Any, methods: list[str], message: dict[str, Any]) -> dict[str, Any]:
        """One context-method call from the worker, run on the real context: its value or its error."""
        name = str(message.get("call"))
        if name not in methods:
            return {"error": f"plugin {self.name}: the hook context has no method {name!r}"}
        args, kwargs = message.get("args") or [], message.get("kwargs") or {}
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            return {"error": f"plugin {self.name}: {name} called with malformed arguments"}
        try:
            value = await getattr(ctx, name)(*args, **kwargs)
        except Exception as exc:  # the method's failure is the hook's to handle, in the worker
            return {"error": f"{type(exc).__name__}: {exc}"}
        try:
            return {"value": _plain(value)}
        except _UnserializableError:
            return {"error": f"plugin {self.name}: {name} returned a value with no plain-data form"}

    async def _started(self, process: subprocess.Popen[bytes]) -> None:
        """Wait until the worker has loaded the plugin; a process starting is no part of the hook's time."""
        assert process.stdout is not None
        with hook_timeout_paused():
            line = await asyncio.to_thread(process.stdout.readline)
        answer = json.loads(line) if line.strip() else {}
        if answer.get("ready") is not True:
            why = answer.get("error") or f"exit status {process.wait()}"
            msg = f"plugin {self.name}: its worker process did not start ({why})"
            raise RuntimeError(msg)
        self._ready = True

    def close(self) -> None:
        """Stop the worker for good (a call still running fails, and later calls do not start another)."""
        self._closed = True
        if self._process is not None:
            self._kill("closed")
            self.restarts -= 1  # a stop asked for is no restart


def isolated_callback(plugin: IsolatedPlugin, hook_name: str) -> Callable[[Any], Coroutine[Any, Any, Any]]:
    """The callback the registry runs for one hook of an isolated plugin: the call, made in its worker."""

    async def run_isolated(ctx: Any) -> Any:
        """The hook, run in its plugin's worker."""
        return await plugin.call(hook_name, ctx)

    run_isolated.__qualname__ = f"isolated:{plugin.name}.{hook_name}"
    return run_isolated


class IsolatedPlugins:
    """The isolated plugins' workers, by plugin name; a reload replaces them and keeps their restart counts."""

    def __init__(self) -> None:
        self.plugins: dict[str, IsolatedPlugin] = {}

    def worker(
        self, name: str, folder: Path, settings: Mapping[str, Any], deps_dir: Path | None = None
    ) -> IsolatedPlugin:
        """A new worker for this plugin as loaded now; the previous one stops (a reload re-reads its code too)."""
        current = self.plugins.get(name)
        if current is not None:
            current.close()
        plugin = self.plugins[name] = IsolatedPlugin(name, folder, settings, deps_dir)
        if current is not None:
            plugin.restarts = current.restarts
        return plugin

    def keep_only(self, names: set[str]) -> None:
        """Stop the workers of plugins no longer isolated (or gone) after a reload."""
        for name in set(self.plugins) - names:
            self.plugins.pop(name).close()

    def close(self) -> None:
        """Stop every worker (on shutdown)."""
        for plugin in self.plugins.values():
            plugin.close()
        self.plugins.clear()
