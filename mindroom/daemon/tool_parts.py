"""The parts of one run the built-in tools reach (`mindroom.tool_system.builtin.parts`), provided as it starts.

Provided once the run has its schedules and its reload coordinator (the `reload` phase), withdrawn when it
stops. Each part is the run's own: the scheduler's store, the hand-off desk, the memory store, the session
stores, `!config`'s settings desk and override store, the directory of accounts, the live tool catalogue.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mindroom.ai.memory_desk import ScopedMemories
from mindroom.bots.agent_rooms import AgentRooms
from mindroom.bots.compact_now import HistoryFolder
from mindroom.bots.runtime import LiveCell
from mindroom.bots.usage.report import UsageSummaries
from mindroom.config.chat_settable import chat_refusal
from mindroom.config.effective import EffectiveConfig
from mindroom.config.loading import load_config
from mindroom.config.overrides import Override, scoped_problems
from mindroom.daemon.chat_settings import SettingsDesk
from mindroom.daemon.reload import ReloadCoordinator
from mindroom.daemon.scheduling.agent_tasks import AgentSchedules
from mindroom.daemon.scheduling.scheduler import Scheduler
from mindroom.daemon.startup.plan import PhaseStops, Stopping
from mindroom.daemon.wiring import RunningDaemon
from mindroom.errors import ConfigError
from mindroom.logging_config import get_logger, redact_text
from mindroom.state.overrides import OverrideStore
from mindroom.tasks import TaskOwner
from mindroom.tool_system.builtin.parts import DaemonParts, ToolCaller, provide_daemon_parts
from mindroom.tool_system.spec import AgentToolEnvironment, ToolSpec

__all__ = ["LiveTools", "ToolSettings", "provide_tool_parts"]

logger = get_logger(__name__)


class LiveTools:
    """`ToolLookup` over the live tool catalogue (a reload's catalogue from its next call on)."""

    def __init__(self, cell: LiveCell) -> None:
        self._cell = cell

    def specs(self, names: Sequence[str], env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
        """The tools `names` give an agent, each with its description and schema."""
        from mindroom.ai.tools import described

        return tuple(described(spec) for spec in self._cell.live.tools.tools_for(names, env))

    def names(self) -> Mapping[str, tuple[str, ...]]:
        """Every catalogue name with the function names it gives."""
        return {name: provider.tool_names for name, provider in self._cell.live.tools.providers.items()}


class ToolSettings:
    """`SettingsPort`: `!config`'s desk, for the person a tool call's turn speaks for.

    A change is checked during the call (the chat allowlist, then the whole config with it) and kept and applied
    in a task of its own once checked: applying it is a reload, which may restart the very agent whose turn
    called the tool, and a restart waits for that turn to end.
    """

    def __init__(self, desk: SettingsDesk, cell: LiveCell) -> None:
        self._desk = desk
        self._cell = cell
        self.tasks = TaskOwner("config tools")

    def administrator(self, caller: ToolCaller) -> bool:
        """Whether the turn's person is one of `administrators` (as every settings command asks)."""
        if caller.requester_id and caller.requester_id in self._cell.live.config.administrators:
            return True
        logger.info("config tool refused: not an administrator", requester=caller.requester_id, agent=caller.agent_name)
        return False

    async def change(self, caller: ToolCaller, key: str, value: Any, *, dry_run: bool = False) -> list[str]:
        """Check, and unless `dry_run` keep and apply, `key: value` as a setting from chat by the turn's person."""
        if not self.administrator(caller):
            return ["only administrators may change settings"]
        override = Override("config", key, value, caller.requester_id, time.time())
        problems = await self._problems(override)
        if not problems and not dry_run:
            self.tasks.spawn(self._apply(override), "config change from a tool")
        return problems

    async def _problems(self, override: Override) -> list[str]:
        refusal = chat_refusal(override.key, override.value)
        if refusal is not None:
            return [refusal]
        live = self._cell.live
        overrides = (*live.settings.without(override.slot).config_overrides(), override)
        paths = self._desk.paths
        try:
            await asyncio.to_thread(load_config, paths.config_path, paths.env_values, overrides, strict=True)
        except ConfigError as error:
            return [redact_text(problem) for problem in error.problems]
        return []

    async def _apply(self, override: Override) -> None:
        problems = await self._desk.change(override)
        if problems:
            logger.warning("config change from a tool not applied", key=override.key, problems=problems)

    async def effective(self) -> EffectiveConfig:
        """The config in force, value by value with its source."""
        return await self._desk.effective(self._cell.live)

    async def change_thread(self, caller: ToolCaller, key: str, value: Any) -> list[str]:
        """Check and then (in a task: the caller's own turn must not wait on it) set or reset a thread setting."""
        if not self.administrator(caller):
            return ["only administrators may change settings"]
        if not caller.thread_id:
            return ["this works in a thread only"]
        if value is None:
            slot = ("thread", caller.room_id, caller.thread_id, key)
            self.tasks.spawn(self._reset(slot, caller.requester_id), "thread setting reset from a tool")
            return []
        override = Override("thread", key, value, caller.requester_id, time.time(), caller.room_id, caller.thread_id)
        live = self._cell.live
        problems = scoped_problems(override, live.config.models, live.config.responders())
        if not problems:
            self.tasks.spawn(self._apply(override), "thread setting from a tool")
        return problems

    async def _reset(self, slot: tuple[str, str, str, str], by: str) -> None:
        await self._desk.reset(slot, by)

    def thread_setting(self, caller: ToolCaller, key: str) -> Any:
        """The value set from chat for the caller's thread."""
        found = self._cell.live.settings.get("thread", key, caller.room_id, caller.thread_id or "")
        return found.value if found is not None else None


def provide_tool_parts(
    running: RunningDaemon,
    scheduler: Scheduler,
    reloader: ReloadCoordinator,
    overrides: OverrideStore | None,
    stops: PhaseStops,
) -> DaemonParts:
    """Offer this run's parts to the built-in tools of its turns, until it stops."""
    paths, stores = running.paths, running.stores
    settings = ToolSettings(SettingsDesk(overrides, reloader, paths), running.cell) if overrides is not None else None
    parts = DaemonParts(
        schedules=AgentSchedules(scheduler, running.directory),
        handoffs=running.handoffs,
        memories=ScopedMemories(paths.storage_root, stores.session_url),
        compaction=HistoryFolder(
            running.cell, running.directory, paths.storage_root, paths.env_values, stores.session_url
        ),
        settings=settings,
        rooms=AgentRooms(running.directory, running.cell, stores.journal),
        tools=LiveTools(running.cell),
        usage=UsageSummaries(stores.usage) if stores.usage is not None else None,
    )
    withdraw = provide_daemon_parts(paths.storage_root, parts)
    stops.add("built-in tools' parts", _stopper(withdraw, settings))
    return parts


def _stopper(withdraw: Callable[[], None], settings: ToolSettings | None) -> Callable[[Stopping], Any]:
    async def stop(stopping: Stopping) -> None:
        withdraw()
        if settings is not None:
            await settings.tasks.cancel_all(stopping.grace_s)

    return stop
