"""Tools end to end on a real Synapse: built-in and plugin tools, the tool hooks, and per-agent filtering."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from mindroom.testing.model_server import Text, ToolCall
from mindroom.tool_system.workspace_layout import workspace_dir
from tests.integration.conftest import E2E
from tests.integration.support import edits_of, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

FACTS_TOOLS = '''
from pathlib import Path

from mindroom.tool_system.runtime_context import emit_custom_event

SIDE_EFFECTS = Path(__file__).with_name("side_effects.log")


def record_fact(fact: str) -> dict:
    """Record a fact in the fact book."""
    with SIDE_EFFECTS.open("a") as fh:
        fh.write(fact + "\\n")
    return {"recorded": fact, "tags": ["fact"]}


async def announce_fact(fact: str) -> str:
    """Tell the fact listeners about a fact."""
    await emit_custom_event("facts", "facts:announced", {"fact": fact})
    return "announced"


def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"exploded: {reason}")
'''

FACTS_HOOKS = """
import json
from pathlib import Path

from mindroom.hooks import hook

LOG = Path(__file__).with_name("hooks.log")


def _log(**fields):
    with LOG.open("a") as fh:
        fh.write(json.dumps(fields, default=str) + "\\n")


@hook("tool:before_call")
async def no_forbidden_facts(ctx):
    _log(event="before", tool=ctx.tool_name, arguments=ctx.arguments, agent=ctx.agent_name, room=ctx.room_id,
         thread=ctx.thread_id, requester=ctx.requester_id)
    if "forbidden" in str(ctx.arguments.get("fact", "")):
        ctx.decline("Forbidden facts stay unrecorded.")


@hook("tool:after_call")
async def audit(ctx):
    _log(event="after", tool=ctx.tool_name, result=ctx.result, error=repr(ctx.error) if ctx.error else None,
         blocked=ctx.blocked, duration_ms=ctx.duration_ms)
    if isinstance(ctx.result, dict):
        ctx.result["recorded"] = "TAMPERED"
        ctx.result["tags"].append("tampered")
    ctx.arguments["fact"] = "TAMPERED"


@hook("facts:announced")
async def heard(ctx):
    _log(event="custom", payload=ctx.payload, source=ctx.source_plugin, agent=ctx.agent_name)


@hook("message:before_response")
async def trace(ctx):
    entries = [[e.tool_name, e.blocked, e.error, e.result_preview] for e in ctx.draft.tool_trace or []]
    _log(event="trace", entries=entries)
"""

SKILLS = {
    "skills/haiku/SKILL.md": "---\nname: haiku\ndescription: Answer in haiku.\n---\nWrite three lines: 5, 7, 5.\n",
    "skills/limerick/SKILL.md": "# Answer in a limerick\n\nFive lines, AABBA rhyme.\n",
}


def copy_in_facts_plugin(e2e: E2E) -> Path:
    """Drop the plugin folder into `plugins/` beside the config, as an operator would (no config entry)."""
    folder = e2e.config_dir / "plugins" / "facts"
    folder.mkdir(parents=True)
    manifest = {"name": "facts", "tools_module": "tools.py", "hooks_module": "hooks.py", "skills": ["skills"]}
    (folder / "mindroom.plugin.json").write_text(json.dumps(manifest))
    (folder / "tools.py").write_text(textwrap.dedent(FACTS_TOOLS))
    (folder / "hooks.py").write_text(textwrap.dedent(FACTS_HOOKS))
    for relative, text in SKILLS.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    return folder


def read_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def tool_names(request: dict) -> list[str]:
    return sorted(tool["function"]["name"] for tool in request.get("tools") or [])


def last_tool_message(request: dict) -> str:
    message = request["messages"][-1]
    assert message["role"] == "tool"
    return message["content"]


async def one_agent(e2e: E2E, agent_config: dict, *, streaming: bool = False):
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config(
        [human.user_id], {agent: {"display_name": "Helper", "model": "default", "rooms": [room], **agent_config}}
    )
    config["defaults"]["enable_streaming"] = streaming
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    return human, agent, room_id


async def test_tools_plugin_tool_and_gate_hook_work_end_to_end(e2e: E2E):
    folder = copy_in_facts_plugin(e2e)
    human, agent, room_id = await one_agent(e2e, {"tools": ["facts"]}, streaming=True)
    e2e.model_server.script(
        ToolCall("record_fact", {"fact": "water is wet"}),
        ToolCall("record_fact", {"fact": "forbidden lore"}),
        ToolCall("explode", {"reason": "on purpose"}),
        ToolCall("announce_fact", {"fact": "the sky is blue"}),
        Text("All done."),
        model="agent-model",
    )

    event_id = await human.send(room_id, "please record some facts")
    reply = await human.wait_for(thread_replies(event_id, e2e.user_id(agent)))
    final = await human.wait_for(
        lambda ev: edits_of(reply["event_id"])(ev) and ev["content"]["m.new_content"]["body"] == "All done."
    )

    assert final["content"]["m.new_content"]["body"] == "All done."
    requests = [r for r in e2e.model_server.requests if r.get("model") == "agent-model"]
    assert len(requests) == 5
    assert tool_names(requests[0]) == ["announce_fact", "explode", "record_fact"]
    # The tool ran once, for the allowed fact; its result reached the model untouched by the observer.
    assert (folder / "side_effects.log").read_text() == "water is wet\n"
    assert json.loads(last_tool_message(requests[1])) == {"recorded": "water is wet", "tags": ["fact"]}
    declined = last_tool_message(requests[2])
    assert "[TOOL CALL DECLINED]" in declined and "Forbidden facts stay unrecorded." in declined
    failed = last_tool_message(requests[3])
    assert "[TOOL CALL FAILED]" in failed and "exploded: on purpose" in failed
    assert last_tool_message(requests[4]) == "announced"

    log = read_log(folder / "hooks.log")
    before = [entry for entry in log if entry["event"] == "before"]
    assert [(b["tool"], b["arguments"]) for b in before] == [
        ("record_fact", {"fact": "water is wet"}),
        ("record_fact", {"fact": "forbidden lore"}),
        ("explode", {"reason": "on purpose"}),
        ("announce_fact", {"fact": "the sky is blue"}),
    ]
    assert {(b["agent"], b["room"], b["thread"], b["requester"]) for b in before} == {
        (agent, room_id, event_id, human.user_id)
    }
    after = [entry for entry in log if entry["event"] == "after"]
    assert [(a["tool"], a["blocked"]) for a in after] == [
        ("record_fact", False),
        ("record_fact", True),
        ("explode", False),
        ("announce_fact", False),
    ]
    assert after[0]["result"] == {"recorded": "water is wet", "tags": ["fact"]} and after[0]["error"] is None
    assert "Forbidden facts stay unrecorded." in after[1]["result"]
    assert after[2]["result"] is None and "exploded: on purpose" in after[2]["error"]
    assert all(a["duration_ms"] >= 0 for a in after)
    assert [entry for entry in log if entry["event"] == "custom"] == [
        {"event": "custom", "payload": {"fact": "the sky is blue"}, "source": "facts", "agent": agent}
    ]
    (trace,) = [entry["entries"] for entry in log if entry["event"] == "trace"]
    assert [(name, blocked, error is not None) for name, blocked, error, _ in trace] == [
        ("record_fact", False, False),
        ("record_fact", True, False),
        ("explode", False, True),
        ("announce_fact", False, False),
    ]


async def test_tools_agent_gets_only_the_tools_and_skills_it_lists(e2e: E2E):
    folder = copy_in_facts_plugin(e2e)
    human, agent, room_id = await one_agent(e2e, {"tools": ["calculator"], "skills": ["haiku"]})
    e2e.model_server.script(
        ToolCall("calculate", {"expression": "6 * 7"}),
        ToolCall("record_fact", {"fact": "sneaky"}),
        Text("It is 42."),
        model="agent-model",
    )

    event_id = await human.send(room_id, "what is six times seven?")
    reply = await human.wait_for(thread_replies(event_id, e2e.user_id(agent)))

    assert reply["content"]["body"] == "It is 42."
    requests = [r for r in e2e.model_server.requests if r.get("model") == "agent-model"]
    assert tool_names(requests[0]) == ["calculate"]
    assert last_tool_message(requests[1]) == "42"
    system = requests[0]["messages"][0]
    assert system["role"] == "system"
    assert "Answer in haiku." in system["content"] and "Write three lines: 5, 7, 5." in system["content"]
    assert "limerick" not in json.dumps(requests).lower()
    assert "does not exist or is not available" in last_tool_message(requests[2])
    # The plugin tool it was not given never ran, and no gate was even asked about it.
    assert not (folder / "side_effects.log").exists()
    assert [entry["tool"] for entry in read_log(folder / "hooks.log") if entry["event"] == "before"] == ["calculate"]


async def test_tools_file_tool_writes_only_in_the_agents_workspace(e2e: E2E):
    human, agent, room_id = await one_agent(e2e, {"tools": ["file"]})
    e2e.model_server.script(
        ToolCall("write_file", {"path": "notes/todo.md", "content": "buy milk"}),
        ToolCall("write_file", {"path": "../../escape.txt", "content": "x"}),
        ToolCall("read_file", {"path": "notes/todo.md"}),
        Text("Saved."),
        model="agent-model",
    )

    event_id = await human.send(room_id, "note: buy milk")
    await human.wait_for(thread_replies(event_id, e2e.user_id(agent)))

    requests = [r for r in e2e.model_server.requests if r.get("model") == "agent-model"]
    assert tool_names(requests[0]) == ["list_files", "read_file", "write_file"]
    assert last_tool_message(requests[1]) == "wrote 8 bytes to notes/todo.md"
    assert "outside your workspace" in last_tool_message(requests[2])
    assert last_tool_message(requests[3]) == "buy milk"
    assert (workspace_dir(e2e.storage, agent) / "notes" / "todo.md").read_text() == "buy milk"
    assert not (e2e.storage / "escape.txt").exists()
