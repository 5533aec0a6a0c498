"""The 2026 API's events where the daemon fires them, on the real homeserver with a scripted model.

system:enrich, message:cancelled, message:final_response_transform, session:started, tool:environment and
compaction:before/after, each seen by one plugin that logs what its hooks receive.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mindroom.ai import load_history
from mindroom.testing.model_replies import content_text
from mindroom.testing.model_server import HttpError, Stream, Text, ToolCall
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, edits_of, eventually, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

NEWER_EVENTS = """
import json
from pathlib import Path

from mindroom.hooks import hook


def _log(ctx, **fields):
    with Path(ctx.settings["log"]).open("a") as fh:
        fh.write(json.dumps({"event": ctx.event_name, **fields}, default=str) + "\\n")


@hook("system:enrich")
async def house_rules(ctx):
    ctx.add_instruction("house_rules", "Always mention kiwis.", cache_policy="stable")


@hook("message:before_response")
async def hush(ctx):
    if "hush" in ctx.envelope.body:
        ctx.draft.suppress = True


@hook("message:cancelled")
async def cancelled(ctx):
    info = ctx.info
    _log(ctx, reason=info.failure_reason, body=info.envelope.body, visible=info.visible_response_event_id)


@hook("message:final_response_transform")
async def polish(ctx):
    ctx.draft.response_text = ctx.draft.response_text.replace("world", "WORLD") + " (polished)"


@hook("session:started")
async def started(ctx):
    _log(ctx, session=ctx.session_id, agent=ctx.agent_name, thread=ctx.thread_id, scope=ctx.scope.key)


@hook("tool:environment")
async def environment(ctx):
    _log(ctx, function=ctx.function_name, toolkit=ctx.registered_toolkit, arguments=ctx.arguments)
    if ctx.registered_toolkit == "shell":
        ctx.set_env("MINDROOM_HOOK_TOKEN", "from-the-hook")


@hook("compaction:before")
async def before_compaction(ctx):
    _log(ctx, messages=[[m.role, m.content] for m in ctx.messages], before=ctx.token_count_before,
         after=ctx.token_count_after, session=ctx.session_id, agent=ctx.agent_name)


@hook("compaction:after")
async def after_compaction(ctx):
    _log(ctx, messages=[[m.role, m.content] for m in ctx.messages], before=ctx.token_count_before,
         after=ctx.token_count_after, summary=ctx.compaction_summary)
"""

SUMMARISER = "compress conversations"


def read_log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def logged(path: Path, event: str) -> list[dict[str, Any]]:
    return [entry for entry in read_log(path) if entry["event"] == event]


def agent_requests(e2e: E2E) -> list[dict[str, Any]]:
    """What the agent's model was asked, the summariser's requests left out."""
    return [
        request
        for request in e2e.model_server.requests
        if request.get("model") == "agent-model" and SUMMARISER not in content_text(request["messages"][0]["content"])
    ]


async def world(e2e: E2E, tmp_path: Path, *, streaming: bool = False, **defaults: Any):
    log = tmp_path / "events.jsonl"
    e2e.plugin("newer", NEWER_EVENTS)
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config(
        [human.user_id],
        {agent: {"display_name": "Helper", "model": "default", "rooms": [room], "tools": ["shell"]}},
        plugins=[{"path": "plugins/newer", "settings": {"log": str(log)}}],
        tools={"shell": {"allowed_commands": ["printenv"]}},
    )
    config["defaults"].update(enable_streaming=streaming, **defaults)
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    return human, agent, room_id, log


async def ask(e2e: E2E, human: HumanClient, agent: str, room_id: str, body: str, thread: str | None = None) -> str:
    """Send `body` (in `thread`, if given) and wait for the agent's answer there; returns the question's id."""
    event_id = await human.send(room_id, body, thread_root=thread)
    root = thread or event_id
    answered = len(human.matching(thread_replies(root, e2e.user_id(agent))))
    await human.wait_for(lambda _: len(human.matching(thread_replies(root, e2e.user_id(agent)))) > answered)
    return event_id


async def test_system_enrich_reaches_the_system_message_and_never_history(e2e: E2E, tmp_path):
    human, agent, room_id, _ = await world(e2e, tmp_path)
    e2e.model_server.script(Text("First answer."), Text("Second answer."), model="agent-model")

    root = await ask(e2e, human, agent, room_id, "tell me about fruit")
    await ask(e2e, human, agent, room_id, "and more?", thread=root)

    first, second = agent_requests(e2e)
    for request in (first, second):
        system = content_text(request["messages"][0]["content"])
        assert request["messages"][0]["role"] == "system"
        assert "<mindroom_system_context>" in system and "Always mention kiwis." in system
        assert not any("kiwis" in content_text(m.get("content")) for m in request["messages"][1:])
    assert [m["role"] for m in second["messages"][1:]] == ["user", "assistant", "user"]
    history = await load_history(agent, f"{room_id}:{root}", storage_root=e2e.storage)
    assert [text for _, text in history] == ["tell me about fruit", "First answer.", "and more?", "Second answer."]


async def test_message_cancelled_for_a_suppressed_answer(e2e: E2E, tmp_path):
    human, agent, room_id, log = await world(e2e, tmp_path)
    e2e.model_server.script(Text("nobody will see this"), model="agent-model")

    event_id = await human.send(room_id, "hush please")
    await e2e.model_server.wait_for_requests_async(1)

    await eventually(lambda: logged(log, "message:cancelled"), "message:cancelled")
    (entry,) = logged(log, "message:cancelled")
    assert (entry["reason"], entry["body"], entry["visible"]) == ("suppressed_by_hook", "hush please", None)
    await e2e.settle(human, room_id)
    assert human.matching(thread_replies(event_id, e2e.user_id(agent))) == []


async def test_message_cancelled_for_a_model_error(e2e: E2E, tmp_path):
    human, agent, room_id, log = await world(e2e, tmp_path)
    e2e.model_server.script(HttpError(500, "the model fell over"), model="agent-model")

    event_id = await human.send(room_id, "are you there?")
    warning = await human.wait_for(thread_replies(event_id, e2e.user_id(agent)))

    assert warning["content"]["body"].startswith("⚠️")
    await eventually(lambda: logged(log, "message:cancelled"), "message:cancelled")
    (entry,) = logged(log, "message:cancelled")
    assert entry["body"] == "are you there?"
    assert entry["reason"] and entry["reason"] != "suppressed_by_hook"
    assert logged(log, "message:after_response") == []


async def test_final_response_transform_changes_a_streamed_answers_final_edit(e2e: E2E, tmp_path):
    human, agent, room_id, _ = await world(e2e, tmp_path, streaming=True, streaming_edit_interval_ms=50)
    e2e.model_server.script(Stream(["Hello ", "streamed ", "world"], delay_s=0.1), model="agent-model")

    event_id = await human.send(room_id, "stream something")
    first = await human.wait_for(thread_replies(event_id, e2e.user_id(agent)))
    final = await human.wait_for(
        lambda ev: (
            edits_of(first["event_id"])(ev)
            and ev["content"]["m.new_content"]["body"] == "Hello streamed WORLD (polished)"
        ),
    )

    assert final["sender"] == e2e.user_id(agent)
    history = await load_history(agent, f"{room_id}:{event_id}", storage_root=e2e.storage)
    assert history[-1] == ("assistant", "Hello streamed world")  # the model's words; the edit is the room's view


async def test_session_started_fires_once_for_each_new_thread(e2e: E2E, tmp_path):
    human, agent, room_id, log = await world(e2e, tmp_path)
    e2e.model_server.set_default(Text("ok"), model="agent-model")

    root = await ask(e2e, human, agent, room_id, "first thread")
    await ask(e2e, human, agent, room_id, "still the first thread", thread=root)
    other = await ask(e2e, human, agent, room_id, "a second thread")
    await e2e.settle(human, room_id)

    started = logged(log, "session:started")
    expected = [(f"{room_id}:{root}", root), (f"{room_id}:{other}", other)]
    assert [(e["session"], e["thread"]) for e in started] == expected
    assert {(e["agent"], e["scope"]) for e in started} == {(agent, f"agent:{agent}")}


async def test_tool_environment_sets_a_variable_the_shell_command_sees(e2e: E2E, tmp_path):
    human, agent, room_id, log = await world(e2e, tmp_path)
    e2e.model_server.script(
        ToolCall("run_shell_command", {"args": "printenv MINDROOM_HOOK_TOKEN"}),
        Text("The token is set."),
        model="agent-model",
    )

    event_id = await human.send(room_id, "show me the token")
    reply = await human.wait_for(thread_replies(event_id, e2e.user_id(agent)))

    assert reply["content"]["body"] == "The token is set."
    tool_message = agent_requests(e2e)[-1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert content_text(tool_message["content"]) == "exit code: 0\nfrom-the-hook\n"
    (entry,) = logged(log, "tool:environment")
    assert (entry["function"], entry["toolkit"]) == ("run_shell_command", "shell")
    assert entry["arguments"] == {"args": "printenv MINDROOM_HOOK_TOKEN"}


async def test_compaction_folds_older_turns_before_an_answer_with_both_events(e2e: E2E, tmp_path):
    # Each turn is ~55 tokens; with a budget of 80 the third turn's history (two turns) is over it.
    human, agent, room_id, log = await world(e2e, tmp_path, history_token_budget=80)
    e2e.model_server.when(
        lambda request: SUMMARISER in content_text(request["messages"][0]["content"]),
        Text("SUMMARY: they asked about apples."),
    )
    e2e.model_server.script(
        Text("Apples are red. " + "a" * 180),
        Text("Pears are green. " + "p" * 180),
        Text("Plums are purple."),
        model="agent-model",
    )

    root = await ask(e2e, human, agent, room_id, "apples?")
    await ask(e2e, human, agent, room_id, "pears?", thread=root)
    assert logged(log, "compaction:before") == []
    await ask(e2e, human, agent, room_id, "plums?", thread=root)

    (before,) = logged(log, "compaction:before")
    (after,) = logged(log, "compaction:after")
    assert before["messages"] == [["user", "apples?"], ["assistant", "Apples are red. " + "a" * 180]]
    assert (before["session"], before["agent"], before["after"]) == (f"{room_id}:{root}", agent, None)
    assert after["messages"] == before["messages"]
    assert after["before"] == before["before"] > 80 >= after["after"]
    assert after["summary"] == "SUMMARY: they asked about apples."
    third = agent_requests(e2e)[-1]
    texts = [content_text(m.get("content")) for m in third["messages"][1:]]
    assert "SUMMARY: they asked about apples." in texts
    assert "apples?" not in texts and texts[-1] == "plums?"
    history = await load_history(agent, f"{room_id}:{root}", storage_root=e2e.storage)
    assert history[1] == ("assistant", "SUMMARY: they asked about apples.")
