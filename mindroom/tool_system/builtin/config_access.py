"""How the config tools (`config_manager`, `self_config`) read and change config: as `!config` does, no wider.

Every read and change is for the person the turn speaks for, who must be one of `administrators`; what the
agent was told or asked changes nothing about who that is. A change sets only keys the chat allowlist
(`mindroom.config.chat_settable`) lists, each checked with the whole config before it is kept, and is kept
as a setting from chat (in the state's overrides, named with that person; `!config reset <path>` undoes it),
never written into config.yaml. It takes effect after the call: applying it reloads the config, which may
restart the agent whose turn asked. A batch is refused whole when any key in it is not settable or holds a
hidden secret's placeholder; past that, changes apply in order and a failing one stops the rest. Values
shown are redacted as `!config show` redacts them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from mindroom.config.chat_settable import chat_refusal
from mindroom.config.effective import hidden
from mindroom.tool_system.builtin.parts import SettingsPort, ToolCaller, daemon_parts, tool_caller
from mindroom.tool_system.spec import ToolError

__all__ = [
    "ADMIN_REQUIRED",
    "NOT_APPLIED",
    "apply_changes",
    "pointer_path",
    "redacted_yaml",
    "settings_port",
]

NOT_APPLIED = "Changes were NOT applied."
ADMIN_REQUIRED = "Error: reading or changing the configuration requires the person you act for to be an administrator."
_MARKERS = ("***",)
_MAX_CHARS = 20_000


def settings_port() -> tuple[SettingsPort, ToolCaller]:
    """The run's settings desk and the caller; `ToolError` when the daemon has none (no state to keep them)."""
    caller = tool_caller(room_needed=False)
    port = daemon_parts().settings
    if port is None:
        raise ToolError("config changes from chat are not available in this daemon (it keeps no settings state)")
    return port, caller


def pointer_path(pointer: str) -> str:
    """A JSON Pointer (`/agents/helper/model`) or a dot path (`agents.helper.model`) as a dot path."""
    text = pointer.strip()
    if not text.startswith("/"):
        return text.strip(".")
    parts = [part.replace("~1", "/").replace("~0", "~") for part in text[1:].split("/")]
    return ".".join(parts)


def redacted_yaml(value: Any, name: str = "") -> str:
    """`value` as YAML with secrets hidden (as `!config show` hides them), cut past a size."""
    text = yaml.safe_dump(hidden(value, name), default_flow_style=False, sort_keys=False, allow_unicode=True)
    text = text.rstrip().removesuffix("...").rstrip()
    if len(text) > _MAX_CHARS:
        return text[:_MAX_CHARS] + "\n# ... cut: inspect a narrower path"
    return text


def _refusals(changes: Sequence[tuple[str, Any]]) -> list[str]:
    problems = [refusal for key, value in changes if (refusal := chat_refusal(key, value)) is not None]
    for key, value in changes:
        if any(marker in yaml.safe_dump(value) for marker in _MARKERS):
            problems.append(f"`{key}`: the value holds a hidden secret's placeholder")
    return problems


async def apply_changes(
    port: SettingsPort, caller: ToolCaller, changes: Sequence[tuple[str, Any]], *, dry_run: bool = False
) -> str:
    """Check and apply `changes` (key path, value) for the caller; a receipt naming the keys, or why not."""
    if not port.administrator(caller):
        return f"{ADMIN_REQUIRED}\n\n{NOT_APPLIED}"
    if not changes:
        return "No changes were given."
    refused = _refusals(changes)
    if refused:
        return "Error: " + "\n".join(refused) + f"\n\n{NOT_APPLIED}"
    done: list[str] = []
    for key, value in changes:
        problems = await port.change(caller, key, value, dry_run=dry_run)
        if problems:
            applied = f"\nApplied before it: {', '.join(f'`{k}`' for k in done)}." if done else ""
            return f"Error: `{key}`: " + "; ".join(problems) + f"\n\n{NOT_APPLIED} (from `{key}` on){applied}"
        done.append(key)
    status = "checked (dry run, nothing changed)" if dry_run else "set from chat (in effect once this answer is sent)"
    lines = [f"- `{key}` = {redacted_yaml(value, key.rsplit('.', 1)[-1])}" for key, value in changes]
    undo = "" if dry_run else "\n`!config reset <path>` undoes a change (config.yaml keeps its own values)."
    return f"✅ Configuration {status}:\n" + "\n".join(lines) + undo
