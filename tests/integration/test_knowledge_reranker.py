"""MindRoom's `knowledge_reranker` on a real Synapse: the knowledge search's hits come back in the order a
Cohere-format `/rerank` endpoint gives (a real HTTP server here), and in the search's own order when that
endpoint fails."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.integration.conftest import E2E
from tests.integration.test_knowledge import _ask_with_search, _until

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


class _Rerank:
    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, Any], str | None]] = []
        self.failing = False


@contextmanager
def rerank_server() -> Iterator[tuple[str, _Rerank]]:
    """A `/rerank` endpoint that ranks the documents mentioning parking first, or answers 500 while `failing`."""
    state = _Rerank()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append((body, self.headers.get("Authorization")))
            if state.failing:
                self.send_response(500)
                self.end_headers()
                return
            ranked = sorted(range(len(body["documents"])), key=lambda i: "Parking" not in body["documents"][i])
            payload = json.dumps({"results": [{"index": i, "relevance_score": 1.0 / (1 + i)} for i in ranked]})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(payload.encode())

        def log_message(self, *_args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v2/rerank", state
    finally:
        server.shutdown()
        server.server_close()


async def test_knowledge_reranker_orders_the_hits_and_a_failing_one_leaves_the_search_s_order(e2e: E2E):
    human = await e2e.human()
    agent, room = e2e.name("librarian"), e2e.name("room")
    folder = e2e.config_dir / "handbook"
    folder.mkdir()
    (folder / "canteen.md").write_text("# Canteen\nThe staff canteen serves durian pudding on Fridays.\n")
    (folder / "parking.md").write_text("# Parking\nBicycles go in the basement racks.\n")
    with rerank_server() as (url, reranker):
        config = e2e.basic_config(
            [human.user_id],
            {agent: {"display_name": "Librarian", "rooms": [room], "knowledge_bases": ["handbook"]}},
            knowledge_bases={"handbook": {"path": "handbook"}},
            memory={"embedder": {"config": {"host": e2e.model_server.base_url, "dimensions": 32, "model": "embed"}}},
            knowledge_reranker={"provider": "cohere", "model": "rerank-v3.5", "url": url, "api_key": "rk-test-1"},
        )
        daemon = await e2e.start(config)
        assert daemon.running is not None and daemon.running.mind is not None
        base = daemon.running.mind.knowledge.get("handbook")
        room_id = e2e.room_id(room)
        await e2e.joined(human, room_id)
        await _until(lambda: asyncio.to_thread(lambda: base.ready and base.counts().files == 2), "first index")

        reranked = await _ask_with_search(e2e, human, room_id, agent, "canteen fridays")
        reranker.failing = True
        kept = await _ask_with_search(e2e, human, room_id, agent, "canteen fridays")

    assert reranked.startswith("[handbook: parking.md #1]") and "durian pudding" in reranked
    assert kept.startswith("[handbook: canteen.md #1]")
    (body, authorization), _ = reranker.requests
    assert body["model"] == "rerank-v3.5" and body["query"] == "canteen fridays" and body["top_n"] == 10
    assert [text.strip() for text in sorted(body["documents"])] == [
        "# Canteen\nThe staff canteen serves durian pudding on Fridays.",
        "# Parking\nBicycles go in the basement racks.",
    ]
    assert authorization == "Bearer rk-test-1"
