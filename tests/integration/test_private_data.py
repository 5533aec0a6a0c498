"""The data directory is its owner's alone: after real turns, nothing in it is open to other users."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from mindroom.private_files import shared_paths
from mindroom.testing.model_server import Text, ToolCall
from mindroom.tool_system.workspace_layout import workspace_dir
from tests.integration.conftest import E2E
from tests.integration.support import thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

REMEMBER = """
from mindroom.hooks import hook

@hook("message:received")
async def remember(ctx):
    (ctx.state_root / "seen.txt").write_text("a message arrived")
"""


@pytest.fixture
def usual_umask() -> Iterator[None]:
    """The umask most systems default to (files 0644, folders 0755), for this process and what it starts."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


async def test_private_data_in_process_daemon_leaves_nothing_open_after_a_turn(e2e: E2E, usual_umask: None):
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    e2e.model_server.set_default(Text("answer"), model="agent-model")
    await e2e.start(e2e.basic_config([human.user_id], {agent: {"display_name": "Helper", "rooms": [room]}}))
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)

    event_id = await human.send(room_id, "a private question")
    await human.wait_for(thread_replies(event_id, e2e.user_id(agent)))
    await e2e.stop()

    assert (e2e.storage / "sessions" / f"{agent}.db").is_file()
    assert shared_paths(e2e.storage) == []


async def test_private_data_mindroom_run_keeps_plugin_state_and_workspaces_private(e2e: E2E, usual_umask: None):
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    e2e.plugin("remember", REMEMBER)
    config = e2e.basic_config(
        [human.user_id],
        {agent: {"display_name": "Helper", "rooms": [room], "tools": ["file"]}},
        plugins=["plugins/remember"],
    )
    e2e.model_server.script(
        ToolCall("write_file", {"path": "notes/todo.md", "content": "buy milk"}), Text("Saved."), model="agent-model"
    )
    daemon = e2e.spawn(config)
    daemon.start()
    await daemon.wait_for_line("daemon ready")
    response = await human.client.room_resolve_alias(f"#{room}:{e2e.homeserver.server_name}")
    await e2e.joined(human, response.room_id)

    event_id = await human.send(response.room_id, "note: buy milk")
    agent_id = f"@{e2e.account_prefix}{agent}:{e2e.homeserver.server_name}"
    await human.wait_for(thread_replies(event_id, agent_id))
    assert await daemon.terminate() == 0

    assert (e2e.storage / "plugins" / "remember" / "seen.txt").is_file()
    assert (workspace_dir(e2e.storage, agent) / "notes" / "todo.md").read_text() == "buy milk"
    assert shared_paths(e2e.storage) == []
