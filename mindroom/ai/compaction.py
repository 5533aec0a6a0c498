"""History compaction: when a conversation's stored history passes its token budget, fold the oldest runs
into a summary the model writes, stored as one run that later turns see as history.

Tokens are estimated as characters / 4 over what the model is sent as history (user, assistant and tool
messages with their tool calls; system messages and copies of history are not). Before a run, the newest
runs that fit in three quarters of the budget are kept; they are at most `num_history_runs - 1`, so the
summary itself stays in the replayed window. Everything older is folded, oldest first, in chunks of at
most one budget (or `CHUNK_MIN_TOKENS`, if more): each chunk is summarised together with the summary so
far (one plain completion through the agent's model: no tools, no history) and stored at once (the new
summary run first, then the folded runs deleted), so a crash mid-way loses nothing. Only agno's db
interface is used (`get_runs`, `upsert_run`, `delete_runs`), which every session store has.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agno.models.message import Message
from agno.run.agent import RunOutput
from agno.run.base import HISTORY_SKIP_STATUSES, RunStatus

from mindroom.ai.agents import agent_cache
from mindroom.ai.errors import ModelConfigError
from mindroom.ai.sessions.history import session_db
from mindroom.config.main import ModelConfig
from mindroom.logging_config import get_logger

__all__ = [
    "CHUNK_MIN_TOKENS",
    "COMPACTION_METADATA_KEY",
    "SUMMARY_REQUEST",
    "ChunkListener",
    "CompactionChunk",
    "CompactionResult",
    "compact_history",
    "estimate_tokens",
    "history_tokens",
    "message_tokens",
]

logger = get_logger(__name__)

COMPACTION_METADATA_KEY = "compaction"
"""In a summary run's metadata: how many runs it folded, and the token counts before and after."""
SUMMARY_REQUEST = "Summarise our conversation so far."
"""The user turn of a summary run; its answer is the summary."""
CHUNK_MIN_TOKENS = 4000
"""A chunk may hold this much even under a smaller budget: the summariser reads enough of the story at once."""
_SKIPPED_STATUSES = frozenset(status.value for status in HISTORY_SKIP_STATUSES)
_MESSAGE_CHARS = 4000
"""What the summariser reads of one message at most: a huge tool output must not crowd out the rest."""
_INSTRUCTIONS = (
    "You compress conversations. Summarise the conversation you are given, continuing the earlier summary if "
    "there is one. Keep every fact, decision, name, number, preference, open question and promise a later "
    "reply may need; drop greetings and repetition. Write plain notes in the conversation's language, at most "
    "{words} words. Answer with the summary only."
)


def estimate_tokens(text: str) -> int:
    """Roughly how many tokens `text` is: characters / 4, rounded up."""
    return (len(text) + 3) // 4


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str))
    return "" if content is None else json.dumps(content, default=str)


def _visible(message: Any) -> bool:
    """A stored message the model is sent as history (not a system message, not a copy of older history)."""
    return isinstance(message, dict) and message.get("role") != "system" and not message.get("from_history")


def message_tokens(message: Mapping[str, Any]) -> int:
    """The estimated tokens of one stored message: its text and its tool calls."""
    calls = message.get("tool_calls")
    extra = json.dumps(calls, default=str) if calls else ""
    return estimate_tokens(_text(message.get("content")) + extra)


@dataclass(frozen=True, slots=True)
class _Run:
    row: dict[str, Any]
    messages: list[dict[str, Any]]
    tokens: int

    @property
    def run_id(self) -> str:
        return str(self.row["run_id"])


@dataclass(frozen=True, slots=True)
class CompactionChunk:
    """One chunk about to be folded: its raw stored messages, and the history's tokens before it is stored."""

    messages: list[Any]
    token_count_before: int


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """A finished compaction: every folded message, the counts before and after, the summary and run counts."""

    messages: list[Any]
    token_count_before: int
    token_count_after: int
    summary: str
    runs_folded: int


ChunkListener = Callable[[CompactionChunk], Awaitable[None]]


async def _runs(db: Any, session_id: str) -> list[_Run]:
    result = await db.get_runs(session_id=session_id, deserialize=False)
    rows = result[0] if isinstance(result, tuple) else []
    runs = []
    for row in rows:
        data = row.get("run_data")
        if not isinstance(data, dict) or row.get("status") in _SKIPPED_STATUSES or row.get("parent_run_id"):
            continue
        messages = [message for message in data.get("messages") or [] if _visible(message)]
        runs.append(_Run(row, messages, sum(message_tokens(message) for message in messages)))
    return runs


async def history_tokens(
    agent_name: str, session_id: str, *, storage_root: Path, database_url: str | None = None
) -> int:
    """The estimated tokens of a conversation's stored history, as the model is sent it."""
    db = session_db(storage_root, agent_name, database_url)
    return sum(run.tokens for run in await _runs(db, session_id))


def _split(runs: list[_Run], budget: int, num_history_runs: int) -> tuple[list[_Run], list[_Run]]:
    """(runs to fold, runs to keep): the newest that fit in 3/4 of the budget are kept, leaving room for the summary."""
    room = budget - budget // 4
    kept: list[_Run] = []
    used = 0
    for run in reversed(runs):
        if len(kept) >= num_history_runs - 1 or used + run.tokens > room:
            break
        kept.append(run)
        used += run.tokens
    kept.reverse()
    return runs[: len(runs) - len(kept)], kept


def _chunks(runs: list[_Run], budget: int) -> list[list[_Run]]:
    chunks: list[list[_Run]] = []
    size = 0
    for run in runs:
        if chunks and size + run.tokens <= budget:
            chunks[-1].append(run)
            size += run.tokens
        else:
            chunks.append([run])
            size = run.tokens
    return chunks


def _transcript(runs: Sequence[_Run]) -> str:
    lines = []
    for run in runs:
        for message in run.messages:
            text = _text(message.get("content")).strip()
            for call in message.get("tool_calls") or []:
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict):
                    text += f"\n[calls {function.get('name')} with {function.get('arguments')}]"
            if len(text) > _MESSAGE_CHARS:
                text = text[:_MESSAGE_CHARS] + " [...]"
            if text:
                lines.append(f"{message.get('role')}: {text}")
    return "\n\n".join(lines)


async def _summarise(model: Any, earlier: str | None, runs: Sequence[_Run], words: int) -> str:
    earlier_part = f"Earlier summary:\n{earlier}\n\n" if earlier else ""
    messages = [
        Message(role="system", content=_INSTRUCTIONS.format(words=words)),
        Message(role="user", content=f"{earlier_part}Conversation:\n{_transcript(runs)}"),
    ]
    response = await model.aresponse(messages=messages)
    text = response.content if isinstance(response.content, str) else str(response.content or "")
    if not text.strip():
        msg = "the model returned an empty summary"
        raise ValueError(msg)
    return text.strip()


def _summary_run(
    agent_name: str, session_id: str, summary: str, last: _Run, folded: int, before: int
) -> tuple[RunOutput, int]:
    """The run that stands for the folded ones, at the last folded run's place (its index and time)."""
    created_at = int(last.row.get("created_at") or time.time())
    metadata = {COMPACTION_METADATA_KEY: {"runs": folded, "token_count_before": before}}
    run = RunOutput(
        run_id=str(uuid.uuid4()),
        agent_id=agent_name,
        agent_name=last.row["run_data"].get("agent_name"),
        session_id=session_id,
        content=summary,
        messages=[
            Message(role="user", content=SUMMARY_REQUEST, created_at=created_at),
            Message(role="assistant", content=summary, created_at=created_at),
        ],
        metadata=metadata,
        created_at=created_at,
        status=RunStatus.completed,
    )
    return run, int(last.row.get("run_index") or 0)


def _raw(runs: Sequence[_Run]) -> list[Any]:
    return [Message.from_dict(dict(message)) for run in runs for message in run.messages]


async def compact_history(
    agent_name: str,
    session_id: str,
    *,
    model: ModelConfig,
    budget: int | None,
    num_history_runs: int,
    storage_root: Path,
    env: Mapping[str, str],
    database_url: str | None = None,
    on_chunk: ChunkListener | None = None,
    with_messages: bool = False,
) -> CompactionResult | None:
    """Fold the oldest runs of a conversation over `budget` tokens (at most half the model's `context_window`)
    into a summary; None when nothing was folded.

    `on_chunk` is awaited before each chunk is stored; `with_messages` puts the folded messages (agno
    `Message`s) in the result. A model failure stops the compaction where it is (what was stored stays).
    """
    if not budget or budget <= 0 or num_history_runs <= 0:
        return None
    if model.context_window:  # the history may fill half the window: the rest is instructions, tools, answer
        budget = min(budget, max(1, model.context_window // 2))
    db = session_db(storage_root, agent_name, database_url)
    runs = await _runs(db, session_id)
    total = sum(run.tokens for run in runs)
    if total <= budget:
        return None
    folding, kept = _split(runs, budget, num_history_runs)
    if not folding:
        return None
    try:
        llm = agent_cache.model(model, env)
    except ModelConfigError as exc:  # the answer reports the misconfigured model; compaction just waits
        logger.warning("history compaction skipped", agent=agent_name, session=session_id, error=str(exc))
        return None
    words = max(20, (budget // 4) * 3 // 4)  # a token is about 3/4 of a word; the summary gets a quarter
    remaining = sum(run.tokens for run in folding)
    summary: _Run | None = None
    text = ""
    folded: list[_Run] = []
    for chunk in _chunks(folding, max(budget, CHUNK_MIN_TOKENS)):
        before = (summary.tokens if summary else 0) + remaining + sum(run.tokens for run in kept)
        if on_chunk is not None:
            await on_chunk(CompactionChunk(_raw(chunk), before))
        try:
            text = await _summarise(llm, text or None, chunk, words)
        except Exception as exc:  # the answer still comes, with the history as it is now
            logger.warning("history compaction stopped", agent=agent_name, session=session_id, error=str(exc))
            break
        run, index = _summary_run(agent_name, session_id, text, chunk[-1], len(folded) + len(chunk), total)
        await db.upsert_run(run, session_id=session_id, user_id=chunk[-1].row.get("user_id"), run_index=index)
        replaced = [*(r.run_id for r in chunk), *([summary.run_id] if summary else [])]
        await db.delete_runs(replaced)
        stored = [message for message in run.to_dict()["messages"] if _visible(message)]
        summary = _Run({"run_id": run.run_id}, stored, sum(message_tokens(m) for m in stored))
        folded.extend(chunk)
        remaining -= sum(r.tokens for r in chunk)
    if summary is None:
        return None
    after = summary.tokens + remaining + sum(run.tokens for run in kept)
    logger.info(
        "history compacted",
        agent=agent_name,
        session=session_id,
        runs_folded=len(folded),
        token_count_before=total,
        token_count_after=after,
    )
    messages = _raw(folded) if with_messages else []
    return CompactionResult(messages, total, after, text, len(folded))
