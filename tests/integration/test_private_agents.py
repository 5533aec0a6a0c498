"""Private agents on a real Synapse: each person who talks to an agent with `private:` gets a copy of its
workspace of their own (seeded from the template, its context files and MEMORY.md read from there), so what
one person has it write, the other can neither read nor have recalled; a shared agent beside it is unchanged."""

from __future__ import annotations

import pytest

from mindroom.config.agent import AgentPrivateConfig
from mindroom.state.private_roots import requester_workspace
from mindroom.testing.model_replies import content_text
from mindroom.testing.model_server import Text, ToolCall
from mindroom.tool_system.workspace_layout import workspace_dir
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

FACT = "Alice drinks green tea"
SOUL = "You are a kind companion."


async def _ask(e2e: E2E, human: HumanClient, room_id: str, agent: str, text: str) -> list[dict]:
    """Mention `agent` with `text` in a new thread, wait for its answer; its model requests for it."""
    before = len(e2e.model_server.requests)
    agent_id = e2e.user_id(agent)
    event_id = await human.send(room_id, f"@{agent} {text}", mentions=[agent_id])
    await human.wait_for(thread_replies(event_id, agent_id), timeout=30)
    return [r for r in e2e.model_server.requests[before:] if r.get("model") == "agent-model"]


def _system(request: dict) -> str:
    return "\n".join(content_text(m.get("content")) for m in request["messages"] if m["role"] == "system")


def _tool_result(request: dict) -> str:
    message = request["messages"][-1]
    assert message["role"] == "tool"
    return str(message["content"])


async def test_private_agent_keeps_each_persons_files_and_memory_apart(e2e: E2E):
    alice, bob = await e2e.human("alice"), await e2e.human("bob")
    buddy, plain, room = e2e.name("buddy"), e2e.name("plain"), e2e.name("room")
    (e2e.config_dir / "companion").mkdir()
    (e2e.config_dir / "companion" / "SOUL.md").write_text(SOUL)
    private = {"per": "user", "template_dir": "companion", "context_files": ["SOUL.md"]}
    agents = {
        buddy: {"display_name": "Buddy", "rooms": [room], "tools": ["file"], "memory_backend": "file",
                "private": private},
        plain: {"display_name": "Plain", "rooms": [room], "tools": ["file"]},
    }  # fmt: skip
    await e2e.start(e2e.basic_config([alice.user_id, bob.user_id], agents))
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    await e2e.joined(bob, room_id)

    e2e.model_server.script(
        ToolCall("write_file", {"path": "MEMORY.md", "content": FACT}),
        Text("Noted."),
        ToolCall("read_file", {"path": "MEMORY.md"}),
        ToolCall("list_files", {"path": "."}),
        Text("I know nothing of you yet."),
        Text("Green tea."),
        Text("I do not know."),
        ToolCall("write_file", {"path": "shared.txt", "content": "from alice"}),
        Text("Written."),
        ToolCall("read_file", {"path": "shared.txt"}),
        Text("It says: from alice."),
        model="agent-model",
    )
    alice_wrote = await _ask(e2e, alice, room_id, buddy, "remember that I drink green tea")
    bob_looked = await _ask(e2e, bob, room_id, buddy, "what do you know about me?")
    alice_later = await _ask(e2e, alice, room_id, buddy, "what do I drink?")
    bob_later = await _ask(e2e, bob, room_id, buddy, "what does Alice drink?")
    await _ask(e2e, alice, room_id, plain, "write a note for everyone")
    bob_shared = await _ask(e2e, bob, room_id, plain, "read the note")

    config = AgentPrivateConfig(per="user")
    alice_home = requester_workspace(e2e.storage, buddy, config, alice.user_id)
    bob_home = requester_workspace(e2e.storage, buddy, config, bob.user_id)
    # Each person's copy: seeded from the template, its context file in the prompt, 0700.
    assert SOUL in _system(alice_wrote[0]) and SOUL in _system(bob_looked[0])
    assert (alice_home / "SOUL.md").read_text() == SOUL == (bob_home / "SOUL.md").read_text()
    assert alice_home.stat().st_mode & 0o777 == 0o700 and alice_home != bob_home
    # What Alice had it write stays in her copy: Bob can neither read nor list it, nor is it recalled for him.
    assert (alice_home / "MEMORY.md").read_text() == FACT
    assert not (bob_home / "MEMORY.md").exists()
    assert "no file named 'MEMORY.md' in your workspace" in _tool_result(bob_looked[1])
    assert "MEMORY.md" not in _tool_result(bob_looked[2]) and "SOUL.md" in _tool_result(bob_looked[2])
    assert FACT not in str(bob_looked) and FACT not in str(bob_later)
    assert FACT in _system(alice_later[0])  # her file memory, read from her copy
    # Nothing of the private agent lands in its shared workspace; the shared agent is one workspace for both.
    assert not (workspace_dir(e2e.storage, buddy) / "MEMORY.md").exists()
    assert _tool_result(bob_shared[1]) == "from alice"
    assert (workspace_dir(e2e.storage, plain) / "shared.txt").read_text() == "from alice"
