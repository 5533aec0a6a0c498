"""The agno Agents and models the daemon reuses between turns, per event loop.

A model owns an HTTP client with its connection pool, so models are shared by every agent built from the
same config and environment; an Agent is rebuilt (cheaply) when anything it was built from changes. Model
clients and database connections belong to the event loop that opened them, hence one cache per loop.
"""

from __future__ import annotations

import asyncio
import functools
import sys
import threading
import weakref
from collections.abc import Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agno.agent import Agent
from agno.models.base import Model

from mindroom.ai.chat_transport import close_chat_connections
from mindroom.ai.models import build_model, close_model, model_env_fingerprint
from mindroom.ai.sessions.history import close_session_dbs
from mindroom.config.main import ModelConfig
from mindroom.logging_config import get_logger

if TYPE_CHECKING:
    from agno.team import Team

__all__ = ["AgentCache", "agent_cache", "close_caches"]

logger = get_logger(__name__)


@dataclass
class _LoopEntries:
    agents: dict[Hashable, tuple[Hashable, Agent | Team]] = field(default_factory=dict)
    models: dict[Hashable, Model] = field(default_factory=dict)


class AgentCache:
    """Agents by slot (rebuilt when their fingerprint changes) and models by config, per event loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopEntries] = weakref.WeakKeyDictionary()

    def _entries(self) -> _LoopEntries:
        loop = asyncio.get_running_loop()
        with self._lock:
            return self._by_loop.setdefault(loop, _LoopEntries())

    def agent(self, slot: Hashable, fingerprint: Hashable, build: Callable[[], Agent | Team]) -> Agent | Team:
        """The cached agent (or team) for `slot` if it was built from `fingerprint`, else a new one from `build()`."""
        entries = self._entries()
        cached = entries.agents.get(slot)
        if cached is not None and cached[0] == fingerprint:
            return cached[1]
        agent = build()
        entries.agents[slot] = (fingerprint, agent)
        return agent

    def model(self, config: ModelConfig, env: Mapping[str, str]) -> Model:
        """The shared agno model for a config and the environment values it reads (`ModelConfigError` if unusable)."""
        entries = self._entries()
        key = (config.model_dump_json(), model_env_fingerprint(config, env))
        model = entries.models.get(key)
        if model is None:
            model = build_model(config, env=env, name=f"{config.provider}:{config.id}")
            entries.models[key] = model
        return model

    def take_all(self) -> list[Model]:
        """Forget every agent and model of the running loop and return the models (for closing)."""
        with self._lock:
            entries = self._by_loop.pop(asyncio.get_running_loop(), _LoopEntries())
        return list(entries.models.values())


agent_cache = AgentCache()


async def close_caches() -> None:
    """Close the cached models' HTTP clients and the session databases of the running loop (call on shutdown).

    Each is closed even if one before it fails (a database gone away while stopping): a failure is logged, and
    the daemon's shutdown goes on to release its state.
    """
    # Memory stores exist once memory was used, which imported their module; a daemon without memory never does.
    memory = sys.modules.get("mindroom.ai.memory")
    closers: list[tuple[str, Callable[[], Awaitable[None]]]] = [
        *((f"model {model.id}", functools.partial(close_model, model)) for model in agent_cache.take_all()),
        *((("memory stores", memory.close_memory_dbs),) if memory is not None else ()),
        ("session stores", close_session_dbs),
        ("model connections", close_chat_connections),
    ]
    for what, close in closers:
        try:
            await close()
        except Exception as error:  # shutdown goes on; the failure is logged
            logger.warning("closing failed on shutdown", what=what, error=str(error) or type(error).__name__)
