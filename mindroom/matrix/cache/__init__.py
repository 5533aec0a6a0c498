"""MindRoom's event-cache package, for plugins that read an agent's latest message through hooks.

MindRoom answers `ctx.get_latest_agent_message_snapshot(...)` from an SQLite cache of Matrix events; this daemon
answers it from the last messages its bots saw (`mindroom.bots.recent`), kept in memory, and keeps no such cache.
Only the snapshot's names are here: `AgentMessageSnapshot` and `AgentMessageSnapshotUnavailable`.
"""

from __future__ import annotations

from mindroom.matrix.cache.agent_message_snapshot import AgentMessageSnapshot, AgentMessageSnapshotUnavailable

__all__ = ["AgentMessageSnapshot", "AgentMessageSnapshotUnavailable"]
