"""A bot's hook capabilities: hook messages relayed by the router (rate limited), room state with a fallback.

Hooks receive capabilities, never raw clients: `send_message` posts through the router, so every
hook message in a room comes from one account; `query_room_state` and `put_room_state` try the bot's
own account first, then the router's (which is in every managed room and may hold the power level).
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from mindroom.bots.runtime import DaemonRuntime, LiveState
from mindroom.constants import HOOK_SOURCE_KEY, ROUTER_AGENT_NAME
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixBotClient

__all__ = ["HOOK_SEND_LIMIT", "HOOK_SEND_WINDOW_S", "BotBindings"]

logger = get_logger(__name__)

HOOK_SEND_WINDOW_S = 10.0
HOOK_SEND_LIMIT = 20


class BotBindings:
    """The capabilities every hook context of one bot gets; `for_live` adds that generation's config."""

    def __init__(self, name: str, runtime: DaemonRuntime, client: MatrixBotClient) -> None:
        self.name = name
        self.runtime = runtime
        self.client = client
        self._hook_sends: dict[tuple[str, str], deque[float]] = {}

    def for_live(self, live: LiveState) -> dict[str, Any]:
        """The capability fields of a hook context for a turn running on `live`."""
        return {
            "config": live.config,
            "runtime_paths": self.runtime.runtime_paths,
            "message_sender": self.send,
            "room_state_querier": self.query_state,
            "room_state_putter": self.put_state,
        }

    def _allowed(self, source: str, room_id: str) -> bool:
        now = time.monotonic()
        window = self._hook_sends.setdefault((source, room_id), deque())
        while window and now - window[0] > HOOK_SEND_WINDOW_S:
            window.popleft()
        if len(window) >= HOOK_SEND_LIMIT:
            return False
        window.append(now)
        return True

    async def send(
        self, room_id: str, text: str, thread_id: str | None = None, extra_content: dict[str, Any] | None = None
    ) -> str | None:
        """Send a hook-originated message through the router (the relay), rate limited per plugin and room."""
        source = str((extra_content or {}).get(HOOK_SOURCE_KEY, "")).split(":", 1)[0]
        if not self._allowed(source, room_id):
            logger.warning("hook message rate limited", agent=self.name, plugin=source, room_id=room_id)
            return None
        relay = self.runtime.bots.get(ROUTER_AGENT_NAME)
        client = relay.client if relay is not None else self.client
        return await client.send_message(room_id, text, thread_root=thread_id, extra_content=extra_content)

    def _state_clients(self) -> list[MatrixBotClient]:
        clients = [self.client]
        router = self.runtime.bots.get(ROUTER_AGENT_NAME)
        if router is not None and router.client is not self.client:
            clients.append(router.client)
        return clients

    async def query_state(self, room_id: str, event_type: str, state_key: str | None) -> dict[str, Any] | None:
        """A room state event's content, read as this bot, else as the router."""
        for client in self._state_clients():
            result = await client.get_room_state(room_id, event_type, state_key)
            if result is not None:
                return result
        return None

    async def put_state(self, room_id: str, event_type: str, state_key: str, content: dict[str, Any]) -> bool:
        """Set a room state event, as this bot, else as the router; True once one of them could."""
        for client in self._state_clients():
            if await client.put_room_state(room_id, event_type, state_key, content):
                return True
        return False
