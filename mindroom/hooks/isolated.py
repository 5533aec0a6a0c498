"""Isolated plugins: `isolated: true` on a plugin entry runs its hooks in a worker process of their own.

A plugin that crashes (`os._exit`, a segfault, a kill) then takes down its worker, never the daemon. Each hook
call sends the context's plain-data parts (the dataclass fields that are JSON values: envelope, settings, ids;
not the config, the clients or the callbacks) to the plugin's worker (`mindroom.plugins.isolated_worker`),
which runs the hook on a read-only copy; what the hook set of the context's `MUTABLE_FIELDS` (a JSON value)
and its return value come back. The call is an ordinary hook call for the engine, so the hook's timeout, its
circuit breaker and its counters apply: a call cut off, or whose worker died, is a failure, the worker is
killed, and the next call starts a fresh one (`restarts` counts them). One call runs at a time per plugin.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
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

__all__ = ["IsolatedPlugin", "IsolatedPlugins", "context_snapshot", "isolated_callback"]

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


class IsolatedPlugin:
    """One isolated plugin's worker process, started when needed and restarted after it dies."""

    def __init__(self, name: str, folder: Path, settings: Mapping[str, Any]) -> None:
        self.name = name
        self.folder = folder
        self.settings = dict(settings)
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
        process.stdin.write(json.dumps({"settings": self.settings}).encode() + b"\n")
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
        request = json.dumps({"hook": hook_name, "context": context_snapshot(ctx), "mutable": mutable}).encode()
        request += b"\n"
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
                line = await asyncio.to_thread(process.stdout.readline)
            except BaseException:  # cut off (its timeout) or cancelled: the worker may be mid-hook
                self._kill("the call was cut off")
                raise
            if not line:
                returncode = process.wait()
                self._process = None
                self.restarts += 1
                logger.warning("isolated plugin worker died", plugin=self.name, hook=hook_name, returncode=returncode)
                msg = f"plugin {self.name}: its worker process died (exit status {returncode}) in hook {hook_name}"
                raise RuntimeError(msg)
        answer = json.loads(line)
        if not answer.get("ok"):
            raise RuntimeError(str(answer.get("error", "the isolated hook failed")))
        for name, value in (answer.get("fields") or {}).items():
            if name in getattr(ctx, "MUTABLE_FIELDS", ()):
                setattr(ctx, name, value)
        return answer.get("value")

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

    def worker(self, name: str, folder: Path, settings: Mapping[str, Any]) -> IsolatedPlugin:
        """A new worker for this plugin as loaded now; the previous one stops (a reload re-reads its code too)."""
        current = self.plugins.get(name)
        if current is not None:
            current.close()
        plugin = self.plugins[name] = IsolatedPlugin(name, folder, settings)
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
