"""`mindroom doctor` on tools: the sandbox they need works, each tool an agent names can run here (or the
agent runs without it: a warning with the fix), and each MCP server starts.

The sandbox check runs where the shell tool is named or a stdio MCP server is enabled: it tests bubblewrap
(and slirp4netns, for a sandbox with a network of its own) as the daemon would before the first command.
The MCP check starts every enabled server as the daemon would (sandboxed stdio, or a connection to the
URL), waits for it to list its tools or fail, says which and why, and stops it again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from mindroom.backoff import Backoff
from mindroom.cli.doctor_result import CheckResult
from mindroom.cli.doctor_result import check_fail as _fail
from mindroom.cli.doctor_result import check_ok as _ok
from mindroom.cli.doctor_result import check_warn as _warn
from mindroom.config.main import Config, ShellToolConfig
from mindroom.constants import RuntimePaths
from mindroom.daemon.start_check import StartCheck
from mindroom.tool_system.builtin_groups import BUILTIN_PROVIDERS
from mindroom.tool_system.mcp.servers import MCPServerPool
from mindroom.tool_system.named_tools import named_tools
from mindroom.tool_system.sandbox.launch import (
    DEFAULT_PATH,
    WEAKER_HOST_NETWORK,
    WEAKER_WITHOUT_SANDBOX,
    choose_sandbox,
)
from mindroom.tool_system.spec import ToolError

__all__ = ["check_mcp_servers", "check_sandbox", "check_toolkits"]

_GRACE_S = 5.0
_SANDBOX_FIX = (
    "install bubblewrap and slirp4netns (apt-get install bubblewrap slirp4netns), or set what the line names "
    "(see docs/configuration.md)"
)


def _sandboxed(config: Config) -> list[tuple[str, ShellToolConfig]]:
    """The tool groups this config runs in the sandbox, by their settings' key."""
    wanted: list[tuple[str, ShellToolConfig]] = []
    if any(entry.name == "shell" for agent in config.agents.values() for entry in agent.tool_entries()):
        wanted.append(("tools.shell", config.tools.shell))
    if any(server.enabled and server.transport == "stdio" for server in config.mcp_servers.values()):
        mcp = config.tools.mcp
        wanted.append(("tools.mcp", ShellToolConfig(sandbox=mcp.sandbox, network=mcp.network)))
    return wanted


async def check_sandbox(config: Config, env: Mapping[str, str]) -> list[CheckResult]:
    """One line per tool group that runs sandboxed here (the shell tool, stdio MCP servers): can it start?"""
    results = []
    for key, settings in _sandboxed(config):
        name = f"sandbox {key}"
        try:
            sandbox = await choose_sandbox(settings, env.get("PATH") or DEFAULT_PATH, key)
        except ToolError as exc:
            results.append(_fail(name, str(exc), _SANDBOX_FIX))
            continue
        if sandbox.bwrap is None:
            results.append(_warn(name, f"{key}.sandbox is none: {WEAKER_WITHOUT_SANDBOX}"))
        elif settings.network == "host":
            results.append(_warn(name, f"bubblewrap works; {key}.network is host: {WEAKER_HOST_NETWORK}"))
        elif settings.network:
            results.append(_ok(name, "bubblewrap works, with a network of its own through slirp4netns"))
        else:
            results.append(_ok(name, "bubblewrap works, without a network"))
    return results


def check_toolkits(config: Config, env: Mapping[str, str], checked: StartCheck) -> list[CheckResult]:
    """One line per tool name or setting `mindroom run` refuses, and one per tool an agent names that cannot run
    here (the agent runs without it: the fix), in the words of `mindroom config validate` (`check_start`)."""
    results = [_fail("tools", finding.text, finding.fix) for finding in checked.errors if finding.topic == "tools"]
    results.extend(
        _warn("tools", finding.text, finding.fix) for finding in checked.warnings if finding.topic == "tools"
    )
    named = named_tools(config, env, {provider.name for provider in BUILTIN_PROVIDERS})
    if not results and named.toolkits:
        ready = ", ".join(sorted(named.toolkits))
        results.append(_ok("tools", f"{len(named.toolkits)} agno toolkits named by agents can run: {ready}"))
    return results


async def check_mcp_servers(config: Config, paths: RuntimePaths) -> list[CheckResult]:
    """Start each enabled MCP server, see it list its tools (or why not), and stop it."""
    enabled = {server_id: server for server_id, server in config.mcp_servers.items() if server.enabled}
    if not enabled:
        return []
    pool = MCPServerPool(paths, retry=Backoff(first_s=3600.0, max_s=3600.0))
    try:
        await pool.apply(config)
        deadline = (
            asyncio.get_running_loop().time() + max(s.startup_timeout_seconds for s in enabled.values()) + _GRACE_S
        )
        while asyncio.get_running_loop().time() < deadline:
            if all(status.state == "ready" or status.restarts for status in pool.statuses()):
                break
            await asyncio.sleep(0.1)
        statuses = pool.statuses()
    finally:
        await pool.close()
    results = []
    for status in statuses:
        name = f"mcp server {status.server_id}"
        if enabled[status.server_id].auth is not None:
            # Started per person with their own token at their first call: there is nothing to list before that.
            detail = "acts with each person's OAuth connection (auth: oauth): opened at their first call, not here"
            results.append(_ok(name, detail))
        elif status.state == "ready":
            results.append(_ok(name, f"started and listed {status.tools} tools"))
        else:
            reason = status.reason or "it did not start in time"
            results.append(_fail(name, reason, f"fix mcp_servers.{status.server_id} (or set enabled: false)"))
    return results
