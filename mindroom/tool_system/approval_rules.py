"""`tool_approval:` rules applied to every tool call: the first rule matching the function name decides.

A call that needs approval waits on the same card `ctx.request_approval` posts (stored, so it survives a
restart: the replayed turn finds its card), here asked by the rule rather than by a plugin: the card
shows the arguments, secrets redacted. Only the person who asked the agent may answer it (✅ runs the call
with exactly those arguments; ❌ or a reply denies it); nobody answering within the rule's `timeout_days`
denies it. Where nobody can be asked (no requester bound, as in a scheduled run without a person, or a
call made by another agent), a call that needs approval is denied.

A rule's `script` is a Python file beside the config defining `check(tool_name, arguments, agent_name)`
(which may be async) that returns True when this call needs approval. A script that fails to load or
raises asks for approval: the safe side.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from mindroom.config.approval import ApprovalRuleConfig, ToolApprovalConfig
from mindroom.constants import RuntimePaths, resolve_config_relative_path
from mindroom.hooks.tool_contexts import ApprovalRequest
from mindroom.logging_config import get_logger, redact_value
from mindroom.tool_system.runtime_context import ToolRuntimeContext

__all__ = ["APPROVAL_RULES_PLUGIN", "approval_prompt", "arguments_shown_whole", "needs_approval", "rule_gate"]

logger = get_logger(__name__)

APPROVAL_RULES_PLUGIN = "tool_approval"
"""The asker's name on cards the rules post (where a plugin's name would be)."""
_SHOWN_ARGUMENT_CHARS = 600
_DAY_S = 86400.0


class _Scripts:
    """Loaded `check` functions by file, reloaded when the file changes."""

    loaded: ClassVar[dict[Path, tuple[str, Callable[..., Any]]]] = {}


def _check_function(path: Path) -> Callable[..., Any]:
    source = path.read_bytes()
    digest = hashlib.sha256(source).hexdigest()
    cached = _Scripts.loaded.get(path)
    if cached is not None and cached[0] == digest:
        return cached[1]
    spec = importlib.util.spec_from_file_location(f"mindroom_approval_rule_{digest[:12]}", path)
    if spec is None or spec.loader is None:
        msg = f"cannot load {path}"
        raise ImportError(msg)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    check: Callable[..., Any] | None = getattr(module, "check", None)
    if check is None or not callable(check):
        msg = f"{path} defines no check(tool_name, arguments, agent_name)"
        raise ImportError(msg)
    _Scripts.loaded[path] = (digest, check)
    return check


async def _script_says(rule: ApprovalRuleConfig, paths: RuntimePaths | None, tool: str, args: Any, agent: str) -> bool:
    assert rule.script is not None
    try:
        path = resolve_config_relative_path(rule.script, paths) if paths is not None else Path(rule.script)
        answer = _check_function(path)(tool, args, agent)
        if inspect.isawaitable(answer):
            answer = await answer
        return bool(answer)
    except Exception as exc:  # the operator's script: asking is the safe answer
        logger.warning("approval script failed; asking for approval", script=rule.script, tool=tool, error=str(exc))
        return True


async def needs_approval(
    approval: ToolApprovalConfig,
    tool_name: str,
    arguments: Mapping[str, Any],
    agent_name: str,
    paths: RuntimePaths | None,
) -> tuple[bool, ApprovalRuleConfig | None]:
    """Whether the rules ask a person before this call runs, and the rule that decided (None: the default)."""
    rule = approval.rule_for(tool_name)
    if rule is None:
        return approval.default == "require_approval", None
    if rule.action is not None:
        return rule.action == "require_approval", rule
    return await _script_says(rule, paths, tool_name, dict(arguments), agent_name), rule


def _shown(arguments: Mapping[str, Any]) -> str:
    return json.dumps(redact_value(dict(arguments)), ensure_ascii=False, default=str)


def arguments_shown_whole(arguments: Mapping[str, Any]) -> bool:
    """Whether a card shows every argument of the call (nothing cut): only then may it offer a timed approval."""
    return len(_shown(arguments)) <= _SHOWN_ARGUMENT_CHARS


def approval_prompt(rule: ApprovalRuleConfig | None, arguments: Mapping[str, Any]) -> str:
    """Why the card asks, with the call's arguments (secrets redacted, long values cut)."""
    shown = _shown(arguments)
    if len(shown) > _SHOWN_ARGUMENT_CHARS:
        shown = shown[:_SHOWN_ARGUMENT_CHARS] + " …"
    why = f"the approval rule {rule.match!r}" if rule is not None else "the approval default"
    return f"{why} asks first. Arguments: {shown}"


async def rule_gate(
    tool_name: str, agent_name: str, arguments: Mapping[str, Any], bound: ToolRuntimeContext | None
) -> str | None:
    """None when the call may run; else why it does not (the reason the model reads)."""
    approval = getattr(bound.config, "tool_approval", None) if bound is not None else None
    if bound is None or not isinstance(approval, ToolApprovalConfig) or not approval.active:
        return None
    needed, rule = await needs_approval(approval, tool_name, arguments, agent_name, bound.runtime_paths)
    if not needed:
        return None
    if bound.approval_requester is None or bound.requester_id is None:
        return "this call needs a person's approval, and there is nobody to ask here"
    days = rule.timeout_days if rule is not None and rule.timeout_days is not None else approval.timeout_days
    request = ApprovalRequest(
        prompt=approval_prompt(rule, arguments),
        timeout_s=days * _DAY_S,
        tool_name=tool_name,
        arguments=dict(arguments),
        agent_name=agent_name,
        room_id=bound.room_id,
        thread_id=bound.thread_id,
        requester_id=bound.requester_id,
        correlation_id=bound.correlation_id or "",
        plugin_name=APPROVAL_RULES_PLUGIN,
        hook_name=rule.match if rule is not None else "default",
    )
    if await bound.approval_requester(request):
        return None
    return "the person did not approve this call (denied, or no answer in time)"
