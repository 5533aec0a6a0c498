"""History compaction against real agno session storage and the scripted model server."""

from __future__ import annotations

from pathlib import Path

import pytest
from agno.models.message import Message

from mindroom.ai import GenerationRequest, generate, load_history
from mindroom.ai.compaction import (
    COMPACTION_METADATA_KEY,
    SUMMARY_REQUEST,
    CompactionChunk,
    compact_history,
    estimate_tokens,
)
from mindroom.ai.sessions.history import session_db
from mindroom.config.main import ModelConfig
from mindroom.testing.model_server import HttpError, ScriptedModelServer, Text

SESSION = "!room:localhost:$thread"


def request_for(model: ModelConfig, message: str, num_history_runs: int = 10) -> GenerationRequest:
    return GenerationRequest(
        agent_name="scribe",
        display_name="Scribe",
        role="",
        instructions=(),
        model=model,
        user_message=message,
        session_id=SESSION,
        num_history_runs=num_history_runs,
        markdown=False,
    )


async def converse(server: ScriptedModelServer, model: ModelConfig, root: Path, turns: int, size: int = 200) -> None:
    """`turns` stored runs, each a question and an answer of about `size` characters."""
    for index in range(turns):
        server.script(Text(f"answer {index} " + "a" * size))
        await generate(request_for(model, f"question {index} " + "q" * size), storage_root=root, env={})


async def compact(model: ModelConfig, root: Path, budget: int | None, **options):
    return await compact_history(
        "scribe",
        SESSION,
        model=model,
        budget=budget,
        num_history_runs=options.pop("num_history_runs", 10),
        storage_root=root,
        env={},
        **options,
    )


async def stored_runs(root: Path) -> list[dict]:
    rows, _ = await session_db(root, "scribe").get_runs(session_id=SESSION, deserialize=False)
    return rows


def test_estimate_tokens_is_characters_over_four():
    assert [estimate_tokens(text) for text in ("", "abc", "abcd", "abcde")] == [0, 1, 1, 2]


@pytest.mark.asyncio
@pytest.mark.parametrize("budget", [None, 0])
async def test_compaction_disabled_by_a_zero_or_missing_budget(model_server, scripted_model, storage_root, budget):
    await converse(model_server, scripted_model, storage_root, 3)

    assert await compact(scripted_model, storage_root, budget) is None
    assert len(model_server.requests) == 3


@pytest.mark.asyncio
async def test_compaction_leaves_history_under_the_budget_alone(model_server, scripted_model, storage_root):
    await converse(model_server, scripted_model, storage_root, 3)

    assert await compact(scripted_model, storage_root, 12_000) is None
    assert len(await stored_runs(storage_root)) == 3
    assert len(model_server.requests) == 3


@pytest.mark.asyncio
async def test_compaction_folds_the_oldest_runs_into_one_summary_run(model_server, scripted_model, storage_root):
    await converse(model_server, scripted_model, storage_root, 5)  # 106 tokens a run
    newest = (await stored_runs(storage_root))[-1]["run_id"]
    model_server.script(Text("They asked four questions about q and got answers about a."))
    chunks: list[CompactionChunk] = []

    async def on_chunk(chunk: CompactionChunk) -> None:
        chunks.append(chunk)

    # 530 tokens against 250: the newest run (106) fits in 3/4 of the budget, two (212) would not.
    result = await compact(scripted_model, storage_root, 250, on_chunk=on_chunk, with_messages=True)

    assert result is not None
    assert result.runs_folded == 4
    assert result.summary == "They asked four questions about q and got answers about a."
    assert (result.token_count_before, result.token_count_after) == (530, 106 + estimate_tokens(SUMMARY_REQUEST) + 15)
    assert [m.role for m in result.messages] == ["user", "assistant"] * 4
    assert all(isinstance(m, Message) for m in result.messages)
    assert result.messages[0].content.startswith("question 0")
    (chunk,) = chunks  # four small runs fit one chunk
    assert chunk.token_count_before == result.token_count_before
    assert [m.content.split()[0:2] for m in chunk.messages][:2] == [["question", "0"], ["answer", "0"]]
    rows = await stored_runs(storage_root)
    assert [row["run_id"] for row in rows][1:] == [newest]
    assert rows[0]["run_data"]["metadata"][COMPACTION_METADATA_KEY]["runs"] == 4
    history = await load_history("scribe", SESSION, storage_root=storage_root)
    assert history[:2] == [("user", SUMMARY_REQUEST), ("assistant", result.summary)]
    assert history[2][1].startswith("question 4")
    summarising = model_server.requests[-1]
    assert summarising["messages"][0]["role"] == "system"
    assert "compress conversations" in summarising["messages"][0]["content"]
    assert "question 3" in summarising["messages"][1]["content"]
    assert "question 4" not in summarising["messages"][1]["content"]
    assert not summarising.get("tools")


@pytest.mark.asyncio
async def test_compaction_summary_is_history_the_model_is_sent_later(model_server, scripted_model, storage_root):
    await converse(model_server, scripted_model, storage_root, 4)
    model_server.script(Text("SUMMARY-OF-EARLIER-TURNS"))
    await compact(scripted_model, storage_root, 250)
    model_server.script(Text("fine"))

    await generate(request_for(scripted_model, "and now?"), storage_root=storage_root, env={})

    sent = [message.get("content") for message in model_server.requests[-1]["messages"]]
    assert "SUMMARY-OF-EARLIER-TURNS" in sent
    assert not any("question 0" in str(text) for text in sent)


@pytest.mark.asyncio
async def test_compaction_folds_in_chunks_each_announced_before_it_is_stored(
    model_server, scripted_model, storage_root
):
    await converse(model_server, scripted_model, storage_root, 5, size=6000)  # ~3000 tokens a run
    model_server.set_default(Text("short summary"))
    seen: list[tuple[int, int, int]] = []

    async def on_chunk(chunk: CompactionChunk) -> None:
        seen.append((len(chunk.messages), len(await stored_runs(storage_root)), chunk.token_count_before))

    result = await compact(scripted_model, storage_root, 4100, on_chunk=on_chunk)

    assert result is not None and result.runs_folded == 4
    assert [count for count, _, _ in seen] == [2] * 4  # one run a chunk (two do not fit in 4100 tokens)
    # Announced while its runs are still stored; each summary replaces its chunk and the summary before it.
    assert [runs for _, runs, _ in seen] == [5, 5, 4, 3]
    befores = [before for _, _, before in seen]
    assert befores[0] == result.token_count_before and befores == sorted(befores, reverse=True)
    rows = await stored_runs(storage_root)
    assert len(rows) == 2
    assert rows[0]["run_data"]["content"] == "short summary"
    assert rows[0]["run_data"]["metadata"][COMPACTION_METADATA_KEY]["runs"] == 4


@pytest.mark.asyncio
async def test_compaction_keeps_the_summary_inside_the_replayed_window(model_server, scripted_model, storage_root):
    await converse(model_server, scripted_model, storage_root, 5, size=20)  # small runs, many of them
    model_server.script(Text("summary"))

    result = await compact(scripted_model, storage_root, 60, num_history_runs=3)

    assert result is not None
    assert len(await stored_runs(storage_root)) <= 3


@pytest.mark.asyncio
async def test_compaction_model_failure_leaves_the_history_as_it_was(model_server, scripted_model, storage_root):
    await converse(model_server, scripted_model, storage_root, 4)
    before = [row["run_id"] for row in await stored_runs(storage_root)]
    model_server.script(HttpError(500, "summariser down"))

    assert await compact(scripted_model, storage_root, 250) is None
    assert [row["run_id"] for row in await stored_runs(storage_root)] == before
