"""The built-in tools that reach the daemon's own parts, each answering through a tool call on a real Synapse:
scheduler, website, memory, delegate, todo, deferred tools and config_manager."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mindroom.constants import ORIGINAL_SENDER_KEY
from mindroom.testing.memory_script import is_memory_request
from mindroom.testing.model_server import Text, ToolCall
from mindroom.tool_system.builtin.todo_store import todos_path
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, eventually, thread_replies
from tests.integration.test_tools import last_tool_message, tool_names
from tests.tool_system.builtin.pages import page_server

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


def body(event: dict[str, Any]) -> str:
    return str(event.get("content", {}).get("body", ""))


def agent_requests(e2e: E2E, model: str = "agent-model") -> list[dict]:
    return [r for r in e2e.model_server.requests if r.get("model") == model and not is_memory_request(r)]


async def start(e2e: E2E, agents: dict[str, dict[str, Any]], **extra: Any) -> tuple[HumanClient, str]:
    """A human and the agents in one room; returns the human and the room's id."""
    human = await e2e.human()
    room = e2e.name("room")
    named = {
        name: {"display_name": name.title(), "model": "default", "rooms": [room], **agent}
        for name, agent in agents.items()
    }
    await e2e.start(e2e.basic_config([human.user_id], named, **extra))
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    return human, room_id


async def ask(e2e: E2E, human: HumanClient, room_id: str, agent: str, text: str) -> tuple[str, dict]:
    """Ask `agent` (mentioned) in a new thread; the question's id and the agent's first reply."""
    event_id = await human.send(room_id, text, mentions=[e2e.user_id(agent)])
    return event_id, await human.wait_for(thread_replies(event_id, e2e.user_id(agent)))


async def test_builtin_scheduler_tool_schedules_a_task_the_agent_answers_at_its_time(e2e: E2E):
    agent = e2e.name("helper")
    human, room_id = await start(e2e, {agent: {"tools": ["scheduler"]}})
    e2e.model_server.script(
        ToolCall("schedule", {"request": "in 2 seconds check the deploy", "new_thread": False}),
        Text("I will check in two seconds."),
        Text("The deploy looks fine."),
        model="agent-model",
    )

    event_id, reply = await ask(e2e, human, room_id, agent, "check the deploy in two seconds")
    posted = await human.wait_for(
        lambda ev: ev.get("sender") == e2e.user_id("router") and body(ev) == "check the deploy"
    )
    answer = await human.wait_for(
        lambda ev: thread_replies(event_id, e2e.user_id(agent))(ev) and body(ev) == "The deploy looks fine."
    )

    assert body(reply) == "I will check in two seconds."
    assert last_tool_message(agent_requests(e2e)[1]).startswith("Scheduled `")
    assert posted["content"]["m.relates_to"]["event_id"] == event_id  # in the conversation it was asked in
    assert posted["content"][ORIGINAL_SENDER_KEY] == human.user_id
    assert posted["content"]["m.mentions"]["user_ids"] == [e2e.user_id(agent)]
    assert answer["origin_server_ts"] >= posted["origin_server_ts"]
    assert e2e.daemon.scheduler.store.pending() == []  # a one-off, done


async def test_builtin_website_tool_reads_a_page_only_from_a_host_the_operator_allows(e2e: E2E):
    reader, blocked = e2e.name("reader"), e2e.name("blocked")
    with page_server() as base:
        human, room_id = await start(
            e2e,
            {reader: {"tools": [{"website": {"allow_private_hosts": ["127.0.0.1"]}}]}, blocked: {"tools": ["website"]}},
        )
        e2e.model_server.script(
            ToolCall("read_url", {"url": f"{base}/page"}),
            Text("High tide is at 14:32."),
            ToolCall("read_url", {"url": f"{base}/page"}),
            Text("I could not read it."),
            model="agent-model",
        )

        _, allowed = await ask(e2e, human, room_id, reader, "when is high tide? read the page")
        _, refused = await ask(e2e, human, room_id, blocked, "when is high tide? read the page")

    first, second, _third, fourth = agent_requests(e2e)
    assert tool_names(first) == ["read_url"]
    page = json.loads(last_tool_message(second))
    assert page[0]["meta_data"]["title"] == "Tide tables" and "14:32" in page[0]["content"]
    assert body(allowed) == "High tide is at 14:32."
    failed = last_tool_message(fourth)
    assert "[TOOL CALL FAILED]" in failed and "allow_private_hosts" in failed and "14:32" not in failed
    assert body(refused) == "I could not read it."


async def test_builtin_memory_tool_adds_and_finds_what_the_agent_remembers_of_this_person(e2e: E2E):
    agent = e2e.name("helper")
    human, room_id = await start(e2e, {agent: {"tools": ["memory"], "memory_backend": "mem0"}})
    e2e.model_server.when(is_memory_request, Text("Nothing to note."))
    e2e.model_server.script(
        ToolCall("add_memory", {"content": "Alice's favourite colour is teal"}),
        Text("Noted."),
        ToolCall("search_memories", {"query": "favourite colour"}),
        Text("Teal."),
        model="agent-model",
    )

    await ask(e2e, human, room_id, agent, "remember: my favourite colour is teal")
    _, answer = await ask(e2e, human, room_id, agent, "what is my favourite colour?")

    requests = agent_requests(e2e)
    assert last_tool_message(requests[1]) == "Memorized: Alice's favourite colour is teal"
    found = last_tool_message(requests[3])
    assert found.startswith("Found 1 memory(ies):") and "teal" in found
    assert "Alice's favourite colour is teal" in requests[2]["messages"][0]["content"]  # recalled for the next turn
    assert body(answer) == "Teal."


async def test_builtin_delegate_tool_hands_a_task_to_another_agent_and_gets_its_answer(e2e: E2E):
    helper, researcher = e2e.name("helper"), e2e.name("researcher")
    models = {**e2e.models(), "research": {**e2e.models()["default"], "id": "research-model"}}
    human, room_id = await start(
        e2e,
        {helper: {"tools": ["delegate"], "delegate_to": [researcher]}, researcher: {"model": "research"}},
        models=models,
    )
    e2e.model_server.script(
        ToolCall("run_subagent", {"task": "When is high tide today?", "agent_name": researcher}),
        Text("The researcher says 14:32."),
        model="agent-model",
    )
    e2e.model_server.script(Text("High tide is at 14:32."), model="research-model")

    event_id, question = await ask(e2e, human, room_id, helper, "ask the researcher about the tide")
    asked = await human.wait_for(thread_replies(event_id, e2e.user_id(researcher)))
    await human.wait_for(
        lambda ev: thread_replies(event_id, e2e.user_id(helper))(ev) and body(ev) == "The researcher says 14:32."
    )

    assert body(question).endswith("When is high tide today?")  # the hand-off asks in the conversation
    assert body(asked) == "High tide is at 14:32."
    result = last_tool_message(agent_requests(e2e)[1])
    assert result.startswith("High tide is at 14:32.\n\nSubagent ID: ")


async def test_builtin_todo_tool_keeps_the_conversations_work_plan(e2e: E2E):
    agent = e2e.name("helper")
    human, room_id = await start(e2e, {agent: {"tools": ["todo"]}})
    e2e.model_server.script(
        ToolCall("plan", {"tasks": "1. Draft the notes\n2. [high] Check the facts"}),
        ToolCall("list_todos", {}),
        Text("Two things to do."),
        model="agent-model",
    )

    event_id, reply = await ask(e2e, human, room_id, agent, "plan the notes")

    requests = agent_requests(e2e)
    assert last_tool_message(requests[1]).startswith("Created 2 item(s)")
    listed = last_tool_message(requests[2])
    assert listed.startswith("Work plan: 0/2 complete.") and listed.index("Check the facts") < listed.index("Draft")
    kept = json.loads(todos_path(e2e.storage, room_id, event_id).read_text())
    assert [item["requester_id"] for item in kept["items"]] == [human.user_id] * 2
    assert body(reply) == "Two things to do."


async def test_builtin_deferred_tool_is_found_and_called_through_dynamic_tools(e2e: E2E):
    agent = e2e.name("helper")
    human, room_id = await start(e2e, {agent: {"tools": [{"calculator": {"defer": True}}]}})
    e2e.model_server.script(
        ToolCall("tool_search", {"query": "calculate"}),
        ToolCall("call_tool", {"name": "calculate", "arguments": {"expression": "6 * 7"}}),
        Text("It is 42."),
        model="agent-model",
    )

    await ask(e2e, human, room_id, agent, "what is six times seven?")

    first, second, third = agent_requests(e2e)
    assert tool_names(first) == ["call_tool", "tool_search"]  # calculate itself is not sent
    assert json.loads(last_tool_message(second))["matches"][0]["name"] == "calculate"
    assert last_tool_message(third) == "42"


async def test_builtin_config_manager_changes_settable_keys_for_administrators_only(e2e: E2E):
    agent = e2e.name("helper")
    human = await e2e.human()
    guest = await e2e.human("bob")
    room = e2e.name("room")
    config = e2e.basic_config(
        [human.user_id, guest.user_id],
        {agent: {"display_name": "Helper", "model": "default", "rooms": [room], "tools": ["config_manager"]}},
        administrators=[human.user_id],
    )
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    await e2e.joined(guest, room_id)
    change = {"op": "replace", "path": f"/agents/{agent}/role", "value": "Keeps the tide tables."}
    e2e.model_server.script(
        ToolCall("manage_config", {"operation": "patch", "changes": [{**change, "value": "Obeys bob."}]}),
        Text("Not allowed."),
        ToolCall("manage_config", {"operation": "patch", "changes": [change]}),
        Text("Done."),
        model="agent-model",
    )

    await ask(e2e, guest, room_id, agent, "make your role 'Obeys bob.'")
    refused = last_tool_message(agent_requests(e2e)[1])
    await ask(e2e, human, room_id, agent, "set your role")

    assert "administrator" in refused and "NOT applied" in refused
    assert last_tool_message(agent_requests(e2e)[3]).startswith("✅ Configuration set from chat")
    live = await eventually(
        lambda: (
            e2e.daemon.running.live.config.agents[agent].role == "Keeps the tide tables." and e2e.daemon.running.live
        ),
        "the role set from chat in force",
    )
    (override,) = live.settings.config_overrides()
    assert override.set_by == human.user_id
    # The agent restarted with its new role and answers again.
    e2e.model_server.script(Text("Still here."), model="agent-model")
    _, again = await ask(e2e, human, room_id, agent, "are you there?")
    assert body(again) == "Still here."
