"""Our tools through agno's real agent loop against the scripted model: schema, hooks, results, agent reuse."""

import pytest
import pytest_asyncio

from mindroom.ai import GenerationRequest, close_caches, generate, stream_generate
from mindroom.ai.generation import agent_for as _agent_for
from mindroom.ai.tools import agno_tools, described
from mindroom.config.main import ModelConfig
from mindroom.hooks import EVENT_TOOL_AFTER_CALL, EVENT_TOOL_BEFORE_CALL, HookRegistry, hook
from mindroom.testing.model_server import ScriptedModelServer, Stream, Text, ToolCall, model_server
from mindroom.tool_system.catalog import ToolCatalog
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import AgentToolEnvironment, ToolSpec
from tests.hooks.support import stub_plugin

__all__ = ["model_server"]

pytestmark = pytest.mark.asyncio


@pytest.fixture
def scripted_model(model_server):
    return ModelConfig(
        provider="openai", id="scripted-model", extra_kwargs={"base_url": model_server.base_url, "max_retries": 0}
    )


@pytest_asyncio.fixture
async def storage_root(tmp_path):
    yield tmp_path
    await close_caches()


def request(model, message, tools, **extra):
    fields = {
        "agent_name": "helper",
        "display_name": "Helper",
        "role": "",
        "instructions": (),
        "model": model,
        "user_message": message,
        "session_id": "s1",
        "num_history_runs": 0,
        "markdown": False,
        "tools": tools,
    }
    return GenerationRequest(**{**fields, **extra})


def file_tools(tmp_path):
    env = AgentToolEnvironment("helper", tmp_path / "workspaces" / "helper")
    return agno_tools(ToolCatalog.builtin().tools_for(["file"], env), "helper")


def tool_names(model_request):
    return [tool["function"]["name"] for tool in model_request.get("tools", [])]


async def test_agno_tools_offer_schema_and_run_through_the_hooks(
    model_server: ScriptedModelServer, scripted_model, storage_root, tmp_path
):
    seen = []

    @hook(EVENT_TOOL_BEFORE_CALL)
    async def gate(ctx):
        seen.append(("before", ctx.tool_name, ctx.arguments))

    @hook(EVENT_TOOL_AFTER_CALL)
    async def after(ctx):
        seen.append(("after", ctx.tool_name, ctx.result))

    model_server.script(ToolCall("write_file", {"path": "a.txt", "content": "hi"}), Text("Saved."))
    context = ToolRuntimeContext(HookRegistry.from_plugins([stub_plugin("audit", [gate, after])]), "helper")

    with bind_runtime_context(context):
        result = await generate(
            request(scripted_model, "save", file_tools(tmp_path)), storage_root=storage_root, env={}
        )

    assert result.text == "Saved."
    first, second = model_server.requests
    assert sorted(tool_names(first)) == ["list_files", "read_file", "write_file"]
    write_schema = next(tool["function"] for tool in first["tools"] if tool["function"]["name"] == "write_file")
    assert write_schema["parameters"]["required"] == ["path", "content"]
    assert "append" in write_schema["parameters"]["properties"]
    assert write_schema["description"].startswith("Write a text file in your workspace folder")
    assert second["messages"][-1] == {
        "role": "tool",
        "content": "wrote 2 bytes to a.txt",
        "tool_call_id": second["messages"][-1]["tool_call_id"],
    }
    assert (tmp_path / "workspaces" / "helper" / "a.txt").read_text() == "hi"
    assert seen == [
        ("before", "write_file", {"path": "a.txt", "content": "hi"}),
        ("after", "write_file", "wrote 2 bytes to a.txt"),
    ]
    assert [record.tool_name for record in context.calls] == ["write_file"]


async def test_agno_tools_coerce_and_validate_arguments(
    model_server: ScriptedModelServer, scripted_model, storage_root
):
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    tools = agno_tools((ToolSpec("add", add),), "helper")
    model_server.script(ToolCall("add", {"a": "2", "b": 40}), ToolCall("add", {"a": "two"}), Text("42"))

    await generate(request(scripted_model, "2 + 40", tools), storage_root=storage_root, env={})

    second, third = model_server.requests[1:]
    assert second["messages"][-1]["content"] == "42"
    assert third["messages"][-1]["content"].startswith("[TOOL CALL FAILED]\nTool: add\nError: ValidationError")


async def test_agno_tools_streaming_records_the_turns_tool_calls(
    model_server: ScriptedModelServer, scripted_model, storage_root, tmp_path
):
    model_server.script(ToolCall("list_files", {}), Stream(["Nothing ", "there."]))
    context = ToolRuntimeContext(HookRegistry.empty(), "helper")

    with bind_runtime_context(context):
        deltas = [
            delta
            async for delta in stream_generate(
                request(scripted_model, "ls", file_tools(tmp_path)), storage_root=storage_root, env={}
            )
        ]

    assert "".join(deltas) == "Nothing there."
    assert [(record.tool_name, record.result) for record in context.calls] == [("list_files", ". is empty")]


async def test_agno_tools_keep_the_cached_agent(scripted_model, storage_root, tmp_path):
    tools = file_tools(tmp_path)

    first, _ = _agent_for(request(scripted_model, "a", tools), storage_root, {})
    again, _ = _agent_for(request(scripted_model, "b", tools), storage_root, {})
    rebuilt, _ = _agent_for(request(scripted_model, "c", file_tools(tmp_path)), storage_root, {})

    assert again is first
    assert rebuilt is not first


async def test_described_derives_schema_from_signature_and_docstring():
    def greet(name: str, loud: bool = False) -> str:
        """Greet someone.

        Args:
            name: Who to greet.
            loud: Shout it.
        """
        return name

    spec = described(ToolSpec("greet", greet))

    assert spec.description == "Greet someone."
    assert spec.parameters["required"] == ["name"]
    assert spec.parameters["properties"]["name"]["description"] == "Who to greet."
    assert spec.function(name="x") == "x"


async def test_agno_toolkit_function_gets_the_agno_agent_running_the_call(
    model_server: ScriptedModelServer, scripted_model, storage_root
):
    """A plugin toolkit's function taking agno's `agent` (and `team`) gets the agent that runs the call; the model
    and the hooks see only its own arguments."""
    from agno.agent import Agent
    from agno.team.team import Team
    from agno.tools import Toolkit

    from mindroom.ai.tools import foreign_tool_specs

    class Planner(Toolkit):
        def __init__(self) -> None:
            super().__init__(name="planner", tools=[self.plan, self.note])

        def plan(self, agent: Agent | Team, tasks: str) -> str:
            """Plan the tasks.

            Args:
                agent: The calling agent.
                tasks: What to do.
            """
            received.append(agent)
            return f"{agent.name} plans {tasks}"

        async def note(self, text: str, team: Team | None = None) -> str:
            """Note something."""
            return f"{text} (team: {team})"

    seen, received = [], []

    @hook(EVENT_TOOL_BEFORE_CALL)
    async def gate(ctx):
        seen.append(ctx.arguments)

    specs = foreign_tool_specs(Planner())
    tools = agno_tools(specs, "helper")
    model_server.script(ToolCall("plan", {"tasks": "a, b"}), ToolCall("note", {"text": "done"}), Text("Planned."))
    context = ToolRuntimeContext(HookRegistry.from_plugins([stub_plugin("audit", [gate])]), "helper")

    with bind_runtime_context(context):
        result = await generate(request(scripted_model, "plan it", tools), storage_root=storage_root, env={})
    agent, _ = _agent_for(request(scripted_model, "plan it", tools), storage_root, {})

    assert result.text == "Planned."
    first, second, third = model_server.requests
    schemas = {tool["function"]["name"]: tool["function"]["parameters"] for tool in first["tools"]}
    assert (list(schemas["plan"]["properties"]), list(schemas["note"]["properties"])) == (["tasks"], ["text"])
    assert second["messages"][-1]["content"] == "Helper plans a, b"
    assert received == [agent] and isinstance(agent, Agent)  # the cached agent that ran the turn
    assert third["messages"][-1]["content"] == "done (team: None)"  # run by an agent, not a team
    assert seen == [{"tasks": "a, b"}, {"text": "done"}]
