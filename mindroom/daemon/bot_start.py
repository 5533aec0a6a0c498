"""Starting the bots: one whose crypto store is lost stays down, the others start.

A bot whose device has published keys but whose crypto store is missing or unreadable is refused by its
Matrix client (`MatrixCryptoStoreError`): a new device would silently make every message encrypted for
the old one unreadable. That refusal is the bot's own; the router and the other agents still run. The
router is the exception: it creates the rooms and routes every message, so without it nothing runs.

The operator allows a new device per bot, with `mindroom run --new-device BOT` (or
`MINDROOM_NEW_CRYPTO_DEVICE`: `1` for every bot, or a comma-separated list of names).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from mindroom.constants import ROUTER_AGENT_NAME
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixCryptoStoreError

__all__ = ["BotDown", "NewDevices", "StartingBot", "start_bots", "tell_admin_room"]

logger = get_logger(__name__)

_EVERY = frozenset({"1", "true", "yes", "all"})
_NONE = frozenset({"", "0", "false", "no"})


@dataclass(frozen=True, slots=True)
class NewDevices:
    """Which bots may replace a lost crypto store with a new device: every one, or those named."""

    every: bool = False
    bots: frozenset[str] = frozenset()

    @classmethod
    def from_settings(cls, environment_value: str | None, flags: Iterable[str] = ()) -> NewDevices:
        """`--new-device` names plus `MINDROOM_NEW_CRYPTO_DEVICE` (`1`/`true`: every bot; else names, with commas)."""
        value = (environment_value or "").strip()
        named = {name.strip() for name in flags if name.strip()}
        if value.lower() in _EVERY:
            return cls(every=True, bots=frozenset(named))
        if value.lower() not in _NONE:
            named |= {name.strip() for name in value.split(",") if name.strip()}
        return cls(bots=frozenset(named))

    def allows(self, bot: str) -> bool:
        """True when `bot` may start as a new device if its crypto store is lost."""
        return self.every or bot in self.bots

    def unknown(self, bots: Collection[str]) -> list[str]:
        """Names given that are no bot of this config (a typo would otherwise go unnoticed)."""
        return sorted(self.bots - set(bots))


@dataclass(frozen=True, slots=True)
class BotDown:
    """A bot that did not start because its crypto store is lost, and what the operator can do."""

    name: str
    path: str
    problem: str

    @property
    def fix(self) -> str:
        """The two ways out, for the log, the admin room and `mindroom doctor`."""
        return (
            f"restore {self.path} from a backup, or start once with `mindroom run --new-device {self.name}` for a"
            " new device (it cannot read messages encrypted for the old one)"
        )

    def notice(self) -> str:
        """What the admin room is told (the store's place under the data directory, no absolute path)."""
        return (
            f"⚠️ {self.name} is not running: its encryption store (crypto/{self.name}/crypto.db) is missing or"
            f" unreadable, and starting it as a new device would leave messages encrypted for its old device"
            f" unreadable. Restore the store from a backup, or restart with `mindroom run --new-device {self.name}`."
        )


class StartingBot(Protocol):
    """What starting needs of a bot: its start, and its client to close when the start failed."""

    @property
    def client(self) -> _Closable: ...  # pragma: no cover - a protocol

    def start(self) -> Awaitable[str]: ...  # pragma: no cover - a protocol


class _Closable(Protocol):
    def close(self) -> Awaitable[None]: ...  # pragma: no cover - a protocol


async def start_bots(bots: Mapping[str, StartingBot]) -> dict[str, BotDown]:
    """Start every bot at once; returns those that stay down for a lost crypto store (their clients closed).

    A lost store of the router, or any other failure, is raised as before: the daemon cannot run.
    """
    names = list(bots)
    results = await asyncio.gather(*(bots[name].start() for name in names), return_exceptions=True)
    down: dict[str, BotDown] = {}
    for name, result in zip(names, results, strict=True):
        if isinstance(result, MatrixCryptoStoreError) and name != ROUTER_AGENT_NAME:
            down[name] = BotDown(name, result.path, result.problem)
            with contextlib.suppress(Exception):  # the client never finished logging in; closing is tidying up
                await bots[name].client.close()
            logger.error(
                "bot not started: its crypto store is lost; the other bots run",
                agent=name,
                path=result.path,
                problem=result.problem,
                fix=down[name].fix,
            )
    for name, result in zip(names, results, strict=True):
        if isinstance(result, BaseException) and name not in down:
            raise result
    return down


async def tell_admin_room(down: Mapping[str, BotDown], send: Callable[[str], Awaitable[object]]) -> None:
    """Post one notice per bot that stays down (best effort: the log already has it)."""
    for bot in down.values():
        try:
            await send(bot.notice())
        except Exception as exc:
            logger.warning("admin notice failed", agent=bot.name, error=str(exc))
