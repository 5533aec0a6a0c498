"""One bot's crypto items as JSON objects, read once and kept in memory, sealed where other machines read them.

Kinds: `secret` (cross-signing seeds, the backup's key and version), `backed_up` (room keys in the backup),
`credentials`, and, in a shared vault only, the device's own store (`account`, `olm`, `megolm`, `device`,
`room`, `key_request`: see `vault_store.VaultStore`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from mindroom.matrix.crypto.sealing import Sealer
from mindroom.state.crypto import CryptoItems, CryptoVault

__all__ = ["BotVault", "read_items"]


async def read_items(vault: CryptoVault, bot_name: str) -> CryptoItems:
    """The bot's raw items, read off the event loop."""
    return await asyncio.to_thread(vault.load, bot_name)


def _decode(value: bytes) -> dict[str, Any]:
    parsed = json.loads(value)
    if not isinstance(parsed, dict):
        msg = "a crypto item is not a JSON object"
        raise ValueError(msg)
    return parsed


class BotVault:
    """The items of one bot: reads from memory, every change written through to the vault."""

    def __init__(self, vault: CryptoVault, bot_name: str, sealer: Sealer | None, raw: CryptoItems) -> None:
        """Opens every item of `raw` (`SealError` when the sealer does not open one; `ValueError` when damaged)."""
        self._vault = vault
        self._bot = bot_name
        self._sealer = sealer
        self._items: dict[tuple[str, str], dict[str, Any]] = {}
        self.replace_items(raw)

    def replace_items(self, raw: CryptoItems) -> None:
        """Take `raw` as the items now (read again after another client of the bot changed them)."""
        opened = {}
        for (kind, key), value in raw.items():
            plain = self._sealer.unseal(self._bot, kind, key, value) if self._sealer is not None else value
            opened[(kind, key)] = _decode(plain)
        self._items = opened

    @property
    def vault(self) -> CryptoVault:
        """Where the items are kept."""
        return self._vault

    def get(self, kind: str, key: str = "") -> dict[str, Any] | None:
        """One item, or None."""
        return self._items.get((kind, key))

    def of_kind(self, kind: str) -> dict[str, dict[str, Any]]:
        """Every item of `kind`, by key."""
        return {key: value for (item_kind, key), value in self._items.items() if item_kind == kind}

    def item_keys(self) -> set[tuple[str, str]]:
        """The (kind, key) of every item."""
        return set(self._items)

    def has(self, kind: str, key: str) -> bool:
        """True when the item exists."""
        return (kind, key) in self._items

    def _encode(self, kind: str, key: str, value: Mapping[str, Any]) -> bytes:
        plain = json.dumps(value, separators=(",", ":"), sort_keys=True).encode()
        return self._sealer.seal(self._bot, kind, key, plain) if self._sealer is not None else plain

    def put(self, kind: str, key: str, value: Mapping[str, Any]) -> None:
        """Keep one item."""
        self.put_many(kind, {key: value})

    def put_many(self, kind: str, values: Mapping[str, Mapping[str, Any]]) -> None:
        """Keep several items of one kind in one write."""
        if not values:
            return
        for key, value in values.items():
            self._items[(kind, key)] = dict(value)
        self._vault.put_many(self._bot, [(kind, key, self._encode(kind, key, value)) for key, value in values.items()])

    def delete(self, kind: str, key: str | None = None) -> None:
        """Drop one item, or every item of `kind`."""
        if key is None:
            for found in [item for item in self._items if item[0] == kind]:
                del self._items[found]
        else:
            self._items.pop((kind, key), None)
        self._vault.delete(self._bot, kind, key)
