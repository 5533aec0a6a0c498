"""`ApiEntity`: an agent's running bot as a `/v1` turn sees it: the same account, hooks, counters and slots,
but without the tools that act in a Matrix room (there is none)."""

from __future__ import annotations

from collections.abc import Awaitable
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any

from mindroom.bots.bot_client import BotClient
from mindroom.bots.runtime import BotMetrics, Entity, LiveState, StreamState
from mindroom.hooks.context import HookBindings

__all__ = ["ROOM_TOOLKITS", "ApiEntity"]

ROOM_TOOLKITS = ("matrix", "attachments")
"""Built-in tool groups that act in the conversation's Matrix room: hidden from `/v1` turns."""


class ApiEntity:
    """The `Entity` of one agent for `/v1` turns: its bot, with room-bound tools hidden."""

    __slots__ = ("_bot",)

    def __init__(self, bot: Entity) -> None:
        self._bot = bot

    @property
    def name(self) -> str:
        """The agent's name."""
        return self._bot.name

    @property
    def is_router(self) -> bool:
        """Never the router: `/v1` talks to agents."""
        return False

    @property
    def client(self) -> BotClient:
        """The agent's Matrix client (hooks may still post to rooms they name)."""
        return self._bot.client

    @property
    def metrics(self) -> BotMetrics:
        """The agent's counters: API answers count like Matrix ones."""
        return self._bot.metrics

    @property
    def joined_rooms(self) -> set[str]:
        """The agent's rooms."""
        return self._bot.joined_rooms

    @property
    def in_flight(self) -> int:
        """Events the bot is handling."""
        return self._bot.in_flight

    def bindings(self, live: LiveState, turn: str | None = None) -> HookBindings:
        """The agent's hook capabilities."""
        return self._bot.bindings(live, turn)

    def turn_slot(self, room_id: str, thread_key: str) -> AbstractAsyncContextManager[None]:
        """The agent's slots: one turn at a time per session, API turns sharing one fair lane with the rooms."""
        return self._bot.turn_slot(room_id, thread_key)

    def track_stream(self) -> AbstractContextManager[StreamState]:
        """Registered with the bot, like any streaming answer."""
        return self._bot.track_stream()

    def request_stop(self, response_event_id: str) -> bool:
        """Stop one of the bot's streaming answers."""
        return self._bot.request_stop(response_event_id)

    def tools(self, live: LiveState, requester: str | None = None) -> tuple[Any, ...]:
        """The agent's tools but those acting in a Matrix room."""
        hidden = {
            name
            for toolkit in ROOM_TOOLKITS
            if (provider := live.tools.providers.get(toolkit)) is not None
            for name in provider.tool_names
        }
        own = self._bot.tools(live, requester)
        return tuple(tool for tool in own if getattr(tool, "name", None) not in hidden)

    def spawn(self, work: Awaitable[None], what: str) -> None:
        """A task the bot owns."""
        self._bot.spawn(work, what)

    async def leave(self, room_id: str) -> None:
        """The bot leaves a room."""
        await self._bot.leave(room_id)
