"""Sync positions: the last fully handled sync token of each bot, so a restart resumes where it stopped.

Two implementations: `mindroom.matrix.credentials.SyncTokenStore` keeps them as files beside the bots'
credentials (state in SQLite), `postgres.positions.PostgresSyncTokens` in the state's database. The
composition root hands the backend's one (`StateStores.sync_tokens`) to each Matrix client.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["SyncTokens"]


class SyncTokens(Protocol):
    """The last fully handled sync token per bot."""

    def load(self, bot_name: str) -> str | None:
        """The stored token, or None."""

    def save(self, bot_name: str, token: str) -> None:
        """Keep `token` as the bot's position."""

    def clear(self, bot_name: str) -> None:
        """Forget the bot's position."""
