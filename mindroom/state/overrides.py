"""The settings changed from chat (`mindroom.config.overrides.Override`), kept across restarts.

`sqlite.overrides.SqliteOverrideStore` keeps them in a file under the data directory,
`postgres.overrides.PostgresOverrideStore` in the state's database. A value is stored as JSON.
"""

from __future__ import annotations

from typing import Protocol

from mindroom.config.overrides import Override

__all__ = ["OverrideStore"]


class OverrideStore(Protocol):
    """Every override in force, one per slot (scope, room, thread, key)."""

    def all(self) -> list[Override]:
        """Every override, oldest first."""

    def put(self, override: Override) -> None:
        """Keep `override` (it replaces the one of its slot, if any)."""

    def remove(self, slot: tuple[str, str, str, str]) -> bool:
        """Drop the override of `slot`; False when there was none."""

    def close(self) -> None:
        """Release what the store holds of its own (the backend closes shared connections)."""
