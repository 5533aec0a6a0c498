"""Background observers: hooks marked `background=True` run apart from the pipeline, which never waits for them.

Each plugin has one bounded queue and one worker task that runs its background calls one after another, each
as any hook call is run (its timeout, its breaker, its failures counted). A call that finds its plugin's queue
full is dropped and counted (`HookStats.dropped`). The queues live as long as the daemon: a reload hands them
to the new registry. `drain` (at shutdown) takes no more calls, lets the queued ones finish within the grace
period, and counts what is left as dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from mindroom.hooks.hook_context import HookContextBase
from mindroom.logging_config import get_logger

__all__ = ["BACKGROUND_QUEUE_SIZE", "BackgroundObservers", "RunHook"]

logger = get_logger(__name__)

BACKGROUND_QUEUE_SIZE = 100
"""Background calls one plugin may have waiting; more are dropped."""


class _Stats(Protocol):
    dropped: int


class _Hook(Protocol):
    """What the queues read of a registered hook (the registry holds the queues, so this module cannot name it)."""

    @property
    def plugin_name(self) -> str:
        """The hook's plugin."""

    @property
    def hook_name(self) -> str:
        """The hook's name."""

    @property
    def event_name(self) -> str:
        """The event it observes."""

    @property
    def stats(self) -> _Stats:
        """Its counters (`dropped` is counted here)."""


RunHook = Callable[[Any, HookContextBase, float], Awaitable[object]]
"""How a queued call runs: `invocation.call_hook`, given by the emitter (isolated, timed, counted)."""
_Call = tuple[_Hook, HookContextBase, float, RunHook]


class _PluginQueue:
    """One plugin's waiting calls, the worker running them, and the call it is running."""

    __slots__ = ("current", "queue", "worker")

    def __init__(self, size: int) -> None:
        self.queue: asyncio.Queue[_Call] = asyncio.Queue(size)
        self.current: _Hook | None = None
        self.worker: asyncio.Task[None] | None = None


class BackgroundObservers:
    """The background calls of every plugin: a bounded queue and a worker per plugin, owned until `drain`."""

    __slots__ = ("_closed", "_queues", "size")

    def __init__(self, size: int = BACKGROUND_QUEUE_SIZE) -> None:
        self.size = size
        self._queues: dict[str, _PluginQueue] = {}
        self._closed = False

    def submit(self, hook: _Hook, ctx: HookContextBase, threshold_s: float, run: RunHook) -> None:
        """Queue one call of a background hook, run later by `run` (dropped and counted when the queue is full)."""
        if self._closed:
            self._drop(hook, "stopping")
            return
        plugin = self._queue_of(hook.plugin_name)
        try:
            plugin.queue.put_nowait((hook, ctx, threshold_s, run))
        except asyncio.QueueFull:
            self._drop(hook, "queue full")

    def waiting(self, plugin_name: str) -> int:
        """Calls of the plugin waiting in its queue (not the one running)."""
        plugin = self._queues.get(plugin_name)
        return plugin.queue.qsize() if plugin is not None else 0

    def _queue_of(self, plugin_name: str) -> _PluginQueue:
        plugin = self._queues.get(plugin_name)
        loop = asyncio.get_running_loop()
        if plugin is None or plugin.worker is None or plugin.worker.get_loop() is not loop:
            # A queue belongs to the loop that made it; a daemon restarted on a new loop gets new ones.
            plugin = self._queues[plugin_name] = _PluginQueue(self.size)
            plugin.worker = loop.create_task(self._work(plugin), name=f"mindroom-background-hooks-{plugin_name}")
        return plugin

    async def _work(self, plugin: _PluginQueue) -> None:
        while True:
            hook, ctx, threshold_s, run = await plugin.queue.get()
            plugin.current = hook
            try:
                await run(hook, ctx, threshold_s)  # isolated: a failure is the hook's, counted, and logged
            finally:
                plugin.current = None
                plugin.queue.task_done()

    @staticmethod
    def _drop(hook: _Hook, why: str) -> None:
        hook.stats.dropped += 1
        logger.warning(
            "background hook call dropped", plugin=hook.plugin_name, hook=hook.hook_name, hook_event=hook.event_name,
            why=why,
        )  # fmt: skip

    async def drain(self, grace_s: float) -> int:
        """Take no more calls; let the queued ones finish within `grace_s`, then stop the workers. Returns the
        calls dropped here (queued or running when the grace ran out)."""
        self._closed = True
        plugins = [plugin for plugin in self._queues.values() if plugin.worker is not None]
        if not plugins:
            return 0
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(grace_s, 0.0)):
                await asyncio.gather(*(plugin.queue.join() for plugin in plugins))
        dropped = 0
        for plugin in plugins:
            if plugin.current is not None:
                self._drop(plugin.current, "shutdown grace ran out")
                dropped += 1
            while not plugin.queue.empty():
                hook, *_ = plugin.queue.get_nowait()
                self._drop(hook, "shutdown grace ran out")
                dropped += 1
            assert plugin.worker is not None
            plugin.worker.cancel()
        await asyncio.gather(
            *(plugin.worker for plugin in plugins if plugin.worker is not None), return_exceptions=True
        )
        self._queues.clear()
        return dropped
