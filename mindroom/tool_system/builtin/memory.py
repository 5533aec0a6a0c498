"""The built-in `memory` tool (MindRoom's name): an agent searches, adds, changes and forgets what it remembers.

Everything acts on one scope: what this agent remembers about the person the turn speaks for, the same
memories the agent recalls before each answer and writes after it (`mindroom.ai.memory`). A memory id of
another agent or another person is answered as unknown. The agent's memory must be on (`memory.backend`
or its `memory_backend`); otherwise each call says so.
"""

from __future__ import annotations

from mindroom.tool_system.builtin.parts import MemoryDesk, MemoryRecord, ToolCaller, daemon_parts, tool_caller
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = [
    "MAX_MEMORY_CHARS",
    "add_memory",
    "delete_memory",
    "get_memory",
    "list_memories",
    "memory_tools",
    "search_memories",
    "update_memory",
]

MAX_MEMORY_CHARS = 2000
_SIMILAR = 3


def _scope() -> tuple[MemoryDesk, ToolCaller]:
    caller = tool_caller(room_needed=False)
    config = caller.config
    if config is not None and not config.memory_enabled(caller.agent_name):
        raise ToolError("memory is off for you (memory.backend, or your memory_backend, is none)")
    if not caller.requester_id:
        raise ToolError("there is no person in this conversation to remember things about")
    desk = daemon_parts().memories
    if desk is None:
        raise ToolError("memory is not available in this daemon")
    return desk, caller


def _text(content: str) -> str:
    text = content.strip()
    if not text:
        raise ToolError("the memory is empty")
    if len(text) > MAX_MEMORY_CHARS:
        raise ToolError(f"a memory is at most {MAX_MEMORY_CHARS} characters")
    return text


def _lines(heading: str, records: list[MemoryRecord]) -> str:
    return "\n".join([heading, *(f"{i}. [id={r.memory_id}] {r.text}" for i, r in enumerate(records, 1))])


def _limit(value: int, most: int) -> int:
    return max(1, min(int(value), most))


async def add_memory(content: str) -> str:
    """Store a fact about the person you are talking to in your memory.

    Use this when asked to remember something, or for information worth keeping for later conversations.
    To correct a stored memory, use update_memory on it instead of adding a new one.

    Args:
        content: The fact or information to memorize.
    """
    desk, caller = _scope()
    text = _text(content)
    similar = await desk.search(caller.agent_name, caller.requester_id, text, _SIMILAR)
    await desk.add(caller.agent_name, caller.requester_id, text)
    if not similar:
        return f"Memorized: {text}"
    return "\n".join(
        [
            f"Memorized: {text}",
            "",
            _lines("Similar existing memories:", similar),
            "If the new memory corrects one of these, rewrite that entry with update_memory, so no stored memory "
            "contradicts the correction.",
        ]
    )


async def search_memories(query: str, limit: int = 5) -> str:
    """Search what you remember about the person you are talking to.

    Args:
        query: What to search for.
        limit: Maximum number of results (default 5).
    """
    desk, caller = _scope()
    found = await desk.search(caller.agent_name, caller.requester_id, query, _limit(limit, 50))
    if not found:
        return "No relevant memories found."
    return _lines(f"Found {len(found)} memory(ies):", found)


async def list_memories(limit: int = 50) -> str:
    """List everything you remember about the person you are talking to, newest first.

    Args:
        limit: Maximum number of memories (default 50).
    """
    desk, caller = _scope()
    found = await desk.listing(caller.agent_name, caller.requester_id, _limit(limit, 200))
    if not found:
        return "No memories stored yet."
    return _lines(f"All memories ({len(found)}):", found)


async def get_memory(memory_id: str) -> str:
    """Retrieve one memory by its ID.

    Args:
        memory_id: The memory's ID (shown in search and list results as [id=...]).
    """
    desk, caller = _scope()
    found = await desk.get(caller.agent_name, caller.requester_id, memory_id.strip())
    if found is None:
        return f"No memory found with id={memory_id}"
    return f"[id={found.memory_id}] {found.text}"


async def update_memory(memory_id: str, new_content: str) -> str:
    """Rewrite one memory by its ID.

    Args:
        memory_id: The memory's ID (shown in search and list results as [id=...]).
        new_content: The new content of the memory.
    """
    desk, caller = _scope()
    text = _text(new_content)
    if not await desk.update(caller.agent_name, caller.requester_id, memory_id.strip(), text):
        return f"No memory found with id={memory_id}"
    return f"Updated memory [id={memory_id.strip()}]: {text}"


async def delete_memory(memory_id: str) -> str:
    """Forget one memory by its ID.

    Args:
        memory_id: The memory's ID (shown in search and list results as [id=...]).
    """
    desk, caller = _scope()
    if not await desk.delete(caller.agent_name, caller.requester_id, memory_id.strip()):
        return f"No memory found with id={memory_id}"
    return f"Deleted memory [id={memory_id.strip()}]"


def memory_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `memory` group: add, search, list, get, update and delete the agent's memories of the person."""
    functions = (add_memory, search_memories, list_memories, get_memory, update_memory, delete_memory)
    return tuple(ToolSpec(name=function.__name__, function=function) for function in functions)
