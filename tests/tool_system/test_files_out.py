"""Files tools send with the answer: `send_file` from tool code, agno media as files, and the size limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from mindroom.config.main import Config
from mindroom.hooks.registry import HookRegistry
from mindroom.tool_system.calls import call_tool
from mindroom.tool_system.files_out import send_file
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import OutboundFile, ToolError, ToolOutput, ToolSpec

pytestmark = pytest.mark.asyncio


def turn(max_file_bytes: int = 1000) -> ToolRuntimeContext:
    config = Config.model_validate({"tools": {"max_file_bytes": max_file_bytes}})
    return ToolRuntimeContext(HookRegistry.empty(), agent_name="a", correlation_id="t", config=config)


async def test_send_file_from_tool_code_joins_the_answer(tmp_path: Path):
    chart = tmp_path / "chart.png"
    chart.write_bytes(b"\x89PNG")

    def plot() -> str:
        send_file(chart)
        send_file(b"a,b\n", name="table.csv")
        return "made a chart"

    context = turn()
    with bind_runtime_context(context):
        text = await call_tool(ToolSpec(name="plot", function=plot), "a", {})

    assert text == "made a chart"
    assert [(f.name, f.mime_type, f.data) for f in context.outbox] == [
        ("chart.png", "image/png", b"\x89PNG"), ("table.csv", "text/csv", b"a,b\n")
    ]  # fmt: skip


async def test_files_over_the_limit_are_left_out_and_the_model_is_told():
    def big() -> ToolOutput:
        return ToolOutput(
            "here", (OutboundFile("small.txt", b"x" * 10, "text/plain"), OutboundFile("big.bin", b"x" * 2000))
        )

    def too_big() -> str:
        send_file(b"x" * 2000, name="huge.bin")
        return "unreachable"

    context = turn(max_file_bytes=1000)
    with bind_runtime_context(context):
        text = await call_tool(ToolSpec(name="big", function=big), "a", {})
        refused = await call_tool(ToolSpec(name="too_big", function=too_big), "a", {})

    assert [f.name for f in context.outbox] == ["small.txt"]
    assert text == (
        "here\n[attached to your answer: small.txt]\n[big.bin (2000 bytes) is over the 1000-byte limit and is not sent]"
    )
    assert "[TOOL CALL FAILED]" in refused and "huge.bin (2000 bytes) is over the 1000-byte limit" in refused


async def test_send_file_outside_a_turn_is_a_tool_error():
    with pytest.raises(ToolError, match="no answer to send a file with"):
        send_file(b"x", name="x.txt")


async def test_bad_tool_results_become_short_text_and_the_call_completes():
    class Opaque:
        def __repr__(self) -> str:
            return "<opaque>"

    spec = ToolSpec
    huge = await call_tool(spec(name="huge", function=lambda: "y" * (10 * 1024 * 1024)), "a", {})
    odd = await call_tool(spec(name="odd", function=lambda: {"thing": Opaque()}), "a", {})
    raised = await call_tool(
        spec(name="boom", function=lambda: (_ for _ in ()).throw(RuntimeError("x" * 10_000))), "a", {}
    )

    assert len(huge) < 100_100 and huge.endswith("[result truncated to 100000 characters]")
    assert odd == '{"thing": "<opaque>"}'
    assert raised.startswith("[TOOL CALL FAILED]") and raised.endswith("[error truncated]") and len(raised) < 2200
