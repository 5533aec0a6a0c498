"""The built-in `thread_model` tool (MindRoom's name): `!model` for the agent's own thread, from a tool call.

It acts for the person the turn speaks for, with `!model`'s rule (administrators only) and its store: the
thread's model, kept in the state, used by every agent and team answering in the thread from their next
turn. A switch is checked during the call and applied right after it, so the running turn keeps its model.
"""

from __future__ import annotations

from mindroom.tool_system.builtin.parts import SettingsPort, ToolCaller, daemon_parts, tool_caller, tool_payload
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = ["get_thread_model", "list_models", "reset_thread_model", "switch_thread_model", "thread_model_tools"]


def _port() -> tuple[SettingsPort, ToolCaller]:
    caller = tool_caller()
    port = daemon_parts().settings
    if port is None:
        raise ToolError("settings from chat are not kept by this daemon (no state store for them)")
    if not caller.thread_id:
        raise ToolError("a thread's model is set in a thread; this turn is not in one")
    return port, caller


def _models(caller: ToolCaller) -> dict[str, str]:
    models = caller.config.models if caller.config is not None else {}
    return {name: f"{model.provider} {model.id}" for name, model in models.items()}


async def list_models() -> str:
    """List the models this thread can be switched to."""
    caller = tool_caller()
    return tool_payload("thread_model", "ok", models=_models(caller))


async def get_thread_model() -> str:
    """The model set for this thread, if any (else the room's or the agent's own applies)."""
    port, caller = _port()
    current = port.thread_setting(caller, "model")
    return tool_payload("thread_model", "ok", room_id=caller.room_id, thread_id=caller.thread_id, model=current)


async def switch_thread_model(model_name: str, when: str = "next-turn") -> str:
    """Switch this thread to another model, for every agent answering in it.

    Args:
        model_name: A model name from list_models.
        when: "next-turn" (the model is used from the next answer on); "after-toolcall" is not offered here.
    """
    port, caller = _port()
    if when != "next-turn":
        raise ToolError('only when="next-turn" is offered: the running answer keeps its model')
    if model_name not in _models(caller):
        raise ToolError(f"unknown model {model_name!r}; available: {', '.join(_models(caller))}")
    problems = await port.change_thread(caller, "model", model_name)
    if problems:
        return tool_payload("thread_model", "error", model=model_name, message="; ".join(problems))
    return tool_payload("thread_model", "ok", action="switch", thread_id=caller.thread_id, model=model_name, when=when)


async def reset_thread_model() -> str:
    """Drop this thread's model: the room's (or each agent's own) applies again from the next answer."""
    port, caller = _port()
    problems = await port.change_thread(caller, "model", None)
    if problems:
        return tool_payload("thread_model", "error", message="; ".join(problems))
    return tool_payload("thread_model", "ok", action="reset", thread_id=caller.thread_id)


def thread_model_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `thread_model` group: `list_models`, `get_thread_model`, `switch_thread_model`, `reset_thread_model`."""
    return tuple(
        ToolSpec(name=f.__name__, function=f)
        for f in (list_models, get_thread_model, switch_thread_model, reset_thread_model)
    )
