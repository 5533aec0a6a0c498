"""Knowledge bases end to end on a real Synapse, with the state in SQLite and in PostgreSQL: an agent answers from
a chunk of its knowledge folder (searched by words and vectors), an edited file's new text is found once the
watcher re-indexed it, and a deleted file's text is not."""

from __future__ import annotations

import asyncio
import time

import pytest

from mindroom.ai.knowledge.base import KnowledgeBase
from mindroom.testing.model_replies import content_text
from mindroom.testing.model_server import Text, ToolCall
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, thread_replies
from tests.state.postgres_server import postgres_server, postgres_url

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
__all__ = ["postgres_server", "postgres_url"]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def state_url(request: pytest.FixtureRequest) -> str | None:
    return request.getfixturevalue("postgres_url") if request.param == "postgres" else None


async def _until(check, what: str, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        await asyncio.sleep(0.1)


async def _found(base: KnowledgeBase, words: str) -> bool:
    # A hybrid search always has vector neighbours to offer: look for the words in what it returns.
    return any(words in hit.content for hit in await base.search(words))


async def _ask_with_search(e2e: E2E, human: HumanClient, room_id: str, agent: str, query: str) -> str:
    """The agent searches its knowledge for `query`, then answers; returns what the search gave the model."""
    e2e.model_server.script(ToolCall("search_knowledge_base", {"query": query}), Text("Here is what I found."),
                            model="agent-model")  # fmt: skip
    before = len(e2e.model_server.requests)
    event_id = await human.send(room_id, f"what do you know about {query}?")
    await human.wait_for(thread_replies(event_id, e2e.user_id(agent)), timeout=30)
    second = e2e.model_server.requests[before:][1]
    tool_results = [content_text(m.get("content")) for m in second["messages"] if m["role"] == "tool"]
    assert len(tool_results) == 1, second["messages"]
    return tool_results[0]


async def test_knowledge_agent_answers_from_its_folder_and_follows_edits_and_deletes(state_url: str | None, e2e: E2E):
    human = await e2e.human()
    agent, room = e2e.name("librarian"), e2e.name("room")
    folder = e2e.config_dir / "handbook"
    folder.mkdir()
    (folder / "canteen.md").write_text("# Canteen\nThe staff canteen serves durian pudding on Fridays.\n")
    (folder / "parking.md").write_text("# Parking\nBicycles go in the basement racks.\n")
    config = e2e.basic_config(
        [human.user_id],
        {agent: {"display_name": "Librarian", "rooms": [room], "knowledge_bases": ["handbook"]}},
        knowledge_bases={"handbook": {"path": "handbook", "description": "The staff handbook"}},
        memory={"embedder": {"config": {"host": e2e.model_server.base_url, "dimensions": 32, "model": "embed"}}},
    )
    if state_url is not None:
        config["storage"] = {"database_url": state_url}
    daemon = await e2e.start(config)
    assert daemon.running is not None and daemon.running.mind is not None
    base = daemon.running.mind.knowledge.get("handbook")
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    await _until(lambda: asyncio.to_thread(lambda: base.ready and base.counts().files == 2), "first index")

    counts = await asyncio.to_thread(base.counts)
    assert counts.vectors == counts.chunks == 2  # hybrid: the scripted embeddings endpoint gave every chunk a vector
    first = await _ask_with_search(e2e, human, room_id, agent, "canteen fridays")
    assert "durian pudding on Fridays" in first
    assert first.startswith("[handbook: canteen.md #1]")

    (folder / "canteen.md").write_text("# Canteen\nThe staff canteen now serves lychee sorbet on Fridays.\n")
    await _until(lambda: _found(base, "lychee"), "the edit re-indexed")
    edited = await _ask_with_search(e2e, human, room_id, agent, "canteen fridays")
    assert "lychee sorbet" in edited and "durian" not in edited

    (folder / "canteen.md").unlink()
    await _until(lambda: asyncio.to_thread(lambda: base.counts().files == 1), "the delete re-indexed")
    deleted = await _ask_with_search(e2e, human, room_id, agent, "lychee canteen")
    assert "lychee" not in deleted and "Canteen" not in deleted


async def test_knowledge_words_only_without_an_embedder_and_unreadable_files_skipped(e2e: E2E):
    human = await e2e.human()
    agent, room = e2e.name("librarian"), e2e.name("room")
    folder = e2e.config_dir / "notes"
    folder.mkdir()
    (folder / "otters.txt").write_text("Sea otters hold hands while they sleep.")
    (folder / "scan.pdf").write_bytes(b"%PDF-1.4 not really a pdf")
    config = e2e.basic_config(
        [human.user_id],
        {agent: {"display_name": "Librarian", "rooms": [room], "knowledge_bases": ["notes"]}},
        knowledge_bases={"notes": {"path": str(folder)}},
    )
    daemon = await e2e.start(config)
    assert daemon.running is not None and daemon.running.mind is not None
    base = daemon.running.mind.knowledge.get("notes")
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    await _until(lambda: asyncio.to_thread(lambda: base.ready and base.last_report is not None), "first index")

    assert dict(base.last_report.skipped).keys() == {"scan.pdf"}
    assert (await asyncio.to_thread(base.counts)).vectors == 0
    assert await asyncio.to_thread((e2e.storage / "knowledge_db").is_dir)
    assert "Sea otters hold hands" in await _ask_with_search(e2e, human, room_id, agent, "otters sleeping")
