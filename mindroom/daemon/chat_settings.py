"""`SettingsDesk`: settings changed from chat, checked as config is, kept in the state and made live.

Each change is validated first (a config key only when `mindroom.config.chat_settable` lists it, then with
the whole `config.yaml` and every override, strictly; a room or thread setting as config checks the same
kind of value), then kept in the state's override store,
then made live through the reload coordinator: a room or thread setting is swapped in with the live state
as it is, a config key's change is a reload built on the new overrides. Nothing changes when a check fails;
every change is logged with who made it.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from mindroom.bots.commands.settings import settings_commands
from mindroom.bots.commands.table import CommandTable
from mindroom.bots.runtime import LiveState
from mindroom.config.chat_settable import chat_refusal
from mindroom.config.effective import EffectiveConfig, read_effective_config
from mindroom.config.loading import load_config
from mindroom.config.overrides import ChatSettings, Override, scoped_problems
from mindroom.constants import RuntimePaths
from mindroom.daemon.live import build_live_state
from mindroom.daemon.reload import ReloadCoordinator
from mindroom.errors import ConfigError
from mindroom.logging_config import get_logger, redact_text, redact_value
from mindroom.state.overrides import OverrideStore

__all__ = ["SettingsDesk", "load_settings", "register_settings_commands", "with_chat_settings"]

logger = get_logger(__name__)


def load_settings(store: OverrideStore | None) -> ChatSettings:
    """The settings changed from chat that the state keeps (none without a store)."""
    return ChatSettings(tuple(store.all())) if store is not None else ChatSettings()


async def with_chat_settings(live: LiveState, store: OverrideStore | None, paths: RuntimePaths) -> LiveState:
    """`live` with the settings changed from chat that the state keeps (built again when a config key is among them).

    A config key kept from before that chat may no longer change is passed over, with a warning.
    """
    settings = load_settings(store)
    for override in settings.passed_over():
        logger.warning(
            "chat setting passed over: chat may not change this key",
            key=override.key,
            set_by=override.set_by,
            fix="!config reset " + override.key,
        )
    if not settings.config_overrides():
        return replace(live, settings=settings)
    built = await asyncio.to_thread(build_live_state, paths, previous=None, settings=settings)
    return built.live


def register_settings_commands(
    commands: CommandTable, store: OverrideStore | None, coordinator: ReloadCoordinator, paths: RuntimePaths
) -> None:
    """Register `!model`, `!room_model`, `!thread_mode`, `!instructions` and `!config` (when the state keeps them)."""
    if store is None:
        return
    for command in settings_commands(SettingsDesk(store, coordinator, paths)):
        commands.register(command)


class SettingsDesk:
    """Where the chat commands change settings: the state's override store and the run's reload coordinator."""

    def __init__(self, store: OverrideStore, coordinator: ReloadCoordinator, paths: RuntimePaths) -> None:
        self.store = store
        self.coordinator = coordinator
        self.paths = paths

    async def change(self, override: Override) -> list[str]:
        """Check, keep and apply `override`; the problems when it is refused (then nothing changed)."""
        problems = await self._problems(override)
        if problems:
            logger.info("chat setting refused", key=override.key, scope=override.scope, by=override.set_by)
            return problems
        await asyncio.to_thread(self.store.put, override)
        outcome = await self.coordinator.change_settings(
            lambda settings: settings.with_override(override),
            f"{override.key} set from chat",
            rebuild=_rebuilds(override),
        )
        if outcome is not None and not outcome.ok:  # the reload kept the last good state: so does the store
            await asyncio.to_thread(self.store.remove, override.slot)
            return [outcome.error or "the new config could not be loaded; see the daemon log"]
        logger.info(
            "chat setting changed",
            key=override.key,
            scope=override.scope,
            room_id=override.room_id or None,
            thread_id=override.thread_id or None,
            value=redact_value(override.value),
            by=override.set_by,
        )
        return []

    async def reset(self, slot: tuple[str, str, str, str], by: str) -> bool:
        """Drop the override of `slot` (config.yaml's value applies again); False when there was none."""
        present = self.coordinator.cell.live.settings.at(slot) is not None
        removed = await asyncio.to_thread(self.store.remove, slot)
        if not (present or removed):
            return False
        await self.coordinator.change_settings(
            lambda settings: settings.without(slot), f"{slot[3]} reset from chat", rebuild=slot[0] == "config"
        )
        logger.info("chat setting reset", key=slot[3], scope=slot[0], room_id=slot[1] or None, by=by)
        return True

    async def effective(self, live: LiveState) -> EffectiveConfig:
        """The config in force in `live`, value by value with its source, against config.yaml as it is now."""
        return await asyncio.to_thread(
            read_effective_config, live.config, live.settings, self.paths.config_path, self.paths.env_values
        )

    async def _problems(self, override: Override) -> list[str]:
        live = self.coordinator.cell.live
        if override.scope != "config":
            return scoped_problems(override, live.config.models, live.config.responders())
        refusal = chat_refusal(override.key, override.value)
        if refusal is not None:
            return [refusal]
        overrides = (*live.settings.without(override.slot).config_overrides(), override)
        try:
            await asyncio.to_thread(load_config, self.paths.config_path, self.paths.env_values, overrides, strict=True)
        except ConfigError as error:
            return [redact_text(problem) for problem in error.problems]
        return []


def _rebuilds(override: Override) -> bool:
    return override.scope == "config"
