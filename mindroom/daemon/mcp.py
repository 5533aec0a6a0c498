"""The daemon's MCP servers over its life: started with it, brought in line on each reload, told to the admin room.

`MCPLifecycle` applies each live config to the shared `MCPServerPool` (only servers whose settings changed
restart), stops every server with the daemon, and says in the admin room when a server becomes unavailable
(and why) and when it is back. Notices go out from tasks it owns, cancelled on stop.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from mindroom.bots.directory import Directory
from mindroom.bots.runtime import LiveCell, LiveState
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.daemon.reload import ApplyChanges, EntityChanges
from mindroom.logging_config import get_logger, redact_text
from mindroom.tasks import TaskOwner
from mindroom.tool_system.mcp.servers import MCPServerPool

if TYPE_CHECKING:
    from mindroom.tool_system.mcp.connection import ServerStatus

__all__ = ["MCPLifecycle", "notice_text"]

logger = get_logger(__name__)


def notice_text(status: ServerStatus) -> str:
    """The admin room's line for a server that became unavailable, or available again."""
    if status.state == "ready":
        return f"✅ MCP server {status.server_id} is available again ({status.tools} tools)."
    reason = redact_text(status.reason) or "no reason given"
    return f"⚠️ MCP server {status.server_id} is unavailable: {reason}. It is restarted with backoff."


class MCPLifecycle:
    """Starts, reloads and stops the daemon's MCP servers, and keeps the admin room told."""

    def __init__(
        self,
        cell: LiveCell,
        directory: Directory,
        paths: RuntimePaths,
        pool: MCPServerPool | None = None,
        *,
        notify: Callable[[str], Coroutine[Any, Any, None]] | None = None,
    ) -> None:
        """`notify` says a line in the admin room (default: as the router, when the admin room is set up)."""
        self.pool = pool if pool is not None else MCPServerPool.shared()
        self._notify = notify or self._admin_notice
        self._cell = cell
        self._directory = directory
        self._paths = paths
        self._ready: dict[str, bool] = {}
        self._notices = TaskOwner("mcp notices")
        self.pool.on_change = self._changed

    async def apply(self, config: Config) -> tuple[str, ...]:
        """Bring the running servers in line with `config` (start, stop, restart what changed)."""
        started = await self.pool.apply(config, self._paths)
        if started:
            logger.info("mcp servers started", servers=list(started))
        return started

    def before(self, apply: ApplyChanges) -> ApplyChanges:
        """`apply` (a reload's entity changes), run once the servers match the new live config."""

        async def run(old: LiveState, changes: EntityChanges) -> None:
            await self.apply(self._cell.live.config)
            await apply(old, changes)

        return run

    async def stop(self) -> None:
        """Stop every server, then the notices still being sent."""
        self.pool.on_change = None
        await self.pool.close()
        await self._notices.cancel_all()

    def _changed(self, status: ServerStatus) -> None:
        # Per server: None until first seen, True while up, False once its failure was announced.
        previous = self._ready.get(status.server_id)
        if status.state == "ready":
            self._ready[status.server_id] = True
            if previous is not False:
                return  # a first start, or a quiet restart, is no news
        elif status.state == "failed" and previous is not False:
            self._ready[status.server_id] = False
        else:
            return
        self._notices.spawn(self._notify(notice_text(status)), "an MCP server notice")

    async def _admin_notice(self, text: str) -> None:
        key = self._cell.live.config.admin_room
        router = self._directory.router
        room_id = self._directory.room_ids.get(key) if key else None
        if router is None or room_id is None:
            return
        with contextlib.suppress(Exception):  # a notice is best effort; the log has the state change
            await router.client.send_message(room_id, text, msgtype="m.notice")
