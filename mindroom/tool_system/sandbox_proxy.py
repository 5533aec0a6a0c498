"""MindRoom's sandbox-proxy module, for plugins that import it; this daemon sends no tool call to a sandbox worker.

In MindRoom, `_call_proxy_sync` forwards a tool call (the shell tool's among them) over HTTP to a sandbox worker
process, with the environment the command gets there. Here the shell tool starts its sandboxed command itself
(`mindroom.tool_system.shell`: bubblewrap, or a clean environment without it) and no call goes through a proxy,
so nothing calls `_call_proxy_sync`: a plugin that replaces it changes nothing, and a command's environment is
changed through `mindroom.tools.shell._shell_subprocess_env` or a `tool:environment` hook instead.
"""

from __future__ import annotations

from typing import Any

from mindroom.constants import RuntimePaths

__all__ = ["sandbox_proxy_enabled_for_tool"]


def sandbox_proxy_enabled_for_tool(
    tool_name: str, *, runtime_paths: RuntimePaths, worker_tools_override: list[str] | None = None
) -> bool:
    """Whether a tool's calls go through the sandbox proxy: never here (tools run in the daemon or its sandbox)."""
    del tool_name, runtime_paths, worker_tools_override
    return False


def _call_proxy_sync(**call: Any) -> object:
    """MindRoom's forwarding of one call to a sandbox worker; the daemon never calls it, and calling it fails."""
    msg = (
        f"tool {call.get('tool_name')!r}: this daemon has no sandbox proxy to send a call to "
        "(the shell tool runs its sandboxed command itself)"
    )
    raise RuntimeError(msg)
