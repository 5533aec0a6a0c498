"""The daemon's MCP servers: one supervised connection per enabled server, and their tools for each agent.

`MCPServerPool.apply(config)` brings the running servers in line with a config: new servers start,
removed or disabled ones stop, and one whose settings changed (its entry, or `tools.mcp`) restarts; the
others keep running untouched, so a reload restarts only what changed. The pool's `revision` goes up
whenever a server's tool list changes, for the agents built from it to be rebuilt.

An agent lists a server as the tool `mcp_<id>`; the model sees each remote tool as `<prefix>_<name>`
(`tool_prefix`, else the server id), filtered by the server's `include_tools`/`exclude_tools` and then
the agent's own. Every call runs through `call_tool`, under the server's (or the agent's)
`call_timeout_seconds` and its `max_concurrent_calls`.

A server with `auth` is not connected at start: each person gets their own session, opened with their own
token on their first call (`personal`), and the agents' functions for it act as the person asking
(`oauth_tools`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from mindroom.backoff import Backoff
from mindroom.config.main import Config
from mindroom.config.mcp import (
    MCPSandboxConfig,
    MCPServerConfig,
    check_mcp_agent_overrides,
    mcp_oauth_provider_id,
    mcp_tool_name,
)
from mindroom.constants import RuntimePaths, resolve_config_relative_path
from mindroom.logging_config import get_logger
from mindroom.tool_system.providers import ToolProvider
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

if TYPE_CHECKING:
    # The connections, their transports and the sandbox load when the first server starts (`apply`).
    from mindroom.tool_system.mcp.connection import MCPConnection, ServerStatus
    from mindroom.tool_system.mcp.personal import PersonalSessions
    from mindroom.tool_system.mcp.stdio import StdioSession
    from mindroom.tool_system.mcp.wire import RemoteTool

__all__ = ["MCPServerPool", "function_name", "mcp_problems", "mcp_providers"]

logger = get_logger(__name__)

_FUNCTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_DEADLINE_GRACE_S = 5.0


def function_name(server_id: str, config: MCPServerConfig, remote_name: str) -> str:
    """The name the model calls a remote tool by: `<tool_prefix or server id>_<remote name>`."""
    return f"{config.tool_prefix or server_id}_{remote_name}"


def _selected(names: list[str] | None, excluded: list[str] | None, remote: str) -> bool:
    return (not names or remote in names) and remote not in (excluded or ())


def mcp_problems(config: Config) -> list[str]:
    """What is wrong with the agents' `mcp_<id>` entries (settings an MCP tool does not take)."""
    problems: list[str] = []
    servers = {mcp_tool_name(server_id) for server_id, server in config.mcp_servers.items() if server.enabled}
    for agent_name, agent in config.agents.items():
        for entry in agent.tool_entries():
            if entry.name in servers:
                where = f"agents.{agent_name}.tools: {entry.name!r}"
                problems.extend(f"{where}: {problem}" for problem in check_mcp_agent_overrides(entry.overrides))
    return problems


@dataclass(frozen=True, slots=True)
class _Running:
    connection: MCPConnection
    fingerprint: str


@dataclass(frozen=True, slots=True)
class _Personal:
    sessions: PersonalSessions
    fingerprint: str


class MCPServerPool:
    """The running MCP servers of one daemon (owner of their supervisor tasks and processes).

    `MCPServerPool.shared()` is the daemon's own, which the tool catalogue uses unless given another.
    """

    _shared: ClassVar[MCPServerPool | None] = None

    @classmethod
    def shared(cls) -> MCPServerPool:
        """The process's pool (made on first use; the daemon applies its config and closes it on stop)."""
        if cls._shared is None:
            cls._shared = cls()
        return cls._shared

    def __init__(
        self,
        runtime_paths: RuntimePaths | None = None,
        *,
        retry: Backoff | None = None,
        on_change: Callable[[ServerStatus], None] | None = None,
    ) -> None:
        """`retry`: how a failed server is restarted (default `MCP_RETRY`)."""
        self._paths = runtime_paths
        self._retry = retry
        self.on_change = on_change
        """Told of every change of a server's state (for the admin room)."""
        self._running: dict[str, _Running] = {}
        self._sessions: dict[str, StdioSession] = {}
        self._listed: dict[str, tuple[RemoteTool, ...]] = {}
        self._personal: dict[str, _Personal] = {}
        self.revision = 0

    def connection(self, server_id: str) -> MCPConnection | None:
        """The live connection to a server, if it runs."""
        running = self._running.get(server_id)
        return running.connection if running is not None else None

    def personal(self, server_id: str) -> PersonalSessions | None:
        """The people's sessions to a server with `auth`, if it is configured."""
        found = self._personal.get(server_id)
        return found.sessions if found is not None else None

    def statuses(self) -> list[ServerStatus]:
        """Every running server's status, by id."""
        found = [running.connection.status() for running in self._running.values()]
        found += [personal.sessions.status() for personal in self._personal.values()]
        return sorted(found, key=lambda status: status.server_id)

    def process_id(self, server_id: str) -> int | None:
        """The process id of a stdio server's current process (bubblewrap's, when sandboxed), if it runs."""
        session = self._sessions.get(server_id)
        if session is None or session.process.returncode is not None:
            return None
        return session.process.pid

    def stderr_tail(self, server_id: str) -> str:
        """What a stdio server last wrote to stderr (why it failed, often)."""
        session = self._sessions.get(server_id)
        return session.stderr_tail() if session is not None else ""

    async def apply(self, config: Config, runtime_paths: RuntimePaths | None = None) -> tuple[str, ...]:
        """Start, stop and restart servers to match `config`; returns the ids of those started or restarted.

        `runtime_paths` (needed once, before a stdio server starts): where servers get their folders.
        """
        if runtime_paths is not None:
            self._paths = runtime_paths
        wanted = {server_id: server for server_id, server in config.mcp_servers.items() if server.enabled}
        changed: list[str] = []
        for server_id in _outdated(self._running, wanted, config.tools.mcp):
            await self._running.pop(server_id).connection.close()
            logger.info("mcp server stopped", server=server_id)
        for server_id in _outdated(self._personal, wanted, config.tools.mcp):
            await self._personal.pop(server_id).sessions.close()
            logger.info("mcp server stopped", server=server_id)
        for server_id, server in wanted.items():
            if server_id in self._running or server_id in self._personal:
                continue
            if server.auth is not None:
                self._personal[server_id] = _Personal(
                    self._sessions_of(server_id, server), _fingerprint(server, config.tools.mcp)
                )
                changed.append(server_id)
                continue
            from mindroom.tool_system.mcp.connection import MCP_RETRY, MCPConnection

            connection = MCPConnection(
                server_id,
                server,
                self._transport(server_id, server, config.tools.mcp),
                retry=self._retry if self._retry is not None else MCP_RETRY,
                on_change=self._changed,
                diagnostics=functools.partial(self.stderr_tail, server_id),
            )
            self._running[server_id] = _Running(connection, _fingerprint(server, config.tools.mcp))
            connection.start()
            changed.append(server_id)
        return tuple(changed)

    async def close(self) -> None:
        """Stop every server (and all their processes), and close every person's session."""
        running, self._running = self._running, {}
        for item in running.values():
            await item.connection.close()
        personal, self._personal = self._personal, {}
        for sessions in personal.values():
            await sessions.sessions.close()

    def _sessions_of(self, server_id: str, server: MCPServerConfig) -> PersonalSessions:
        from mindroom.tool_system.mcp.connection import MCP_RETRY
        from mindroom.tool_system.mcp.personal import PersonalSessions

        assert server.auth is not None
        provider_id = mcp_oauth_provider_id(server_id, server.auth)

        async def token(person: str) -> str:
            # Here, not at the top: the connections' vault brings the Matrix crypto layer (and nio) with it.
            from mindroom.oauth.service import connections_for

            service = connections_for(self._paths.storage_root) if self._paths is not None else None
            if service is None:
                raise ToolError("OAuth connections work with the running daemon only")
            if self._forget_person not in service.on_disconnect:
                service.on_disconnect.append(self._forget_person)
            return await service.token_for(person, provider_id)

        def listed() -> None:
            self.revision += 1

        retry = self._retry if self._retry is not None else MCP_RETRY
        return PersonalSessions(server_id, server, provider_id, token, retry=retry, on_tools=listed)

    async def _forget_person(self, person: str, provider_id: str) -> None:
        """Close a person's sessions to the servers of a provider they disconnected from."""
        for personal in list(self._personal.values()):
            if personal.sessions.provider_id == provider_id:
                await personal.sessions.close_person(person)

    def _changed(self, connection: MCPConnection) -> None:
        if self._listed.get(connection.server_id) != connection.tools:
            self._listed[connection.server_id] = connection.tools
            self.revision += 1
        if self.on_change is not None:
            self.on_change(connection.status())

    def _transport(
        self, server_id: str, server: MCPServerConfig, sandbox: MCPSandboxConfig
    ) -> Callable[[AsyncExitStack], Any]:
        from mindroom.tool_system.mcp.stdio import StdioServerSpec
        from mindroom.tool_system.mcp.wire import connect_client

        stdio = None
        if server.transport == "stdio":
            if self._paths is None:
                msg = "the pool needs runtime paths before it starts a stdio server"
                raise RuntimeError(msg)
            folder = self._paths.storage_root / "mcp" / server_id
            if server.cwd:
                folder = resolve_config_relative_path(server.cwd, self._paths)
            stdio = StdioServerSpec(
                command=str(server.command),
                args=tuple(server.args),
                env=dict(server.env),
                folder=Path(folder),
                settings=sandbox,
                hidden=(self._paths.storage_root,),
            )

        def remember(session: StdioSession) -> None:
            self._sessions[server_id] = session

        async def connect(stack: AsyncExitStack) -> Any:
            return await connect_client(server, stack, stdio=stdio, on_session=remember)

        return connect

    def tool_specs(self, config: Config, server_id: str, agent: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
        """The server's tools as one agent gets them (its last listing while it is down)."""
        server = config.mcp_servers.get(server_id)
        connection = self.connection(server_id)
        personal = self.personal(server_id)
        if server is None or (connection is None and personal is None):
            return ()
        agent_config = config.agents.get(agent.agent_name)
        entries = agent_config.tool_entries() if agent_config is not None else ()
        overrides: Mapping[str, Any] = next(
            (entry.overrides for entry in entries if entry.name == mcp_tool_name(server_id)), {}
        )
        timeout = float(overrides.get("call_timeout_seconds") or server.call_timeout_seconds)
        if personal is not None:
            from mindroom.tool_system.mcp.oauth_tools import oauth_tool_specs

            def selected(remote: str) -> bool:
                return _selected(server.include_tools, server.exclude_tools, remote) and _selected(
                    overrides.get("include_tools"), overrides.get("exclude_tools"), remote
                )

            prefix = server.tool_prefix or server_id
            bridged = oauth_tool_specs(server_id, prefix, personal, timeout, selected, mcp_tool_name(server_id))
            return tuple(spec for spec in bridged if _FUNCTION_NAME.match(spec.name))
        assert connection is not None
        specs: list[ToolSpec] = []
        for remote in connection.tools:
            if not _selected(server.include_tools, server.exclude_tools, remote.name):
                continue
            if not _selected(overrides.get("include_tools"), overrides.get("exclude_tools"), remote.name):
                continue
            name = function_name(server_id, server, remote.name)
            if not _FUNCTION_NAME.match(name):
                logger.warning("mcp tool left out: its name is not a valid function name", server=server_id, tool=name)
                continue
            specs.append(self._spec(server_id, remote, name, timeout))
        return tuple(specs)

    def _spec(self, server_id: str, remote: RemoteTool, name: str, timeout: float) -> ToolSpec:
        async def call(**arguments: Any) -> Any:
            connection = self.connection(server_id)
            if connection is None:
                raise ToolError(f"MCP server {server_id!r} is not running")
            return await connection.call(remote.name, arguments, timeout)

        schema = {"type": "object", "properties": {}, **dict(remote.input_schema)}
        return ToolSpec(
            name=name,
            function=call,
            description=remote.description or f"{remote.name} (MCP server {server_id})",
            parameters=schema,
            toolkit=mcp_tool_name(server_id),
            timeout_s=timeout + _DEADLINE_GRACE_S,
        )


def _fingerprint(server: MCPServerConfig, sandbox: MCPSandboxConfig) -> str:
    stdio_settings = sandbox.model_dump_json() if server.transport == "stdio" else ""
    return server.model_dump_json() + stdio_settings


def _outdated(
    table: Mapping[str, _Running | _Personal], wanted: Mapping[str, MCPServerConfig], sandbox: MCPSandboxConfig
) -> list[str]:
    """The ids in `table` whose server is no longer wanted, or wanted with other settings."""
    return [
        server_id
        for server_id, item in table.items()
        if (server := wanted.get(server_id)) is None or _fingerprint(server, sandbox) != item.fingerprint
    ]


def mcp_providers(
    config: Config, pool: MCPServerPool | None, taken: Collection[str], problems: list[str]
) -> list[ToolProvider]:
    """`mcp_<id>` for each enabled MCP server: its tools as the running server lists them."""
    providers: list[ToolProvider] = []
    for server_id, server in config.mcp_servers.items():
        name = mcp_tool_name(server_id)
        if not server.enabled:
            continue
        if name in taken:
            problems.append(f"MCP tool {name!r} conflicts with an existing registered tool")
            continue

        def build(env: AgentToolEnvironment, server_id: str = server_id) -> tuple[ToolSpec, ...]:
            """The server's tools for one agent."""
            return pool.tool_specs(config, server_id, env) if pool is not None else ()

        providers.append(ToolProvider(name, "mcp server", (), build, dynamic=True))
    problems.extend(mcp_problems(config))
    return providers
