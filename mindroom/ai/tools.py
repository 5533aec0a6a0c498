"""Our tools as agno `Function`s, and agno toolkits from plugins as our tools: the only tool code touching agno.

Every `Function` built here runs `mindroom.tool_system.calls.call_tool`, so the tool hooks wrap each call
whatever the tool's origin. Build them once per agent and reuse them: the agent cache keys on their identity.
A plugin toolkit's function may take agno's `agent` or `team` parameter: it gets the agno agent or team that
runs the call (never a model argument, so the hooks do not see it); agno's other injected parameters are refused.
"""

from __future__ import annotations

import functools
import inspect
import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from mindroom.ai.tool_caller import CALLER, CALLER_PARAMETERS, given_caller, wants_caller
from mindroom.tool_system.calls import call_tool
from mindroom.tool_system.spec import ToolSpec
from mindroom.tool_system.toolkits import ToolkitRef

if TYPE_CHECKING:
    from agno.tools.function import Function

__all__ = ["agno_function", "agno_tools", "described", "foreign_tool_specs"]


@functools.cache
def _injected() -> frozenset[str]:
    """Parameters agno fills in itself (agent, team, run context, media): a plugin function may not need them."""
    from agno.utils.schema import AGNO_INJECTED_PARAMS, FRAMEWORK_INJECTED_PARAMS

    return frozenset({*FRAMEWORK_INJECTED_PARAMS, *AGNO_INJECTED_PARAMS, "fc"})


def described(spec: ToolSpec) -> ToolSpec:
    """`spec` with its description and JSON schema filled in from the callable, which validates its arguments."""
    if spec.parameters is not None and spec.description is not None:
        return spec
    from agno.tools.function import Function

    template = Function.from_callable(spec.function, name=spec.name)
    return replace(
        spec,
        function=template.entrypoint or spec.function,
        description=spec.description if spec.description is not None else (template.description or ""),
        parameters=spec.parameters if spec.parameters is not None else template.parameters,
    )


@functools.cache
def _function_class() -> type[Function]:
    """agno's `Function` with a cheap per-run copy (defined once agno is imported)."""
    from agno.tools.function import Function

    fresh = {name: attr.get_default() for name, attr in Function.__private_attributes__.items()}
    if any(value is not None for value in fresh.values()):
        msg = "agno's Function has private state that is not None by default; TurnFunction cannot share it"
        raise RuntimeError(msg)

    class TurnFunction(Function):
        """An agno `Function` for one of our tools, copied cheaply for each run of the (cached) agent.

        agno copies every tool of an agent at the start of each run, so that what one run writes into its
        copy (the agent, run context, media) reaches no other run, and processes each copy's entrypoint.
        Its copy rebuilds the parameters' JSON schema and resets each private attribute through pydantic,
        and the processing looks up which parameters agno supplies itself: about 20 us per tool and run.
        This copy starts from the same fresh private state in one assignment, keeps the template's
        answer to that lookup (it depends on the entrypoint alone), and shares the schema: the entrypoint
        is never processed (`skip_entrypoint_processing`), and agno's strict mode builds a new schema
        instead of editing this one, so nothing writes into it.
        """

        requires_connect: ClassVar[bool] = False
        """Answers agno's check for tools to connect at each run, which would otherwise go through pydantic's
        slow path for a missing attribute."""

        def __setattr__(self, name: str, value: Any) -> None:
            # agno sets six private attributes on each tool at each run; pydantic's `__setattr__` would only
            # store them in the same dict, after more checks.
            if name in fresh:
                self.__pydantic_private__[name] = value  # type: ignore[index]
            else:
                super().__setattr__(name, value)

        def _per_run_copy(self) -> Function:
            if self.user_input_schema is not None:  # the model layer writes answers into it: agno's own copy
                return super()._per_run_copy()
            # Private attributes are read and written in pydantic's dict: attribute access goes the slow way.
            state: dict[str, Any] = self.__pydantic_private__  # type: ignore[assignment]
            if state["_framework_params"] is None:
                state["_framework_params"] = self._resolve_framework_params()  # once, on the template
            copied = self.model_copy(deep=False)
            private = dict(fresh)
            private["_framework_params"] = set(state["_framework_params"])
            object.__setattr__(copied, "__pydantic_private__", private)
            return copied

        def process_entrypoint(self, strict: bool = False) -> None:
            """Nothing left to do for a per-run copy outside strict mode; else agno's processing."""
            private: dict[str, Any] = self.__pydantic_private__  # type: ignore[assignment]
            if strict or not self.skip_entrypoint_processing or private["_framework_params"] is None:
                super().process_entrypoint(strict=strict)

    return TurnFunction


def agno_function(spec: ToolSpec, agent_name: str) -> Function:
    """An agno `Function` that runs `spec` for `agent_name` through the tool hooks."""
    ready = described(spec)

    async def entrypoint(**arguments: Any) -> str:
        return await call_tool(ready, agent_name, arguments)

    # agno fills its `_agno_` parameters with the running agent and team; only tools that need them ask.
    async def entrypoint_with_caller(_agno_agent: Any = None, _agno_team: Any = None, **arguments: Any) -> str:
        token = CALLER.set((_agno_agent, _agno_team))
        try:
            return await call_tool(ready, agent_name, arguments)
        finally:
            CALLER.reset(token)

    return _function_class()(
        name=ready.name,
        description=ready.description,
        parameters=dict(ready.parameters or {}),
        entrypoint=entrypoint_with_caller if wants_caller(ready.function) else entrypoint,
        skip_entrypoint_processing=True,
    )


def agno_tools(specs: tuple[ToolSpec, ...], agent_name: str) -> tuple[Function, ...]:
    """The agno `Function`s for one agent's tools."""
    return tuple(agno_function(spec, agent_name) for spec in specs)


def _spec_from_function(function: Function) -> ToolSpec:
    entrypoint = function.entrypoint
    if entrypoint is None:
        msg = f"agno Function {function.name!r} has no entrypoint"
        raise ValueError(msg)
    injected = frozenset(inspect.signature(entrypoint).parameters) & _injected()
    if injected - CALLER_PARAMETERS:
        names = ", ".join(sorted(injected - CALLER_PARAMETERS))
        msg = f"tool {function.name!r} takes agno framework parameters ({names}), which it would not get"
        raise ValueError(msg)
    prepared = function.model_copy()
    prepared.process_entrypoint()
    run = prepared.entrypoint or entrypoint
    return ToolSpec(
        name=prepared.name,
        function=given_caller(run, injected) if injected else run,
        description=prepared.description or "",
        parameters=dict(prepared.parameters),
        in_thread=not inspect.iscoroutinefunction(entrypoint),
    )


def foreign_tool_specs(value: Any) -> tuple[ToolSpec, ...] | None:
    """Our tools for an agno `Toolkit` or `Function` found in a plugin's tools module; None for anything else.

    A `ToolkitRef` (a catalogue tool such as `duckduckgo`) is built here, with its module imported now.
    `ValueError` for a function that needs what agno injects (agent, team, run context, media).
    """
    if isinstance(value, ToolkitRef):
        from mindroom.ai.toolkit_specs import toolkit_specs

        return toolkit_specs(value)
    if "agno.tools.function" not in sys.modules:
        return None  # nothing has imported agno's tools, so no plugin made one (and the daemon starts without agno)
    from agno.tools.function import Function
    from agno.tools.toolkit import Toolkit

    if isinstance(value, Toolkit):
        return tuple(_spec_from_function(function) for function in value.get_async_functions().values())
    if isinstance(value, Function):
        return (_spec_from_function(value),)
    return None
