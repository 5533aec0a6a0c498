"""A bot's hook capabilities: hook messages relayed by the router (rate limited), room state with a fallback.

Hooks receive capabilities, never raw clients: `send_message` posts through the router, so every
hook message in a room comes from one account; `query_room_state` and `put_room_state` try the bot's
own account first, then the router's (which is in every managed room and may hold the power level).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from mindroom.bots.admin import RouterAdmin
from mindroom.bots.bot_client import BotClient
from mindroom.bots.directory import Directory
from mindroom.bots.limits import SlidingWindow
from mindroom.bots.pipeline_capabilities import RunClock
from mindroom.bots.recent import RecentMessages
from mindroom.bots.room_policy import weakening_reason
from mindroom.bots.runtime import LiveState
from mindroom.constants import HOOK_SOURCE_KEY, RuntimePaths
from mindroom.hooks.context import HookBindings
from mindroom.logging_config import get_logger
from mindroom.matrix.delivery import send_until_accepted, stable_txn_id

__all__ = ["HOOK_SEND_LIMIT", "HOOK_SEND_WINDOW_S", "BotBindings"]

logger = get_logger(__name__)

HOOK_SEND_WINDOW_S = 10.0
HOOK_SEND_LIMIT = 20


class _TurnSender:
    """Hook messages of one turn: each gets a transaction id derived from the turn, the hook and its count,
    so a retried or replayed send is taken by the homeserver once."""

    def __init__(self, bindings: BotBindings, turn: str) -> None:
        self._bindings = bindings
        self._turn = turn
        self._sent: Counter[str] = Counter()

    async def send(
        self, room_id: str, text: str, thread_id: str | None = None, extra_content: dict[str, Any] | None = None
    ) -> str | None:
        source = str((extra_content or {}).get(HOOK_SOURCE_KEY, ""))
        self._sent[source] += 1
        txn_id = stable_txn_id(self._bindings.name, self._turn, f"hook\0{source}\0{self._sent[source]}")
        return await self._bindings.send(room_id, text, thread_id, extra_content, txn_id=txn_id)


class BotBindings:
    """The capabilities every hook context of one bot gets; `for_live` adds that generation's config.

    It reads who is where (the router relays hook messages and administers rooms), the paths, the run's
    start, and the recent messages hooks take snapshots of.
    """

    def __init__(
        self,
        name: str,
        client: BotClient,
        *,
        directory: Directory,
        paths: RuntimePaths,
        clock: RunClock,
        recent: RecentMessages,
    ) -> None:
        self.name = name
        self.client = client
        self._directory = directory
        self._paths = paths
        self._clock = clock
        self._recent = recent
        self._hook_sends = SlidingWindow(HOOK_SEND_LIMIT, HOOK_SEND_WINDOW_S)
        self._admin = RouterAdmin(directory, name)

    def for_live(self, live: LiveState, turn: str | None = None) -> HookBindings:
        """The capabilities of a hook context running on `live`; with `turn`, hook messages get stable ids."""
        sender = _TurnSender(self, turn).send if turn is not None else self.send
        return HookBindings(
            config=live.config,
            runtime_paths=self._paths,
            message_sender=sender,
            room_state_querier=self.query_state,
            room_state_putter=self.put_state,
            matrix_admin=self._admin if self._directory.router is not None else None,
            runtime_started_at=self._clock.started_at_ms / 1000,
            agent_message_snapshot_reader=self._recent.latest,
        )

    async def send(
        self,
        room_id: str,
        text: str,
        thread_id: str | None = None,
        extra_content: dict[str, Any] | None = None,
        *,
        txn_id: str | None = None,
    ) -> str | None:
        """Send a hook-originated message through the router (the relay), rate limited per plugin and room.

        The send waits out a homeserver outage with one transaction id, so it is posted once.
        """
        source = str((extra_content or {}).get(HOOK_SOURCE_KEY, "")).split(":", 1)[0]
        if not self._hook_sends.allow((source, room_id)):
            logger.warning("hook message rate limited", agent=self.name, plugin=source, room_id=room_id)
            return None
        relay = self._directory.router
        client = relay.client if relay is not None else self.client
        return await send_until_accepted(
            lambda txn: client.send_message(
                room_id, text, thread_root=thread_id, extra_content=extra_content, txn_id=txn
            ),
            "hook message",
            txn_id,
        )

    def _state_clients(self) -> list[BotClient]:
        clients = [self.client]
        router = self._directory.router
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
        """Set a room state event, as this bot, else as the router; True once one of them could.

        A write that would weaken an encrypted room (`room_policy`) is refused whoever would make it."""
        clients = self._state_clients()
        reason = await weakening_reason(clients[-1], room_id, event_type, content)
        if reason is not None:
            logger.warning("room state refused", agent=self.name, room_id=room_id, type=event_type, reason=reason)
            return False
        for client in clients:
            if await client.put_room_state(room_id, event_type, state_key, content):
                return True
        return False
