"""Starting the bots: one whose device cannot go on (its crypto store lost or locked) stays down, the others start.

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
from mindroom.matrix import MatrixCryptoStoreError, MatrixDeviceError, MatrixRecoveryError

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
    """A bot that did not start because its device cannot go on, and what the operator can do.

    `path` is the lost crypto store, when that is the cause; otherwise the crypto state (in the database,
    or secret storage) did not open with the recovery key given, and `remedy` says what to do.
    """

    name: str
    path: str | None
    problem: str
    remedy: str | None = None

    @classmethod
    def from_error(cls, name: str, error: MatrixDeviceError) -> BotDown:
        """What `error` says about bot `name`."""
        if isinstance(error, MatrixCryptoStoreError):
            return cls(name, error.path, error.problem)
        if isinstance(error, MatrixRecoveryError):
            return cls(name, None, error.problem, error.fix)
        return cls(name, None, str(error))

    @property
    def fix(self) -> str:
        """The ways out, for the log, the admin room and `mindroom doctor`."""
        if self.remedy is not None:
            return self.remedy
        return (
            f"restore {self.path or 'its crypto store'} from a backup, or start once with"
            f" `mindroom run --new-device {self.name}` for a new device (it cannot read messages encrypted for the"
            " old one)"
        )

    def notice(self) -> str:
        """What the admin room is told (the store's place under the data directory, no absolute path)."""
        if self.path is None:
            return f"⚠️ {self.name} is not running: {self.problem}. {self.fix}."
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
    """Start every bot at once; returns those that stay down for their device (their clients closed).

    A lost store of the router, or any other failure, is raised as before: the daemon cannot run.
    """
    names = list(bots)
    results = await asyncio.gather(*(bots[name].start() for name in names), return_exceptions=True)
    down: dict[str, BotDown] = {}
    for name, result in zip(names, results, strict=True):
        if isinstance(result, MatrixDeviceError) and name != ROUTER_AGENT_NAME:
            down[name] = BotDown.from_error(name, result)
            with contextlib.suppress(Exception):  # the client never finished logging in; closing is tidying up
                await bots[name].client.close()
            logger.error(
                "bot not started: its device cannot go on; the other bots run",
                agent=name,
                path=down[name].path,
                problem=down[name].problem,
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
