"""Each bot's crypto items: what its Matrix device keeps besides messages, as opaque values under (kind, key).

The Matrix layer decides what the items are (the device's account and sessions, the cross-signing and
backup keys, which room keys are backed up) and seals them where other machines can read them; this
layer keeps bytes. Two implementations: `sqlite.crypto.SqliteCryptoVault`, one file per bot under
`<data>/crypto/<bot>/` (there the device's own store stays nio's file beside it, so it holds the keys and
backup marks only), and `postgres.crypto.PostgresCryptoVault`, one table in the state's database holding
everything, so a standby on another machine continues with the same devices.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

__all__ = ["CryptoItems", "CryptoVault"]

CryptoItems = dict[tuple[str, str], bytes]
"""A bot's items: (kind, key) -> value."""


class CryptoVault(Protocol):
    """The crypto items of every bot of one daemon."""

    @property
    def location(self) -> str:
        """Where the items are, safe to show (a folder, or a database without its password)."""

    @property
    def shared(self) -> bool:
        """True for a database other machines reach: a device's whole crypto state lives there, sealed."""

    def load(self, bot_name: str) -> CryptoItems:
        """Every item of the bot (blocks: call it off the event loop)."""

    def put(self, bot_name: str, kind: str, key: str, value: bytes) -> None:
        """Keep one item (replacing the one under the same kind and key)."""

    def put_many(self, bot_name: str, items: Iterable[tuple[str, str, bytes]]) -> None:
        """Keep several items of the bot at once: (kind, key, value) each."""

    def delete(self, bot_name: str, kind: str, key: str | None = None) -> None:
        """Drop one item, or with no `key` every item of that kind."""

    def bots(self) -> list[str]:
        """The bots that have items (blocks)."""

    def close(self) -> None:
        """Release what the vault holds of its own."""
