"""The latest message of one sender in one conversation, as hooks read it (`ctx.get_latest_agent_message_snapshot`).

The snapshot is read from memory here, so nothing raises `AgentMessageSnapshotUnavailable` (MindRoom raises it
when its event cache on disk cannot be read); plugins that catch it keep working.
"""

from __future__ import annotations

from mindroom.hooks.capabilities import AgentMessageSnapshot
from mindroom.matrix.errors import MatrixError

__all__ = ["AgentMessageSnapshot", "AgentMessageSnapshotUnavailable"]


class AgentMessageSnapshotUnavailable(MatrixError, RuntimeError):  # noqa: N818 - MindRoom's name
    """The latest message could not be read (never raised here: the daemon reads it from memory)."""
