"""Folding a conversation's history when its agent asks (`compact_context`), as compaction before an answer does.

The agent's stored history of the calling conversation is folded with its turn's model: the older half (by
estimated tokens) becomes one summary run that later turns replay, the newer runs stay as they are. A history
that is already one summary and the newest turn is left as it is. The turn
running the tool already read its history, so the fold shows from the next turn on. `compaction:before` fires
for each chunk and `compaction:after` once, with the agent's hook bindings, as for any compaction.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mindroom.bots.directory import Directory
from mindroom.bots.runtime import LiveCell
from mindroom.hooks.execution import emit
from mindroom.hooks.session_contexts import CompactionHookContext, HistoryScope
from mindroom.hooks.types import EVENT_COMPACTION_AFTER, EVENT_COMPACTION_BEFORE
from mindroom.logging_config import get_logger
from mindroom.tool_system.builtin.parts import ToolCaller
from mindroom.tool_system.spec import ToolError

__all__ = ["HistoryFolder"]

logger = get_logger(__name__)


class HistoryFolder:
    """The `compact_context` tool's desk (`CompactionDesk`) over the run's session stores."""

    def __init__(
        self, cell: LiveCell, directory: Directory, storage_root: Path, env: Any, database_url: str | None
    ) -> None:
        self._cell = cell
        self._directory = directory
        self._storage_root = storage_root
        self._env = env
        self._database_url = database_url

    async def compact(self, caller: ToolCaller) -> str:
        """Fold the older half of the caller's conversation into a summary now."""
        live = self._cell.live
        config = live.config
        agent = config.agents.get(caller.agent_name)
        if agent is None:
            raise ToolError("only an agent's own conversation can be compacted")
        settings = agent.resolved(config.defaults)
        if settings.num_history_runs <= 0 or not caller.session_id:
            return "This conversation keeps no history to compact."
        keys = self._directory.room_keys(caller.room_id) if caller.room_id else frozenset()
        name = live.settings.model_name(
            config.models, config.room_models, agent.model, caller.room_id, caller.thread_id, keys
        )
        model = config.models.get(name)
        if model is None:
            raise ToolError(f"no model named {name!r} is configured")
        from mindroom.ai.compaction import SUMMARY_REQUEST, compact_history, history_tokens
        from mindroom.ai.sessions.history import load_history

        root, url = self._storage_root, self._database_url
        history = await load_history(caller.agent_name, caller.session_id, storage_root=root, database_url=url)
        asked = [text for role, text in history if role == "user"]
        if not asked:
            return "There is no earlier history in this conversation to compact."
        if all(text == SUMMARY_REQUEST for text in asked[:-1]):  # the newest turn stays: nothing new to fold
            return "Nothing to compact: the earlier history is already one summary."
        total = await history_tokens(caller.agent_name, caller.session_id, storage_root=root, database_url=url)
        registry = live.registry
        running = self._directory.entities.get(caller.agent_name)
        base: dict[str, Any] = {
            "agent_name": caller.agent_name,
            "scope": HistoryScope("agent", caller.agent_name),
            "room_id": caller.room_id,
            "thread_id": caller.thread_id,
            "session_id": caller.session_id,
            "correlation_id": caller.correlation_id or "",
            **(running.bindings(live).fields() if running is not None else {}),
        }

        async def before(chunk: Any) -> None:
            ctx = CompactionHookContext(messages=chunk.messages, token_count_before=chunk.token_count_before, **base)
            await emit(registry, EVENT_COMPACTION_BEFORE, ctx)

        after = registry.has_hooks(EVENT_COMPACTION_AFTER)
        result = await compact_history(
            caller.agent_name,
            caller.session_id,
            model=model,
            budget=max(1, total // 2),
            num_history_runs=settings.num_history_runs,
            storage_root=self._storage_root,
            env=self._env,
            database_url=self._database_url,
            on_chunk=before if registry.has_hooks(EVENT_COMPACTION_BEFORE) else None,
            with_messages=after,
        )
        if result is None:
            return "Nothing was compacted: the history is short, or the summary could not be written."
        if after:
            done = CompactionHookContext(
                event_name=EVENT_COMPACTION_AFTER,
                messages=result.messages,
                token_count_before=result.token_count_before,
                token_count_after=result.token_count_after,
                compaction_summary=result.summary,
                **base,
            )
            await emit(registry, EVENT_COMPACTION_AFTER, done)
        logger.info("history compacted on request", agent=caller.agent_name, runs_folded=result.runs_folded)
        return (
            f"Compacted: {result.runs_folded} earlier turn(s) folded into a summary "
            f"(about {result.token_count_before} -> {result.token_count_after} tokens of history); "
            "later turns see the summary."
        )
