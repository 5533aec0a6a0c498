"""agno toolkits by catalogue name: the table, availability, settings, credentials, and calls off the loop."""

from __future__ import annotations

import ast
import asyncio
import re
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from mindroom.ai.tools import foreign_tool_specs
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.tool_system.calls import call_tool
from mindroom.tool_system.catalog import ToolCatalogError, build_tool_catalog
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import AgentToolEnvironment, ToolSpec
from mindroom.tool_system.toolkit_table import AGNO_TOOLKITS, EXTRAS, AgnoToolkit, Credential, Package
from mindroom.tool_system.toolkits import check_toolkit_settings, toolkit_parameters, toolkit_status

ROOT = Path(__file__).resolve().parents[2]


def agent_config(tools: list, **extra) -> Config:
    return Config.model_validate({"agents": {"a": {"display_name": "A", "tools": tools}}, **extra})


def catalog_for(config: Config, tmp_path: Path, env: dict | None = None):
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path / "data", env or {})
    return build_tool_catalog(config, [], adapt=foreign_tool_specs, runtime_paths=paths)


def test_toolkit_table_names_classes_that_exist_in_agno():
    import agno

    tools_dir = Path(agno.__file__).parent / "tools"
    missing = []
    for toolkit in AGNO_TOOLKITS.values():
        relative = Path(*toolkit.module.split("."))
        source = next(p for p in (tools_dir / f"{relative}.py", tools_dir / relative / "__init__.py") if p.exists())
        tree = ast.parse(source.read_text())
        defined = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
        imported = {alias.name for node in tree.body if isinstance(node, ast.ImportFrom) for alias in node.names}
        if toolkit.class_name not in defined | imported:
            missing.append(toolkit.target)
        if toolkit_parameters(toolkit) is None:
            missing.append(f"{toolkit.target} (constructor not found)")
    assert missing == []
    assert len(AGNO_TOOLKITS) >= 80


def _bare(requirement: str) -> str:
    return re.split(r"[\[<>=;~ ]", requirement, maxsplit=1)[0].lower()


def test_toolkit_table_extras_are_the_ones_pyproject_installs():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]

    for extra, packages in EXTRAS.items():
        assert {_bare(p) for p in extras[extra]} == {_bare(p) for p in packages}, extra


def test_toolkit_status_names_the_missing_package_or_credential(tmp_path: Path):
    absent = AgnoToolkit("x", "x", "X", "research", "tools-web", (Package("no_such_module_here", "no-such"),))
    keyed = AgnoToolkit("y", "y", "Y", "research", None, (), (Credential("api_key", "Y_API_KEY"),))
    pathed = AgnoToolkit("z", "z", "Z", "email", None, (), (Credential("service_account_path", "Z_ACCOUNT_FILE"),))
    secret = tmp_path / "key"
    secret.write_text("s3cret-value\n")

    assert (toolkit_status(absent, {}).state, toolkit_status(absent, {}).reason) == (
        "missing_package", "missing package no-such"
    )  # fmt: skip
    # The project's own extra from this checkout: `mindroom[...]` on the package index is MindRoom itself.
    assert toolkit_status(absent, {}).fix == f"mindroom tools install x (or: pip install -e '{ROOT}[tools-web]')"
    missing = toolkit_status(keyed, {})
    assert (missing.state, missing.missing) == ("missing_credential", ("Y_API_KEY",))
    assert "Y_API_KEY_FILE" in missing.fix
    assert toolkit_status(keyed, {"Y_API_KEY_FILE": str(secret)}).available
    assert toolkit_status(keyed, {"Y_API_KEY": "k"}).available
    assert toolkit_status(pathed, {}).fix == "set Z_ACCOUNT_FILE in the daemon's environment"  # not Z_ACCOUNT_FILE_FILE


def test_toolkit_settings_are_the_constructor_arguments_without_credentials():
    reasoning, tavily, generation = (
        AGNO_TOOLKITS["reasoning"],
        AGNO_TOOLKITS["tavily"],
        AGNO_TOOLKITS["file_generation"],
    )

    assert check_toolkit_settings(reasoning, {"enable_think": True, "include_tools": ["think"]}) == []
    assert "not a setting" in check_toolkit_settings(reasoning, {"enable_thinking": True})[0]
    assert "must be true or false" in check_toolkit_settings(reasoning, {"enable_think": "yes"})[0]
    assert "TAVILY_API_KEY" in check_toolkit_settings(tavily, {"api_key": "inline"})[0]
    assert "set by the daemon" in check_toolkit_settings(generation, {"output_directory": "/"})[0]
    assert "list of strings" in check_toolkit_settings(reasoning, {"exclude_tools": "think"})[0]


def test_catalog_leaves_out_a_toolkit_missing_its_package_or_credential_and_says_why(tmp_path: Path):
    config = Config.model_validate(
        {
            "agents": {
                "a": {"display_name": "A", "tools": ["tavily", "reasoning", "openweather"]},
                "b": {"display_name": "B", "tools": ["tavily"]},
            }
        }
    )

    with capture_logs() as logs:
        catalog = catalog_for(config, tmp_path)

    names = [s.name for s in catalog.tools_for(config.agents["a"].tools, AgentToolEnvironment("a", tmp_path / "w"))]
    assert names == ["think", "analyze"]  # the agent runs with the tools that can run
    assert catalog.tools_for(["tavily"], AgentToolEnvironment("b", tmp_path / "w")) == ()
    by_agent_tool = {(u.agent, u.tool): u for u in catalog.unavailable}
    assert sorted(by_agent_tool) == [("a", "openweather"), ("a", "tavily"), ("b", "tavily")]
    tavily = by_agent_tool["a", "tavily"]
    assert tavily.reason == "missing package tavily-python"
    assert tavily.fix == f"mindroom tools install tavily (or: pip install -e '{ROOT}[tools-search]')"
    assert by_agent_tool["a", "openweather"].reason == "missing credential OPENWEATHER_API_KEY"
    warned = {
        (e["agent"], e["tool"], e["fix"])
        for e in logs
        if e["event"] == "agent runs without a tool that cannot run here"
    }
    assert warned == {(u.agent, u.tool, u.fix) for u in catalog.unavailable}

    present = catalog_for(config, tmp_path, {"OPENWEATHER_API_KEY": "k"})
    assert ("a", "openweather") not in {(u.agent, u.tool) for u in present.unavailable}


def test_catalog_refuses_a_setting_a_toolkit_does_not_take_even_when_it_cannot_run(tmp_path: Path):
    config = agent_config([{"tavily": {"search_depthh": "basic"}}, {"reasoning": {"enable_thinking": True}}])

    with pytest.raises(ToolCatalogError) as caught:
        catalog_for(config, tmp_path)

    problems = caught.value.problems
    assert any(p.startswith("agents.a.tools: 'tavily': setting 'search_depthh' is not a setting") for p in problems)
    assert any("'reasoning'" in p and "enable_thinking" in p for p in problems)


def test_catalog_imports_a_toolkit_only_when_an_agent_using_it_is_built(tmp_path: Path):
    code = (
        "import sys, pathlib, tempfile\n"
        "from mindroom.ai.tools import foreign_tool_specs\n"
        "from mindroom.config.main import Config\n"
        "from mindroom.constants import RuntimePaths\n"
        "from mindroom.tool_system.catalog import build_tool_catalog\n"
        "from mindroom.tool_system.spec import AgentToolEnvironment\n"
        "d = pathlib.Path(tempfile.mkdtemp())\n"
        "c = Config.model_validate({'agents': {'a': {'display_name': 'A', 'tools': ['reasoning']},"
        " 'b': {'display_name': 'B', 'tools': []}}})\n"
        "cat = build_tool_catalog(c, [], adapt=foreign_tool_specs, runtime_paths=RuntimePaths(d / 'c.yaml', d, {}))\n"
        "before = 'agno.tools.reasoning' in sys.modules\n"
        "cat.tools_for(c.agents['b'].tools, AgentToolEnvironment('b', d / 'w'))\n"
        "other = 'agno.tools.reasoning' in sys.modules\n"
        "specs = cat.tools_for(c.agents['a'].tools, AgentToolEnvironment('a', d / 'w'))\n"
        "print(before, other, 'agno.tools.reasoning' in sys.modules, [s.name for s in specs])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split("\n")[-2] == "False False True ['think', 'analyze']"


@pytest.mark.asyncio
async def test_toolkit_calls_run_off_the_loop_with_settings_and_a_timeout(tmp_path: Path):
    config = agent_config([{"sleep": {}}, {"reasoning": {"include_tools": ["think"]}}])
    specs = {
        s.name: s
        for s in catalog_for(config, tmp_path).tools_for(
            ["sleep", "reasoning"], AgentToolEnvironment("a", tmp_path / "w")
        )
    }
    assert sorted(specs) == ["sleep", "think"]
    assert specs["sleep"].in_thread and specs["sleep"].timeout_s == 120.0

    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    started = time.perf_counter()
    text = await call_tool(specs["sleep"], "a", {"seconds": 1})
    ticker.cancel()
    assert "Slept for 1 seconds" in text and time.perf_counter() - started >= 1
    assert ticks >= 3  # the loop ran while the toolkit slept (on the loop, it could not have ticked once)

    release, finished = threading.Event(), threading.Event()

    def stuck() -> None:
        release.wait(120)
        finished.set()

    slow = ToolSpec(name="slow", function=stuck, in_thread=True, timeout_s=0.2)
    try:
        text = await call_tool(slow, "a", {})
        assert "did not finish within 0.2 s" in text
        assert not finished.is_set()  # the answer came while the function was still stuck in its thread
    finally:
        release.set()


@pytest.mark.asyncio
async def test_toolkit_functions_taking_run_context_keep_state_within_a_turn(tmp_path: Path):
    from mindroom.hooks.registry import HookRegistry

    specs = {
        s.name: s
        for s in catalog_for(agent_config(["reasoning"]), tmp_path).tools_for(
            ["reasoning"], AgentToolEnvironment("a", tmp_path)
        )
    }
    context = ToolRuntimeContext(HookRegistry.empty(), agent_name="a", correlation_id="turn-1", session_id="s")
    with bind_runtime_context(context):
        await call_tool(specs["think"], "a", {"title": "one", "thought": "first"})
        second = await call_tool(specs["think"], "a", {"title": "two", "thought": "second"})

    assert "Step 1:\nTitle: one" in second and "Step 2:\nTitle: two" in second


@pytest.mark.asyncio
async def test_toolkit_files_go_to_the_turns_outbox(tmp_path: Path):
    from mindroom.hooks.registry import HookRegistry

    env = AgentToolEnvironment("a", tmp_path / "workspace")
    specs = {
        s.name: s for s in catalog_for(agent_config(["file_generation"]), tmp_path).tools_for(["file_generation"], env)
    }
    context = ToolRuntimeContext(HookRegistry.empty(), agent_name="a", correlation_id="turn-2")
    with bind_runtime_context(context):
        text = await call_tool(specs["generate_csv_file"], "a", {"data": [["a", "b"], [1, 2]], "filename": "t.csv"})

    assert "[attached to your answer: t.csv]" in text
    (sent,) = context.outbox
    assert (sent.name, sent.mime_type, sent.data.replace(b"\r\n", b"\n")) == ("t.csv", "text/csv", b"a,b\n1,2\n")
    assert (tmp_path / "workspace" / "t.csv").exists()  # written in the agent's workspace, nowhere else
