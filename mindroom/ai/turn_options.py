"""What a turn may see and do beyond its messages: how much history, how many tool calls, whether calls show.

`TurnOptions` rides on a generation request; agents and teams turn it into agno's constructor arguments
(`history_options`). With `show_tool_calls`, each tool call the model makes is marked in the answer as
MindRoom marks it (`🔧 \\`name\\` [n]` on a line of its own), where it happens in a streamed answer, before the
text in a whole one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["TurnOptions", "history_options", "tool_marker", "tool_markers"]


@dataclass(frozen=True, slots=True)
class TurnOptions:
    """A turn's limits and display choices (all unset: agno's defaults, nothing marked)."""

    num_history_messages: int | None = None
    """Instead of the request's `num_history_runs`: this many earlier messages."""
    max_tool_calls_from_history: int | None = None
    tool_call_limit: int | None = None
    """The most tool calls the turn runs; agno answers later ones with an error the model reads."""
    show_tool_calls: bool = False


def history_options(num_history_runs: int, options: TurnOptions) -> dict[str, Any]:
    """agno's Agent (or Team) arguments for this much history and these limits."""
    messages = options.num_history_messages
    with_history = messages is not None or num_history_runs > 0
    found: dict[str, Any] = {
        "add_history_to_context": with_history,
        "num_history_runs": num_history_runs if with_history and messages is None else None,
    }
    if messages is not None:
        found["num_history_messages"] = messages
    if options.max_tool_calls_from_history is not None:
        found["max_tool_calls_from_history"] = options.max_tool_calls_from_history
    if options.tool_call_limit is not None:
        found["tool_call_limit"] = options.tool_call_limit
    return found


def tool_marker(tool_name: str, index: int) -> str:
    """The line marking a turn's `index`-th tool call, with blank lines around it."""
    name = tool_name.replace("`", "\\`").replace("@", "@\u200b")  # a marker never mentions anyone
    return f"\n\n🔧 `{name}` [{index}]\n\n"


def tool_markers(tool_names: Iterable[str]) -> str:
    """The markers of a whole answer's tool calls, in order (put before its text)."""
    return "".join(tool_marker(name, index) for index, name in enumerate(tool_names, start=1)).lstrip("\n")
