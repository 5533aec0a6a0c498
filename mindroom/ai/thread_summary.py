"""A thread's short summary, written by the summary model from the thread's messages."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from agno.models.message import Message

from mindroom.ai.agents import agent_cache
from mindroom.config.models import ModelConfig

__all__ = ["SUMMARY_MAX_CHARS", "plain_summary", "write_thread_summary"]

SUMMARY_MAX_CHARS = 300
_MESSAGE_CHARS = 2000
_INSTRUCTIONS = (
    "You write the one-line summary shown for a chat thread. Say what the thread is about and where it stands "
    "(decided, open question, waiting on someone), in at most 30 words and a single sentence. Plain text only: "
    "no Markdown, no quotes, no preamble."
)
_MARKUP = re.compile(r"[*_`#>]+")


def plain_summary(text: str) -> str:
    """The summary as one plain line of at most `SUMMARY_MAX_CHARS` characters."""
    line = " ".join(_MARKUP.sub("", text).split())
    return line if len(line) <= SUMMARY_MAX_CHARS else line[: SUMMARY_MAX_CHARS - 3].rstrip() + "..."


async def write_thread_summary(
    model: ModelConfig,
    name: str,
    env: Mapping[str, str],
    lines: Sequence[tuple[str, str]],
    temperature: float | None,
) -> str:
    """The summary of a thread given as (author, text) lines, from the model `name` at `temperature`."""
    built = agent_cache.model(model.model_copy(update={"temperature": temperature}), env)  # closed on stop
    transcript = "\n".join(f"{author}: {text[:_MESSAGE_CHARS]}" for author, text in lines)
    messages = [Message(role="system", content=_INSTRUCTIONS), Message(role="user", content=transcript)]
    response = await built.aresponse(messages=messages)
    text = response.content if isinstance(response.content, str) else str(response.content or "")
    summary = plain_summary(text)
    if not summary:
        msg = f"the model {name!r} wrote an empty thread summary"
        raise ValueError(msg)
    return summary
