"""Knowledge and memory: indexing time, search latency, and what they add to the daemon's answers.

1. Index 2,000 Markdown files (about 10 MB) into the embedded default (SQLite: FTS5, sqlite-vec), first by
   words only (no embedder), then hybrid with the scripted server's embeddings endpoint (256 dimensions).
   Targets: under 60 s each on this 2-core machine. Then an edit of 20 files: the incremental refresh.
2. Search p50/p95 over 200 queries at that size, words only and hybrid. Target: p50 under 20 ms.
   With `BENCH_POSTGRES=1` the same runs against the test suite's PostgreSQL (text search, pgvector).
3. The daemon on a real Synapse (a subprocess, scripted model): two agents in one run, one plain, one with
   memory on and a knowledge base, asked in turn. Target: the second's p50 at most 10% above the first's.
   The memory model is scripted to take 0.5 s per extraction: were extraction on the reply path, the
   second agent's p50 would rise by that much.
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mindroom.ai.knowledge.base import KnowledgeBase  # noqa: E402
from mindroom.ai.knowledge.embedder import EmbedderSpec  # noqa: E402
from mindroom.config.knowledge import KnowledgeBaseConfig  # noqa: E402
from mindroom.state.location import open_knowledge_index  # noqa: E402
from mindroom.testing.homeserver import TestHomeserver  # noqa: E402
from mindroom.testing.memory_script import is_memory_request  # noqa: E402
from mindroom.testing.model_server import Delay, ScriptedModelServer, Text, ToolCall  # noqa: E402
from tests.integration.support import HumanClient, thread_replies  # noqa: E402

FILES = int(os.environ.get("BENCH_FILES", "2000"))
FILE_BYTES = int(os.environ.get("BENCH_FILE_BYTES", "5000"))
QUERIES = int(os.environ.get("BENCH_QUERIES", "200"))
MESSAGES = int(os.environ.get("BENCH_MESSAGES", "40"))
EXTRACTION_S = 0.5
_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "po", "qu", "fa", "gi", "ho", "ju", "be")
_VOCABULARY = [a + b + c for a in _SYLLABLES for b in _SYLLABLES for c in _SYLLABLES]  # 4,096 words
_WEIGHTS = [1.0 / (rank + 1) for rank in range(len(_VOCABULARY))]
"""Words drawn by Zipf's law, as in prose: a few are everywhere, most are rare."""


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _write_corpus(folder: Path) -> int:
    rng = random.Random(7)
    total = 0
    for index in range(FILES):
        words = rng.choices(_VOCABULARY, _WEIGHTS, k=FILE_BYTES // 7)
        text = f"# Note {index}\n\nThe code word of note {index} is token{index}.\n\n" + " ".join(words) + "\n"
        path = folder / f"section{index % 20}" / f"note{index}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        total += len(text)
    return total


async def _searches(base: KnowledgeBase) -> list[float]:
    rng = random.Random(11)
    samples = []
    for index in range(QUERIES):
        query = " ".join(rng.choices(_VOCABULARY[20:], _WEIGHTS[20:], k=3))
        started = time.perf_counter()
        await base.search(query)
        samples.append((time.perf_counter() - started) * 1000)
        if index == 0:
            samples.clear()  # the first search opens what later ones reuse
    return samples


async def index_and_search(
    root: Path, label: str, embedder: EmbedderSpec | None, database_url: str | None
) -> dict[str, float]:
    corpus = root / "corpus"
    config = KnowledgeBaseConfig(path=str(corpus))
    index = open_knowledge_index(root / f"data-{label}", database_url, f"bench-{label}")
    base = KnowledgeBase(f"bench-{label}", config, corpus, index, embedder)
    try:
        report = await base.refresh(rebuild=True)
        counts = await asyncio.to_thread(base.counts)
        for index_number in range(20):
            path = corpus / f"section{index_number % 20}" / f"note{index_number}.md"
            path.write_text(path.read_text() + f"\nEdited {time.time_ns()}.\n")
        edit = await base.refresh()
        samples = await _searches(base)
    finally:
        await base.close()
    return {
        "index_s": report.seconds, "files": counts.files, "chunks": counts.chunks, "vectors": counts.vectors,
        "edit_s": edit.seconds, "edited": edit.indexed, "p50": _pct(samples, 0.5), "p95": _pct(samples, 0.95),
    }  # fmt: skip


def _daemon_config(base_url: str, user: str, rooms: dict[str, str], folder: Path) -> dict[str, Any]:
    model = {"provider": "openai", "id": "bench", "extra_kwargs": {"base_url": base_url, "max_retries": 0}}
    plain = {"display_name": "Plain", "model": "default", "rooms": [rooms["plain"]]}
    mindful = {"display_name": "Mindful", "model": "default", "rooms": [rooms["mindful"]],
               "memory_backend": "mem0", "knowledge_bases": ["notes"]}  # fmt: skip
    return {
        "models": {"default": model},
        "agents": {"plain": plain, "mindful": mindful},
        "router": {"model": "default"},
        "authorization": {"global_users": [user], "room_permissions": {}, "default_room_access": False},
        "room_defaults": {"invite_users": [user]},
        "defaults": {"enable_streaming": False},
        "knowledge_bases": {"notes": {"path": str(folder)}},
        "memory": {"embedder": {"config": {"host": base_url, "dimensions": 64, "model": "embed"}}},
    }


async def answer_latency(hs: TestHomeserver, model: ScriptedModelServer, root: Path) -> dict[str, float]:
    """p50 of the plain agent and of the agent with memory and a knowledge base, asked alternately."""
    fact = ToolCall("add_memory", {"memory": "The benchmark user likes round numbers."})
    model.when(lambda r: is_memory_request(r) and not any(m["role"] == "tool" for m in r["messages"]),
               Delay(EXTRACTION_S, fact))  # fmt: skip
    model.when(is_memory_request, Text("Noted."))
    user = hs.register_user(f"kb{secrets.token_hex(3)}", "bench-pass")
    human = HumanClient(hs.url, user.user_id, user.password)
    await human.start()
    tag = secrets.token_hex(3)
    rooms = {"plain": f"plain{tag}", "mindful": f"mindful{tag}"}
    workdir = root / "daemon"
    folder = workdir / "notes"
    folder.mkdir(parents=True)
    for index in range(200):
        (folder / f"note{index}.md").write_text(f"Note {index}: the valve of pump {index} turns clockwise.\n")
    (workdir / "config.yaml").write_text(yaml.safe_dump(_daemon_config(model.base_url, user.user_id, rooms, folder)))
    env = {**os.environ, "MATRIX_HOMESERVER": hs.url, "MATRIX_SERVER_NAME": hs.server_name,
           "MATRIX_REGISTRATION_SHARED_SECRET": hs.registration_shared_secret,
           "MINDROOM_STORAGE_PATH": str(workdir / "data"), "MINDROOM_ACCOUNT_PREFIX": f"k{tag}_"}  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "mindroom", "run", "--config", str(workdir / "config.yaml")],
        stdout=subprocess.DEVNULL, stderr=(workdir / "daemon.log").open("wb"), env=env, cwd=workdir,
    )  # fmt: skip
    try:
        for _ in range(600):
            if b"daemon ready" in (workdir / "daemon.log").read_bytes():
                break
            await asyncio.sleep(0.1)
        room_ids = {}
        for name, key in rooms.items():
            for _ in range(600):
                resolved = await human.client.room_resolve_alias(f"#{key}:{hs.server_name}")
                joined = await human.client.joined_rooms()
                if getattr(resolved, "room_id", None) and resolved.room_id in getattr(joined, "rooms", []):
                    room_ids[name] = resolved.room_id
                    break
                await asyncio.sleep(0.1)
        samples: dict[str, list[float]] = {"plain": [], "mindful": []}
        for index in range(MESSAGES + 4):
            for name in ("plain", "mindful") if index % 2 else ("mindful", "plain"):  # neither always goes first
                started = time.perf_counter()
                event_id = await human.send(room_ids[name], f"question {index}: which way does the valve turn?")
                await human.wait_for(thread_replies(event_id, f"@k{tag}_{name}:{hs.server_name}"), timeout=30)
                if index >= 4:  # the first answers load the model libraries
                    samples[name].append((time.perf_counter() - started) * 1000)
        extractions = sum(1 for r in model.requests if is_memory_request(r))
    finally:
        process.terminate()
        process.wait(30)
        await human.close()
    plain, mindful = statistics.median(samples["plain"]), statistics.median(samples["mindful"])
    return {"plain": plain, "mindful": mindful, "ratio": mindful / plain, "extractions": extractions}


def _embeddings_endpoint() -> tuple[subprocess.Popen[str], str]:
    """The scripted server in a process of its own, as a real embeddings endpoint is (it computes the vectors)."""
    code = (
        "import sys, time; from mindroom.testing.model_server import ScriptedModelServer; "
        "print(ScriptedModelServer().start().base_url, flush=True); time.sleep(3600)"
    )
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert process.stdout is not None
    for line in process.stdout:  # the server logs its start on stdout too
        if line.startswith("http"):
            return process, line.strip()
    raise RuntimeError("the embeddings endpoint did not start")


async def main() -> int:
    endpoint, base_url = _embeddings_endpoint()
    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer() as model:
        root = Path(tmp)
        size = _write_corpus(root / "corpus")
        print(f"corpus: {FILES} Markdown files, {size / 1e6:.1f} MB")
        hybrid = EmbedderSpec("embed", base_url, "bench", 256)
        runs = [("sqlite", "words", None, None), ("sqlite", "hybrid", hybrid, None)]
        if os.environ.get("BENCH_POSTGRES"):
            from tests.state.postgres_server import SERVER

            url = SERVER.wait().create_database()
            runs += [("postgres", "words", None, url), ("postgres", "hybrid", hybrid, url)]
        print(f"{'store':<10}{'search':<8}{'index s':>9}{'chunks':>8}{'vectors':>9}{'20 edits s':>12}"
              f"{'p50 ms':>8}{'p95 ms':>8}")  # fmt: skip
        for store, mode, embedder, url in runs:
            figures = await index_and_search(root, f"{store}-{mode}", embedder, url)
            print(f"{store:<10}{mode:<8}{figures['index_s']:>9.1f}{figures['chunks']:>8.0f}{figures['vectors']:>9.0f}"
                  f"{figures['edit_s']:>12.2f}{figures['p50']:>8.2f}{figures['p95']:>8.2f}")  # fmt: skip
        endpoint.kill()
        print("targets: index < 60 s, search p50 < 20 ms")
        model.set_default(Text("It turns clockwise."))
        with TestHomeserver() as hs:
            latency = await answer_latency(hs, model, root)
        print(
            f"answer p50 over {MESSAGES} pairs: plain {latency['plain']:.1f} ms, with memory and a knowledge base "
            f"{latency['mindful']:.1f} ms, ratio {latency['ratio']:.2f} (target <= 1.10); "
            f"{latency['extractions']:.0f} memory-model requests of {EXTRACTION_S} s each, none on the reply path"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
