"""Session storage: one SQLite file per agent (or the state's database), history as the model sees it, enrichment
stripping."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mindroom.ai import (
    GenerationError,
    GenerationRequest,
    generate,
    load_history,
    session_db_path,
    strip_session_enrichment,
)
from mindroom.ai.sessions.history import session_db, session_table
from mindroom.config.main import ModelConfig
from mindroom.hooks.enrichment import ENRICHMENT_TAG, EnrichmentItem, append_enrichment
from mindroom.private_files import shared_paths
from mindroom.testing.model_server import HttpError, ScriptedModelServer, Text
from tests.state.postgres_server import postgres_server, postgres_url

__all__ = ["postgres_server", "postgres_url"]


def request_for(model: ModelConfig, message: str) -> GenerationRequest:
    return GenerationRequest(
        agent_name="scribe",
        display_name="Scribe",
        role="",
        instructions=(),
        model=model,
        user_message=message,
        session_id="room-thread",
        num_history_runs=5,
        markdown=False,
    )


def test_session_db_path_is_per_agent(tmp_path: Path) -> None:
    assert session_db_path(tmp_path, "scribe") == tmp_path.resolve() / "sessions" / "scribe.db"


def test_session_store_takes_a_name_with_capitals_as_mindroom_allows(tmp_path: Path) -> None:
    assert session_db_path(tmp_path, "DevBot") == tmp_path.resolve() / "sessions" / "DevBot.db"
    assert session_table("DevBot") == "sessions_devbot"


@pytest.mark.parametrize("name", ["../escape", "Upper Case", "Ünicode", "", "a/b", ".hidden", "-dash"])
def test_session_db_path_rejects_non_agent_names(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="agent name"):
        session_db_path(tmp_path, name)


@pytest.mark.asyncio
async def test_generate_creates_agent_database(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    await generate(request_for(scripted_model, "hi"), storage_root=storage_root, env={})

    assert (storage_root / "sessions" / "scribe.db").is_file()


@pytest.mark.asyncio
async def test_session_database_is_private_whatever_the_umask(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(Text("first"), Text("second"))
    previous = os.umask(0o022)  # the usual default: files 0644, folders 0755
    try:
        await generate(request_for(scripted_model, "my private question"), storage_root=storage_root, env={})
        await generate(request_for(scripted_model, "and another"), storage_root=storage_root, env={})
    finally:
        os.umask(previous)

    sessions = storage_root / "sessions"
    assert (sessions / "scribe.db").is_file()
    assert shared_paths(sessions) == []


@pytest.mark.asyncio
async def test_session_database_an_older_version_left_open_is_tightened(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(Text("first"))
    sessions = storage_root / "sessions"
    sessions.mkdir(mode=0o755)
    (sessions / "scribe.db").touch(mode=0o644)
    (sessions / "scribe.db").chmod(0o644)

    await generate(request_for(scripted_model, "hello"), storage_root=storage_root, env={})

    assert shared_paths(sessions) == []


@pytest.mark.asyncio
async def test_failed_runs_are_stripped_and_left_out_of_history(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    model_server.script(Text("ok"), HttpError(500, "down"))
    await generate(request_for(scripted_model, "first"), storage_root=storage_root, env={})
    failing = append_enrichment("second", [EnrichmentItem(key="secret", text="do not keep")])
    with pytest.raises(GenerationError):
        await generate(request_for(scripted_model, failing), storage_root=storage_root, env={})

    rows, _count = await session_db(storage_root, "scribe").get_runs(session_id="room-thread", deserialize=False)
    assert len(rows) == 2
    assert all(ENRICHMENT_TAG not in str(row["run_data"]) for row in rows)
    assert await load_history("scribe", "room-thread", storage_root=storage_root) == [
        ("user", "first"),
        ("assistant", "ok"),
    ]


@pytest.mark.asyncio
async def test_strip_session_enrichment_rewrites_stored_runs(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path
) -> None:
    await generate(request_for(scripted_model, "plain"), storage_root=storage_root, env={})
    db = session_db(storage_root, "scribe")
    rows, _count = await db.get_runs(session_id="room-thread", deserialize=False)
    row = rows[0]
    enriched = append_enrichment("plain", [EnrichmentItem(key="k", text="stale")])
    row["run_data"]["input"]["input_content"] = enriched
    for message in row["run_data"]["messages"]:
        if message["role"] == "user":
            message["content"] = [{"type": "text", "text": enriched}]
    await db.upsert_run(row["run_data"], session_id="room-thread")

    assert await strip_session_enrichment("scribe", "room-thread", storage_root=storage_root) == 1
    assert await strip_session_enrichment("scribe", "room-thread", storage_root=storage_root) == 0

    rows, _count = await db.get_runs(session_id="room-thread", deserialize=False)
    assert rows[0]["run_data"]["input"]["input_content"] == "plain"
    assert await load_history("scribe", "room-thread", storage_root=storage_root) == [
        ("user", "plain"),
        ("assistant", "plain"),
    ]


@pytest.mark.asyncio
async def test_load_history_of_unknown_session_is_empty(storage_root: Path) -> None:
    assert await load_history("scribe", "nothing-here", storage_root=storage_root) == []


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_sessions_go_to_the_database_url_they_are_given_and_to_files_without_one(
    model_server: ScriptedModelServer, scripted_model: ModelConfig, storage_root: Path, postgres_url: str
) -> None:
    model_server.script(Text("in the database"), Text("in a file"))
    await generate(request_for(scripted_model, "first"), storage_root=storage_root, env={}, database_url=postgres_url)

    assert not session_db_path(storage_root, "scribe").exists()
    assert await load_history("scribe", "room-thread", storage_root=storage_root, database_url=postgres_url) == [
        ("user", "first"),
        ("assistant", "in the database"),
    ]

    await generate(request_for(scripted_model, "second"), storage_root=storage_root, env={})

    assert await load_history("scribe", "room-thread", storage_root=storage_root) == [
        ("user", "second"),
        ("assistant", "in a file"),
    ]
    assert len(await load_history("scribe", "room-thread", storage_root=storage_root, database_url=postgres_url)) == 2
