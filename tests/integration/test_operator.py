"""Operator surfaces after real traffic: `!hooks`, `mindroom hooks list` and the metrics endpoint agree."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
import urllib.request
from asyncio.subprocess import PIPE

import pytest
import pytest_asyncio
import structlog

from mindroom.api.app import create_app
from mindroom.api.app_context import ApiContext
from mindroom.api.server import ApiServer
from mindroom.api.settings import api_settings
from mindroom.daemon.hooks_snapshot import snapshot_path, write_hooks_snapshot
from mindroom.daemon.metrics import MetricsCollector
from mindroom.daemon.wiring import DaemonApiView
from mindroom.testing.model_api import word_count
from mindroom.testing.model_api_openai import ChatCompletionsApi
from mindroom.testing.model_server import Stream, Text
from tests.integration.conftest import E2E
from tests.integration.support import thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

SCRAPE_TOKEN = "metrics-scrape-token-1234"
SCRAPER = {"MINDROOM_API_KEY": "operator-dashboard-key-1234", "MINDROOM_METRICS_TOKEN": SCRAPE_TOKEN}


def _scrape(url: str) -> str:
    """`/metrics` read as Prometheus reads it: with its bearer token."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {SCRAPE_TOKEN}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.read().decode()


HOOKS = """
from mindroom.hooks import hook, EnrichmentItem

@hook("message:received")
async def look(ctx):
    pass

@hook("message:enrich")
async def stamp(ctx):
    return EnrichmentItem(key="stamp", text="stamped")

@hook("message:before_response")
async def polish(ctx):
    ctx.draft.response_text = ctx.draft.response_text + "!"

@hook("message:after_response")
async def broken(ctx):
    raise RuntimeError("this hook always fails")
"""

USAGE = """
import json
from pathlib import Path

from mindroom.hooks import hook

@hook("message:after_response")
async def tally(ctx):
    usage = ctx.result.usage
    with Path(ctx.settings["log"]).open("a") as out:
        out.write(json.dumps([ctx.envelope.agent_name, usage.model, usage.input_tokens, usage.output_tokens,
                              usage.cached_tokens]) + "\\n")
"""

SAMPLE = re.compile(r"^(?P<name>[a-z_]+)(?:\{(?P<labels>[^}]*)\})? (?P<value>\S+)$")


def _parse(text: str) -> list[tuple[str, dict[str, str], float]]:
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        assert match, f"not Prometheus text: {line!r}"
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match["labels"] or ""))
        samples.append((match["name"], labels, float(match["value"])))
    return samples


def _value(samples, name: str, **labels: str) -> float:
    found = [v for n, ls, v in samples if n == name and all(ls.get(k) == val for k, val in labels.items())]
    assert len(found) == 1, (name, labels, found)
    return found[0]


@pytest_asyncio.fixture
async def restored_logging():
    saved = structlog.get_config()
    handlers = list(logging.getLogger().handlers)
    yield
    structlog.configure(**saved)
    root = logging.getLogger()
    root.handlers[:] = handlers


async def test_operator_surfaces_show_real_counts_after_traffic(e2e: E2E, restored_logging):
    e2e.plugin("ops", HOOKS)
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config(
        [human.user_id],
        {agent: {"display_name": "Helper", "role": "Helps.", "model": "default", "rooms": [room]}},
        plugins=["plugins/ops"],
    )
    daemon = await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    e2e.model_server.set_default(Text("pong"), model="agent-model")

    for index in range(3):
        event_id = await human.send(room_id, f"ping {index}")
        reply = await human.wait_for(thread_replies(event_id, e2e.user_id(agent)))
        assert reply["content"]["body"] == "pong!"
    await e2e.idle()  # the failing after_response hook runs after the send

    command = await human.send(room_id, "!hooks")
    table = (await human.wait_for(thread_replies(command, e2e.user_id("router"))))["content"]["body"]
    assert re.search(r"ops:stamp .* calls=3 failures=0", table)
    assert re.search(r"ops:broken .* calls=3 failures=3", table)

    running = daemon.running
    assert running is not None
    ctx = ApiContext(DaemonApiView(daemon), api_settings(SCRAPER, port=0))
    collector = MetricsCollector(lambda: daemon.running, lambda: e2e.reloads.outcomes)
    async with ApiServer(ctx, create_app(ctx, collector)) as server:
        assert server.url.startswith("http://127.0.0.1:")
        url = server.url + "/metrics"
        body = await asyncio.to_thread(_scrape, url)
        again = await asyncio.to_thread(_scrape, url)
    samples = _parse(body)
    hook = {"plugin": "ops", "hook": "stamp", "event": "message:enrich"}
    assert _value(samples, "mindroom_hook_calls_total", **hook) == 3
    assert _value(samples, "mindroom_hook_duration_seconds_count", **hook) == 3
    assert _value(samples, "mindroom_hook_duration_seconds_bucket", le="+Inf", **hook) == 3
    broken = {"plugin": "ops", "hook": "broken", "event": "message:after_response"}
    assert _value(samples, "mindroom_hook_failures_total", **broken) == 3
    assert _value(samples, "mindroom_hook_timeouts_total", **broken) == 0
    assert _value(samples, "mindroom_agent_answers_total", agent=agent) == 3
    assert _value(samples, "mindroom_agent_messages_handled_total", agent=agent) >= 3
    assert _value(samples, "mindroom_agent_answer_latency_seconds_count", agent=agent) == 3
    assert _value(samples, "mindroom_up") == 1
    # A second scrape does not count the same samples twice.
    assert _value(_parse(again), "mindroom_hook_duration_seconds_count", **hook) == 3

    write_hooks_snapshot(snapshot_path(e2e.storage), running.live.registry, running=True)
    # A process of its own, as an operator runs it: the running daemon's log lines cannot mix into its output.
    listing = ["hooks", "list", "--config", str(e2e.config_dir / "config.yaml"), "--storage-path", str(e2e.storage)]
    result = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "mindroom", *listing, "--json", stdout=PIPE, stderr=PIPE
    )
    stdout, stderr = await asyncio.wait_for(result.communicate(), 60)
    assert result.returncode == 0, stderr.decode()
    rows = {row["hook_name"]: row for row in json.loads(stdout)}
    assert rows["stamp"]["calls"] == 3 and rows["broken"]["failures"] == 3
    assert [row["event_name"] for row in json.loads(stdout)] == [
        "message:received",
        "message:enrich",
        "message:before_response",
        "message:after_response",
    ]


async def test_operator_token_usage_reaches_after_response_and_metrics(e2e: E2E, tmp_path):
    log = tmp_path / "usage.jsonl"
    e2e.plugin("usage", USAGE)
    human = await e2e.human()
    whole, streamed, room = e2e.name("whole"), e2e.name("streamed"), e2e.name("room")
    agents = {
        whole: {"display_name": "Whole", "model": "default", "rooms": [room]},
        streamed: {"display_name": "Streamed", "model": "default", "rooms": [room], "enable_streaming": True},
    }
    config = e2e.basic_config(
        [human.user_id], agents, plugins=[{"path": "plugins/usage", "settings": {"log": str(log)}}]
    )
    daemon = await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    e2e.model_server.set_cached_tokens(2)

    spent = {}
    for agent, reply in (
        (whole, Text("three words here")),
        (streamed, Stream(["four ", "words ", "streamed ", "too"])),
    ):
        e2e.model_server.set_default(reply, model="agent-model")
        asked = len(e2e.model_server.requests)
        event_id = await human.send(room_id, f"{e2e.user_id(agent)} count", mentions=[e2e.user_id(agent)])
        await human.wait_for(thread_replies(event_id, e2e.user_id(agent)))
        requests = [r for r in e2e.model_server.requests[asked:] if r.get("model") == "agent-model"]
        spent[agent] = sum(word_count(ChatCompletionsApi().texts(request)) for request in requests)
    await e2e.idle()

    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert rows == [[whole, "agent-model", spent[whole], 3, 2], [streamed, "agent-model", spent[streamed], 4, 2]]
    ctx = ApiContext(DaemonApiView(daemon), api_settings(SCRAPER, port=0))
    async with ApiServer(ctx, create_app(ctx, MetricsCollector(lambda: daemon.running))) as server:
        url = server.url + "/metrics"
        body = await asyncio.to_thread(_scrape, url)
    samples = _parse(body)
    for agent, output in ((whole, 3), (streamed, 4)):
        labels = {"agent": agent, "model": "agent-model"}
        assert _value(samples, "mindroom_model_tokens_total", kind="input", **labels) == spent[agent]
        assert _value(samples, "mindroom_model_tokens_total", kind="output", **labels) == output
        assert _value(samples, "mindroom_model_tokens_total", kind="cached", **labels) == 2
