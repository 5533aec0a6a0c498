"""Scripting the memory model on the scripted server: which requests are agno's memory extraction, what they store.

agno's `MemoryManager` asks the model with a system prompt of its own and the `add_memory` tool; after the
tool ran it asks again for a closing text. `script_memory` answers those requests so a test decides what an
agent remembers, and only when a message says a given thing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mindroom.testing.model_replies import Text, ToolCall, content_text
from mindroom.testing.model_server import ScriptedModelServer

__all__ = ["is_memory_request", "script_memory"]

_MARK = "You are a Memory Manager"


def is_memory_request(request: Mapping[str, Any]) -> bool:
    """Whether a chat request is agno's memory extraction (not an agent's turn)."""
    messages = request.get("messages") or []
    return any(m.get("role") == "system" and _MARK in content_text(m.get("content")) for m in messages)


def _said(request: Mapping[str, Any], words: str) -> bool:
    return any(
        m.get("role") == "user" and words in content_text(m.get("content")) for m in request.get("messages") or []
    )


def _tool_ran(request: Mapping[str, Any]) -> bool:
    return any(m.get("role") == "tool" for m in request.get("messages") or [])


def script_memory(server: ScriptedModelServer, when_said: str, fact: str) -> None:
    """Store `fact` when a person's message contains `when_said`; note nothing for any other message."""
    server.when(
        lambda r: is_memory_request(r) and not _tool_ran(r) and _said(r, when_said),
        ToolCall("add_memory", {"memory": fact}),
    )
    server.when(lambda r: is_memory_request(r) and _tool_ran(r), Text("Noted."))
    server.when(is_memory_request, Text("Nothing to note."))
