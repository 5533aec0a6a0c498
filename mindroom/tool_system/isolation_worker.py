"""The worker process of isolated tool calls: one JSON request per line in, one JSON answer per line out.

`mindroom.tool_system.isolation` starts it as `python -m mindroom.tool_system.isolation_worker PARENT_PID
[MODULE ...]` (the modules are imported up front, so the first call after a restart is quick). Before each
call it lowers its own `RLIMIT_AS` and `RLIMIT_CPU` to the call's limits. Its stdout carries answers only:
whatever the tool prints is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import importlib
import importlib.machinery
import importlib.util
import inspect
import json
import math
import os
import resource
import signal
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any, BinaryIO

from mindroom.tool_system.spec import ToolError

__all__ = ["answer", "main", "serve"]

_PR_SET_PDEATHSIG = 1
_functions: dict[tuple[str, str], Callable[..., Any]] = {}


def _die_with_parent(parent_pid: int) -> None:
    """Get SIGKILL when the daemon dies, so no worker outlives it (even one stuck in a tool)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def _load_module(reference: Mapping[str, Any]) -> ModuleType:
    name = reference["module"]
    if name in sys.modules:
        return sys.modules[name]
    try:
        return importlib.import_module(name)
    except ImportError:
        if not reference.get("file"):
            raise
    # Plugin modules live under package names the plugin loader made up: rebuild that package here.
    package = reference.get("package")
    if package and package not in sys.modules:
        package_spec = importlib.machinery.ModuleSpec(package, None, is_package=True)
        package_spec.submodule_search_locations = list(reference.get("package_path") or [])
        package_module = importlib.util.module_from_spec(package_spec)
        package_module.__path__ = list(reference.get("package_path") or [])
        sys.modules[package] = package_module
    spec = importlib.util.spec_from_file_location(name, reference["file"])
    if spec is None or spec.loader is None:
        msg = f"cannot load {name} from {reference['file']}"
        raise ImportError(msg)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _function(reference: Mapping[str, Any]) -> Callable[..., Any]:
    key = (reference["module"], reference["qualname"])
    if key not in _functions:
        from pydantic import ConfigDict, validate_call

        target: Any = functools.reduce(getattr, reference["qualname"].split("."), _load_module(reference))
        # The same argument checking the model layer gives in-process tools.
        _functions[key] = validate_call(config=ConfigDict(arbitrary_types_allowed=True))(target)
    return _functions[key]


def _set_limits(memory_bytes: int, cpu_s: float) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = memory_bytes if hard == resource.RLIM_INFINITY else min(memory_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    # RLIMIT_CPU counts the whole life of the process, so the budget starts from what is used already.
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = math.ceil(usage.ru_utime + usage.ru_stime + cpu_s)
    resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))


def _plain(value: Any) -> Any:
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value


async def _awaited(value: Any) -> Any:
    return await value


def answer(line: bytes) -> tuple[bytes, bool]:
    """The answer line to one request line, and whether the worker must exit after sending it."""
    try:
        request = json.loads(line)
        function = _function(request["reference"])
        _set_limits(int(request["memory_bytes"]), float(request["cpu_s"]))
        value = function(**request["arguments"])
        if inspect.isawaitable(value):
            value = asyncio.run(_awaited(value))
        text = json.dumps({"ok": True, "value": _plain(value)}, ensure_ascii=False, default=str)
    except MemoryError:
        # The heap may be in any state after this: answer, then let the parent start a fresh worker.
        return b'{"ok": false, "kind": "memory"}\n', True
    except ToolError as exc:
        text = json.dumps({"ok": False, "kind": "refused", "error": str(exc)}, ensure_ascii=False)
    except BaseException as exc:  # tool code may raise anything; the model reads it as the tool's failure
        error = f"{type(exc).__name__}: {exc}"
        fatal = not isinstance(exc, Exception)
        return json.dumps({"ok": False, "kind": "failed", "error": error}, ensure_ascii=False).encode() + b"\n", fatal
    return text.encode() + b"\n", False


def serve(requests: BinaryIO, answers: BinaryIO) -> None:
    """Answer request lines until the parent closes the pipe (or a call leaves the worker unusable)."""
    for line in requests:
        text, fatal = answer(line)
        answers.write(text)
        answers.flush()
        if fatal:
            return


def main(argv: list[str]) -> None:
    """Run as the worker: bind to the parent's life, keep stdout for answers, preload, serve."""
    _die_with_parent(int(argv[0]))
    answers = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    for module in argv[1:]:
        # A module that cannot be preloaded fails its own call later, with its own error.
        with contextlib.suppress(Exception):
            importlib.import_module(module)
    serve(sys.stdin.buffer, answers)


if __name__ == "__main__":
    main(sys.argv[1:])
