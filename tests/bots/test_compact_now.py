"""`compact_context`: the agent folds its conversation's older half into a summary during the call, with the
compaction hooks, as compaction before an answer does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import pytest_asyncio

from mindroom.ai import GenerationRequest, close_caches, generate, load_history
from mindroom.ai.compaction import SUMMARY_REQUEST
from mindroom.bots.compact_now import HistoryFolder
from mindroom.bots.runtime import LiveCell, LiveState
from mindroom.config.main import Config, ModelConfig
from mindroom.constants import RuntimePaths
from mindroom.hooks import EVENT_COMPACTION_AFTER, HookRegistry, hook
from mindroom.testing.model_server import ScriptedModelServer, Text
from mindroom.tool_system.builtin.compact_context import compact_context
from mindroom.tool_system.builtin.parts import DaemonParts, provide_daemon_parts
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from tests.hooks.support import stub_plugin

pytestmark = pytest.mark.asyncio

SESSION = "!room:localhost:$thread"
SEEN: list[tuple[int, int, str]] = []


@hook(EVENT_COMPACTION_AFTER)
async def noted(ctx):
    SEEN.append((ctx.token_count_before, ctx.token_count_after, ctx.compaction_summary))


@pytest_asyncio.fixture
async def storage(tmp_path: Path) -> AsyncIterator[Path]:
    yield tmp_path
    await close_caches()


def folder(storage: Path, model_server: ScriptedModelServer, num_history_runs: int = 10) -> HistoryFolder:
    config = Config.model_validate(
        {
            "models": {
                "default": {
                    "provider": "openai",
                    "id": "scripted",
                    "extra_kwargs": {"base_url": model_server.base_url, "max_retries": 0},
                }
            },
            "agents": {"scribe": {"display_name": "Scribe", "num_history_runs": num_history_runs}},
        }
    )
    registry = HookRegistry.from_plugins([stub_plugin("watch", [noted])])
    cell = LiveCell(LiveState(config=config, registry=registry))
    directory = SimpleNamespace(room_keys=lambda room_id: frozenset(), entities={})
    return HistoryFolder(cell, directory, storage, {}, None)  # type: ignore[arg-type]


async def converse(model_server: ScriptedModelServer, model: ModelConfig, storage: Path, turns: int) -> None:
    for index in range(turns):
        model_server.script(Text(f"answer {index} " + "a" * 200))
        request = GenerationRequest(
            "scribe", "Scribe", "", (), model, f"question {index} " + "q" * 200, SESSION, 10, False
        )
        await generate(request, storage_root=storage, env={})


def turn(storage: Path):
    paths = RuntimePaths(storage / "config.yaml", storage, {})
    context = ToolRuntimeContext(
        None, "scribe", "!room:localhost", "$thread", "@alice:localhost", SESSION, runtime_paths=paths
    )
    return bind_runtime_context(context)


async def test_compact_context_folds_the_older_half_now(storage: Path, model_server: ScriptedModelServer):
    desk = folder(storage, model_server)
    model = desk._cell.live.config.models["default"]
    await converse(model_server, model, storage, 4)
    model_server.script(Text("Four questions about q, answered about a."))
    withdraw = provide_daemon_parts(storage, DaemonParts(compaction=desk))
    try:
        with turn(storage):
            answer = await compact_context()
            again = await compact_context()
    finally:
        withdraw()

    history = await load_history("scribe", SESSION, storage_root=storage)
    assert answer.startswith("Compacted: 3 earlier turn(s) folded into a summary")
    assert history[:2] == [("user", SUMMARY_REQUEST), ("assistant", "Four questions about q, answered about a.")]
    assert history[2][1].startswith("question 3") and len(history) == 4
    assert SEEN[-1][2] == "Four questions about q, answered about a." and SEEN[-1][0] > SEEN[-1][1]
    assert again == "Nothing to compact: the earlier history is already one summary."


async def test_compact_context_with_no_history_folds_nothing(storage: Path, model_server: ScriptedModelServer):
    withdraw = provide_daemon_parts(storage, DaemonParts(compaction=folder(storage, model_server)))
    try:
        with turn(storage):
            empty = await compact_context()
    finally:
        withdraw()
    withdraw = provide_daemon_parts(storage, DaemonParts(compaction=folder(storage, model_server, num_history_runs=0)))
    try:
        with turn(storage):
            none_kept = await compact_context()
    finally:
        withdraw()

    assert empty == "There is no earlier history in this conversation to compact."
    assert none_kept == "This conversation keeps no history to compact."
    assert model_server.requests == []
