"""Every tool call, built-in or plugin, goes through `call_tool`: `tool:before_call` gate, the tool, `tool:after_call`.

The model always gets text back. A declined call becomes a declined result that names the reason (the
tool never runs); a tool that raises becomes an error result; either way `tool:after_call` still fires.
An `isolated` tool runs in a worker process under its limits (`mindroom.tool_system.isolation`), an
`in_thread` one in a worker thread, anything else on the event loop. The body runs through
`tool_hooks._call_tool`, looked up at each call, so a plugin that replaces it wraps every call.
Hooks see deep copies of the arguments and of the result, and the model's text is fixed before any
observer runs, so a hook cannot change what the tool receives or what the model reads.

The turn's registry, room, thread and requester come from the `ToolRuntimeContext` bound around the
generation (`bind_runtime_context`), so one set of tool objects serves every turn of an agent. So does
its approval requester: a gate's `request_approval` asks about the call as the model asked for it.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, ClassVar

from mindroom.hooks.context import ToolAfterCallContext, ToolBeforeCallContext, ToolTraceEntry
from mindroom.hooks.execution import emit, emit_gate
from mindroom.hooks.registry import HookRegistry
from mindroom.hooks.tool_contexts import ApprovalRequest, ApprovalRequester
from mindroom.hooks.types import EVENT_TOOL_AFTER_CALL, EVENT_TOOL_BEFORE_CALL
from mindroom.logging_config import get_logger
from mindroom.tool_system.approval_rules import rule_gate
from mindroom.tool_system.environment import bind_tool_environment, collect_tool_environment
from mindroom.tool_system.files_out import admit_files
from mindroom.tool_system.isolation import run_isolated
from mindroom.tool_system.runtime_context import (
    ToolCallRecord,
    ToolRuntimeContext,
    get_runtime_context,
    provided_registry,
)
from mindroom.tool_system.spec import ToolError, ToolOutput, ToolSpec

__all__ = [
    "MAX_ERROR_CHARS",
    "MAX_RESULT_CHARS",
    "ToolBodyRunner",
    "call_tool",
    "declined_result",
    "failed_result",
    "result_text",
    "run_tool_body",
    "tool_trace",
]

logger = get_logger(__name__)
# Hook contexts bind a logger when given none; the engine replaces it per hook anyway, so bind these once.
_BEFORE_LOGGER = get_logger("mindroom.plugins").bind(event_name=EVENT_TOOL_BEFORE_CALL)
_AFTER_LOGGER = get_logger("mindroom.plugins").bind(event_name=EVENT_TOOL_AFTER_CALL)

MAX_RESULT_CHARS = 100_000
MAX_ERROR_CHARS = 2_000
_PREVIEW_CHARS = 200


def declined_result(tool_name: str, reason: str) -> str:
    """What the model reads when a `tool:before_call` gate declines a call."""
    return (
        f"[TOOL CALL DECLINED]\nTool: {tool_name}\nReason: {reason}\n\n"
        "The tool did not run. Try a different approach or different arguments."
    )


def _error_detail(error: BaseException) -> str:
    detail = str(error) if isinstance(error, ToolError) else f"{type(error).__name__}: {error}"
    if len(detail) > MAX_ERROR_CHARS:
        return detail[:MAX_ERROR_CHARS] + " [error truncated]"
    return detail


def failed_result(tool_name: str, error: BaseException) -> str:
    """What the model reads when a tool raises."""
    return f"[TOOL CALL FAILED]\nTool: {tool_name}\nError: {_error_detail(error)}"


def result_text(value: Any) -> str:
    """A tool's return value as the text the model reads (JSON for data, capped in length)."""
    if isinstance(value, str):
        text = value
    elif value is None:
        text = "(no output)"
    elif isinstance(value, bytes):
        text = value.decode("utf-8", errors="replace")
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = str(value)
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + f"\n[result truncated to {MAX_RESULT_CHARS} characters]"
    return text


_ATOMS = (str, int, float, bool, type(None))


def _copy(value: Any) -> Any:
    """A deep copy; JSON-shaped data (what models send and most tools return) is copied without `deepcopy`."""
    if isinstance(value, _ATOMS):
        return value
    if type(value) is dict:
        return {key: _copy(item) for key, item in value.items()}
    if type(value) is list:
        return [_copy(item) for item in value]
    return copy.deepcopy(value)


def _hook_copy(value: Any, fallback: Any) -> Any:
    try:
        return _copy(value)
    except Exception:  # an uncopyable result: hooks get the model's text instead of a shared object
        return fallback


def _scope(bound: ToolRuntimeContext | None, agent_name: str) -> dict[str, Any]:
    if bound is None:
        return {"agent_name": agent_name}
    scope: dict[str, Any] = {
        "agent_name": agent_name,
        "room_id": bound.room_id,
        "thread_id": bound.thread_id,
        "requester_id": bound.requester_id,
        "session_id": bound.session_id,
        "config": bound.config,
        "runtime_paths": bound.runtime_paths,
        "message_sender": bound.message_sender,
        "room_state_querier": bound.room_state_querier,
        "room_state_putter": bound.room_state_putter,
    }
    if bound.correlation_id:
        scope["correlation_id"] = bound.correlation_id
    return scope


def _approvals(bound: ToolRuntimeContext | None, tool_name: str, asked: Any) -> ApprovalRequester | None:
    requester = bound.approval_requester if bound is not None else None
    if requester is None:
        return None
    bound_requester = requester

    async def ask(request: ApprovalRequest) -> bool:
        # The call as the model asked for it, whatever a hook did to its own copy: a replayed turn asks the same.
        return await bound_requester(dataclasses.replace(request, tool_name=tool_name, arguments=_copy(asked)))

    return ask


async def _invoke(spec: ToolSpec, arguments: dict[str, Any]) -> Any:
    function = spec.function
    if spec.isolated:
        return await run_isolated(spec, arguments)
    if spec.in_thread and not inspect.iscoroutinefunction(function):
        result = await asyncio.to_thread(function, **arguments)
    else:
        result = function(**arguments)
    if inspect.isawaitable(result):
        result = await result
    return result


async def run_tool_body(
    func: Callable[..., Awaitable[Any]],
    args: dict[str, Any],
    *,
    tool_name: str,
    agent_name: str | None,
) -> Any:
    """Run one tool's body, `await func(**args)`: `tool_hooks._call_tool` until a plugin replaces it."""
    return await func(**args)


class ToolBodyRunner:
    """The function every tool body runs through; `tool_hooks._call_tool` reads and replaces `current`."""

    current: ClassVar[Callable[..., Awaitable[Any]]] = run_tool_body


async def _run_body(spec: ToolSpec, agent_name: str, args: dict[str, Any]) -> Any:
    async def body(**arguments: Any) -> Any:
        return await _invoke(spec, arguments)

    # Read at each call: a plugin may have replaced it since the tool was built.
    if spec.timeout_s is None:
        return await ToolBodyRunner.current(body, args, tool_name=spec.name, agent_name=agent_name)
    try:
        async with asyncio.timeout(spec.timeout_s) as deadline:
            return await ToolBodyRunner.current(body, args, tool_name=spec.name, agent_name=agent_name)
    except TimeoutError:
        if not deadline.expired():
            raise  # the tool's own timeout (an HTTP client's), not ours
        # A thread cannot be stopped: it finishes on its own, and what it returns is dropped.
        raise ToolError(f"the tool did not finish within {spec.timeout_s:g} s and was abandoned") from None


def _deliver(value: Any, bound: ToolRuntimeContext | None, spec: ToolSpec, agent_name: str) -> str:
    """The model's text for a tool's return value; the files of a `ToolOutput` go to the turn's outbox."""
    if not isinstance(value, ToolOutput):
        return result_text(value)
    if not value.files:
        return result_text(value.text)
    if bound is None:
        logger.warning("tool files dropped: no turn to send them with", tool=spec.name, agent=agent_name)
        return result_text(value.text)
    before = len(bound.outbox)
    refused = admit_files(value.files, bound)
    names = ", ".join(file.name for file in bound.outbox[before:])
    notes = [f"[attached to your answer: {names}]"] if names else []
    return "\n".join([result_text(value.text), *notes, *(f"[{note}]" for note in refused)])


def _cancelled_from_outside() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def call_tool(spec: ToolSpec, agent_name: str, arguments: Mapping[str, Any]) -> str:
    """Run one tool call of `agent_name` through the tool hooks; returns the text the model reads.

    `duration_ms` in `tool:after_call` is the tool's own run time, or the time until the decline.
    """
    started = time.perf_counter()
    bound = get_runtime_context()
    registry: HookRegistry | None = bound.registry if bound is not None else provided_registry()
    room_id = bound.room_id if bound is not None else None
    args = dict(arguments)
    asked = _copy(args)  # what the model asked for, apart from anything the tool does to its own arguments
    scope: dict[str, Any] | None = None
    error: BaseException | None = None
    value: Any = None
    declined = False
    if registry is not None and registry.matching(EVENT_TOOL_BEFORE_CALL, agent_name, room_id):
        scope = _scope(bound, agent_name)
        gate = ToolBeforeCallContext(
            tool_name=spec.name,
            arguments=_copy(asked),
            logger=_BEFORE_LOGGER,
            approval_requester=_approvals(bound, spec.name, asked),
            **scope,
        )
        await emit_gate(registry, EVENT_TOOL_BEFORE_CALL, gate)
        declined = gate.declined
        if declined:
            value = text = declined_result(spec.name, gate.decline_reason)
            logger.info("tool call declined", tool=spec.name, agent=agent_name, reason=gate.decline_reason)
        else:
            started = time.perf_counter()
    if not declined:
        # The operator's approval rules, after the plugins' gates: a call a hook declines asks nobody.
        refusal = await rule_gate(spec.name, agent_name, asked, bound)
        if refusal is not None:
            declined = True
            value = text = declined_result(spec.name, refusal)
            logger.info("tool call not approved", tool=spec.name, agent=agent_name, reason=refusal)
        started = time.perf_counter()
    if not declined:
        try:
            # `tool:environment` comes after the gate: a declined call never asks for an environment.
            environment = await collect_tool_environment(spec.name, spec.toolkit, asked, agent_name)
            with bind_tool_environment(environment):
                value = await _run_body(spec, agent_name, args)
        except (KeyboardInterrupt, GeneratorExit):
            raise
        except asyncio.CancelledError as exc:
            if _cancelled_from_outside():
                raise
            error = exc
        except BaseException as exc:  # tool code may raise anything; the model gets an error result instead
            error = exc
        if error is not None:
            text = failed_result(spec.name, error)
            logger.warning("tool call failed", tool=spec.name, agent=agent_name, error=_error_detail(error))
        else:
            text = _deliver(value, bound, spec, agent_name)
    duration_ms = (time.perf_counter() - started) * 1000.0
    if bound is not None:
        failure = None if error is None else _error_detail(error)
        bound.calls.append(ToolCallRecord(spec.name, asked, text, failure, declined, duration_ms))
    if registry is not None and registry.matching(EVENT_TOOL_AFTER_CALL, agent_name, room_id):
        after = ToolAfterCallContext(
            tool_name=spec.name,
            arguments=_copy(asked),
            logger=_AFTER_LOGGER,
            result=None if error is not None else _hook_copy(value, text),
            error=error,
            blocked=declined,
            duration_ms=duration_ms,
            **(scope if scope is not None else _scope(bound, agent_name)),
        )
        await emit(registry, EVENT_TOOL_AFTER_CALL, after)
    return text


def tool_trace(records: Iterable[ToolCallRecord]) -> list[ToolTraceEntry] | None:
    """The turn's tool calls as the `ResponseDraft.tool_trace` entries hooks see (None when there were none)."""
    entries = [
        ToolTraceEntry(
            tool_name=record.tool_name,
            args_preview=json.dumps(dict(record.arguments), ensure_ascii=False, default=str)[:_PREVIEW_CHARS],
            result_preview=None if record.error is not None else record.result[:_PREVIEW_CHARS],
            error=record.error,
            blocked=record.blocked,
        )
        for record in records
    ]
    return entries or None
