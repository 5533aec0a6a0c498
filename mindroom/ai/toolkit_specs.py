"""agno toolkits named in config, built for one agent and turned into our tools (`ToolkitRef` -> `ToolSpec`s).

The toolkit's module is imported here, when the first agent that lists it is built. Each of its functions
becomes one `ToolSpec` run through `call_tool` like any other tool: synchronous functions in a worker thread
(a toolkit doing blocking I/O never stalls the event loop), each call under the toolkit's timeout. A
function's `ToolResult` becomes a `ToolOutput`: its text for the model, its images and files for the person.
Functions that take agno's `run_context` (the reasoning toolkit keeps its steps there) get one per turn.
A toolkit that acts with the requester's OAuth connection (`ToolkitRef.connection`) is built afresh for
each call with that person's token (`mindroom.tool_system.toolkit_connections`); the instance built here
only lists its functions, so no instance carries one person's token into another's call.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import mimetypes
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from mindroom.ai.tool_caller import CALLER_PARAMETERS, given_caller
from mindroom.logging_config import get_logger
from mindroom.tool_system.runtime_context import get_runtime_context
from mindroom.tool_system.spec import OutboundFile, ToolOutput, ToolSpec
from mindroom.tool_system.toolkit_connections import connection_argument, fit_credentials, placeholder_argument
from mindroom.tool_system.toolkits import ToolkitRef

if TYPE_CHECKING:
    from agno.run.base import RunContext
    from agno.tools.function import Function

__all__ = ["media_output", "toolkit_specs"]

logger = get_logger(__name__)

_RUN_CONTEXTS_KEPT = 64
_UNSUPPORTED = frozenset({"images", "videos", "audios", "files"})
"""What agno gives a toolkit function besides the model's arguments that it gets here too: the agent or team
running the call (agno's speech toolkits take it: `OpenAITools.generate_speech`, `ElevenLabsTools`)."""


class _RunContexts:
    """One agno `RunContext` per turn (by correlation id), for the toolkit functions that keep state in it."""

    by_turn: ClassVar[OrderedDict[str, RunContext]] = OrderedDict()
    lock: ClassVar[threading.Lock] = threading.Lock()  # toolkit functions run in worker threads

    @classmethod
    def current(cls) -> RunContext:
        from agno.run.base import RunContext

        bound = get_runtime_context()
        key = (bound.correlation_id if bound is not None else None) or "unbound"
        session = (bound.session_id if bound is not None else None) or key
        with cls.lock:
            context = cls.by_turn.get(key)
            if context is None:
                context = RunContext(run_id=key, session_id=session, session_state={})
                cls.by_turn[key] = context
                while len(cls.by_turn) > _RUN_CONTEXTS_KEPT:
                    cls.by_turn.popitem(last=False)
            return context


def _file_of(media: Any, fallback_name: str) -> OutboundFile | None:
    """One agno media artifact (Image, File, Audio, Video) as a file to send, when it has bytes or a local path."""
    data = getattr(media, "content", None)
    path = getattr(media, "filepath", None)
    if not isinstance(data, bytes) and path:
        try:
            data = Path(path).read_bytes()
        except OSError:
            data = None
    if not isinstance(data, bytes):
        return None  # only a URL: the model's text can carry it
    name = getattr(media, "filename", None) or getattr(media, "name", None) or (Path(path).name if path else None)
    name = str(name or fallback_name)
    mime = getattr(media, "mime_type", None) or mimetypes.guess_type(name)[0] or "application/octet-stream"
    return OutboundFile(name=name, data=data, mime_type=str(mime))


def media_output(value: Any) -> Any:
    """An agno `ToolResult` as a `ToolOutput` (text and files); any other value unchanged."""
    from agno.tools.function import ToolResult

    if not isinstance(value, ToolResult):
        return value
    files: list[OutboundFile] = []
    for kind in ("images", "files", "audios", "videos"):
        for index, media in enumerate(getattr(value, kind) or ()):
            found = _file_of(media, f"{kind[:-1]}-{index + 1}")
            if found is not None:
                files.append(found)
    return ToolOutput(value.content, tuple(files))


def _runner(function: Function, entrypoint: Callable[..., Any], needs_context: bool) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(entrypoint):

        async def run_async(**arguments: Any) -> Any:
            if needs_context:
                arguments["run_context"] = _RunContexts.current()
            return media_output(await entrypoint(**arguments))

        return run_async

    def run(**arguments: Any) -> Any:
        if needs_context:
            arguments["run_context"] = _RunContexts.current()
        return media_output(entrypoint(**arguments))

    run.__name__ = function.name
    return run


def _prepared(function: Function) -> tuple[Function, Callable[..., Any]]:
    """A copy of `function` with agno's processing of its entrypoint, and the entrypoint to call."""
    prepared = function.model_copy()
    prepared.process_entrypoint()
    entrypoint = prepared.entrypoint or function.entrypoint
    assert entrypoint is not None  # only functions with an entrypoint are made tools
    return prepared, entrypoint


def _for_requester(name: str, ref: ToolkitRef, needs_context: bool) -> Callable[..., Any]:
    """The function `name` of an instance built for this call with the requester's token."""
    connection = ref.connection
    assert connection is not None

    async def run_for_requester(**arguments: Any) -> Any:
        argument = await connection_argument(connection)
        toolkit = await asyncio.to_thread(_instance, ref, argument)
        fit_credentials(toolkit, connection)
        run = _runner(*_prepared(toolkit.get_async_functions()[name]), needs_context)
        if inspect.iscoroutinefunction(run):
            return await run(**arguments)
        return await asyncio.to_thread(run, **arguments)

    run_for_requester.__name__ = name
    return run_for_requester


def _instance(ref: ToolkitRef, extra: dict[str, Any]) -> Any:
    module = importlib.import_module(f"agno.tools.{ref.toolkit.module}")
    return getattr(module, ref.toolkit.class_name)(**{**ref.kwargs, **extra})


def _spec(function: Function, ref: ToolkitRef) -> ToolSpec | None:
    raw = function.entrypoint
    if raw is None:
        return None
    taken = set(inspect.signature(raw).parameters)
    if taken & _UNSUPPORTED:
        logger.warning(
            "toolkit function left out: it needs what agno injects",
            tool=ref.toolkit.name,
            function=function.name,
            parameters=sorted(taken & _UNSUPPORTED),
        )
        return None
    prepared, entrypoint = _prepared(function)
    per_call = ref.connection is not None
    run = (
        _for_requester(prepared.name, ref, "run_context" in taken)
        if per_call
        else _runner(prepared, entrypoint, "run_context" in taken)
    )
    if taken & CALLER_PARAMETERS:
        run = given_caller(run, frozenset(taken & CALLER_PARAMETERS))
    return ToolSpec(
        name=prepared.name,
        function=run,
        description=prepared.description or "",
        parameters=dict(prepared.parameters),
        in_thread=not per_call and not inspect.iscoroutinefunction(entrypoint),
        toolkit=ref.toolkit.name,
        timeout_s=ref.timeout_s,
    )


def toolkit_specs(ref: ToolkitRef) -> tuple[ToolSpec, ...]:
    """Build the toolkit `ref` names with its arguments and return its (filtered) functions as our tools.

    `ValueError` when `include_tools` or `exclude_tools` names a function the toolkit does not have.
    """
    toolkit = _instance(ref, placeholder_argument(ref.connection) if ref.connection is not None else {})
    functions = toolkit.get_async_functions()
    for label, names in (("Included", ref.include or ()), ("Excluded", ref.exclude)):
        unknown = [name for name in names if name not in functions]
        if unknown:
            msg = f"{label} tool(s) not present in the toolkit: {', '.join(unknown)} (it has {', '.join(functions)})"
            raise ValueError(msg)
    chosen = [
        function
        for name, function in functions.items()
        if (ref.include is None or name in ref.include) and name not in ref.exclude
    ]
    specs = (_spec(function, ref) for function in chosen)
    return tuple(spec for spec in specs if spec is not None)
