"""The worker process of an isolated plugin: loads the plugin's folder once, then runs one hook call per line.

`mindroom.hooks.isolated` starts it as `python -m mindroom.plugins.isolated_worker PARENT_PID FOLDER`; the first
line in carries the plugin's settings, each later one `{"hook", "context", "mutable", "methods"}`. The hook gets
a read-only copy of the context's plain-data fields (nested ones by attribute, as in the daemon) and its async
`methods`, each of which sends a `{"call", "args", "kwargs"}` line to the daemon and waits for the `{"value"}`
or `{"error"}` line it runs on the real context; each answer line carries the context's `MUTABLE_FIELDS` as the
hook left them and its return value. Its stdout carries calls and answers only.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import io
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from types import SimpleNamespace
from typing import Any, BinaryIO

from mindroom.errors import MindroomError
from mindroom.hooks.decorators import get_hook_metadata
from mindroom.plugins.loader import load_plugin_dir

__all__ = ["ContextMethodError", "main", "rebuild", "serve"]

_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent_pid: int) -> None:
    """Get SIGKILL when the daemon dies, so no worker outlives it."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def rebuild(value: Any) -> Any:
    """A snapshot's value as the hook reads it: nested contexts by attribute, the rest as plain data."""
    if isinstance(value, dict):
        if set(value) == {"__ctx__"}:
            return SimpleNamespace(**{key: rebuild(item) for key, item in value["__ctx__"].items()})
        return {key: rebuild(item) for key, item in value.items()}
    if isinstance(value, list):
        return [rebuild(item) for item in value]
    return value


def _plain(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


class ContextMethodError(MindroomError, RuntimeError):
    """A context method the daemon ran for the hook failed (or was refused); the message says why."""


class _Channel:
    """The worker's side of its pipes: one context-method call at a time, while a hook runs."""

    def __init__(self, source: BinaryIO, sink: BinaryIO) -> None:
        self.source = source
        self.sink = sink
        self._lock = threading.Lock()

    def ask(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Have the daemon run `name` on the real context; its value, or its error raised."""
        line = json.dumps({"call": name, "args": list(args), "kwargs": kwargs}).encode() + b"\n"
        with self._lock:
            self.sink.write(line)
            self.sink.flush()
            reply = self.source.readline()
        if not reply:
            msg = f"{name}: the daemon closed the worker's channel"
            raise ContextMethodError(msg)
        answer = json.loads(reply)
        if "error" in answer:
            raise ContextMethodError(str(answer["error"]))
        return rebuild(answer.get("value"))

    def method(self, name: str) -> Callable[..., Coroutine[Any, Any, Any]]:
        """The worker's stand-in for the context's async method `name`."""

        async def forwarded(*args: Any, **kwargs: Any) -> Any:
            """The context method, run by the daemon."""
            return await asyncio.to_thread(self.ask, name, args, kwargs)

        forwarded.__name__ = name
        return forwarded


def _answer(hooks: dict[str, Any], line: bytes, settings: dict[str, Any], channel: _Channel) -> dict[str, Any]:
    request = json.loads(line)
    callback = hooks.get(request.get("hook"))
    if callback is None:
        return {"ok": False, "error": f"no hook named {request.get('hook')!r} in this plugin"}
    ctx = rebuild({"__ctx__": request.get("context") or {}})
    ctx.settings = settings
    for name in request.get("methods") or ():
        if isinstance(name, str) and not name.startswith("_"):
            setattr(ctx, name, channel.method(name))
    mutable = [name for name in request.get("mutable") or () if isinstance(name, str)]
    try:
        value = asyncio.run(callback(ctx))
    except Exception as exc:  # the hook's own failure goes back to the daemon, which counts it
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    fields = {name: _plain(getattr(ctx, name)) for name in mutable if hasattr(ctx, name)}
    return {"ok": True, "value": _plain(value), "fields": fields}


def serve(folder: str, source: BinaryIO, sink: BinaryIO) -> None:
    """Answer hook calls from `source` until it closes."""
    first = json.loads(source.readline() or b"{}")
    settings = first.get("settings") or {}
    deps_dir = first.get("deps_dir")
    try:
        plugin = load_plugin_dir(folder, settings, deps_dir=Path(deps_dir) if deps_dir else None)
    except Exception as exc:  # the daemon loaded it moments ago; whatever changed is told, not raised
        sink.write(json.dumps({"ready": False, "error": f"{type(exc).__name__}: {exc}"}).encode() + b"\n")
        sink.flush()
        return
    hooks: dict[str, Any] = {}
    for callback in plugin.discovered_hooks:
        meta = get_hook_metadata(callback)
        if meta is not None:
            hooks.setdefault(meta.hook_name, callback)
    sink.write(b'{"ready": true}\n')
    sink.flush()
    channel = _Channel(source, sink)
    for line in iter(source.readline, b""):
        answer = _answer(hooks, line, settings, channel)
        sink.write(json.dumps(answer).encode() + b"\n")
        sink.flush()


def main() -> None:
    """Entry point: `python -m mindroom.plugins.isolated_worker PARENT_PID FOLDER`."""
    _die_with_parent(int(sys.argv[1]))
    answers = os.fdopen(os.dup(1), "wb")
    # What the plugin prints (or writes to fd 1) must not garble the answers.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False))
    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
        serve(sys.argv[2], sys.stdin.buffer, answers)


if __name__ == "__main__":
    main()
