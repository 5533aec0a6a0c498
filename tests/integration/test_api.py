"""The HTTP app on the real daemon (a real Synapse, real state): the official `openai` client asks an agent
whole and streamed, the same agent answers in Matrix, and the REST API sees both; `mindroom run` serves it
(and `--no-api` does not), and on the operator's own homeserver without `MINDROOM_API_KEY` it requires the key
it generated and keeps in the data directory."""

from __future__ import annotations

import asyncio
import json
import socket
import stat
import subprocess
import sys

import httpx
import pytest
from openai import AsyncOpenAI

from mindroom.api.app import create_app
from mindroom.api.app_context import ApiContext
from mindroom.api.keys import KEY_FILENAME
from mindroom.api.server import ApiServer
from mindroom.api.settings import api_settings
from mindroom.daemon.wiring import DaemonApiView
from mindroom.testing.model_server import Echo, Stream
from tests.integration.conftest import E2E
from tests.integration.support import thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

KEY = "sk-integration-key"
DASHBOARD = "dashboard-integration-key"
COUNTER = """
from mindroom.hooks import hook

@hook("message:enrich")
async def count(ctx):
    return None
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_api_v1_and_matrix_turns_share_the_agent_and_the_rest_api_sees_them(e2e: E2E):
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    e2e.plugin("counter", COUNTER)
    config = e2e.basic_config(
        [human.user_id],
        {agent: {"display_name": "Helper", "role": "Helps.", "rooms": [room]}},
        plugins=[{"path": "plugins/counter"}],
    )
    daemon = await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    ctx = ApiContext(
        DaemonApiView(daemon), api_settings({"OPENAI_COMPAT_API_KEYS": KEY, "MINDROOM_API_KEY": DASHBOARD}, port=0)
    )
    e2e.model_server.set_default(Echo(prefix="echo: "))

    async with ApiServer(ctx, create_app(ctx)) as server:
        client = AsyncOpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)
        try:
            models = [model.id for model in (await client.models.list()).data]
            whole = await client.chat.completions.create(
                model=agent, messages=[{"role": "user", "content": "whole please"}], extra_headers={"X-Session-Id": "s"}
            )
            e2e.model_server.set_default(Stream(["stre", "amed"], delay_s=0.05))
            stream = await client.chat.completions.create(
                model=agent, messages=[{"role": "user", "content": "stream please"}], stream=True
            )
            streamed = "".join([chunk.choices[0].delta.content or "" async for chunk in stream])
        finally:
            await client.close()
        e2e.model_server.set_default(Echo(prefix="matrix: "))
        event_id = await human.send(room_id, "hello from Matrix")
        reply = await human.wait_for(thread_replies(event_id, e2e.user_id(agent)))
        async with httpx.AsyncClient(base_url=server.url, headers={"Authorization": f"Bearer {DASHBOARD}"}) as rest:
            for _ in range(50):  # the turn is noted once it is stored
                turns = (await rest.get("/api/turns")).json()
                if len(turns) == 3:
                    break
                await asyncio.sleep(0.1)
            hooks = (await rest.get("/api/hooks")).json()
            status = (await rest.get("/api/status")).json()

    assert models == ["auto", agent]
    assert whole.choices[0].message.content == "echo: whole please" and whole.model == agent
    assert streamed == "streamed"
    assert reply["content"]["body"] == "matrix: hello from Matrix"
    assert [turn["source_kind"] for turn in turns] == ["message", "api", "api"]
    assert all(turn["outcome"] == "answered" and turn["hooks"] == ["counter:count"] for turn in turns)
    [row] = hooks
    assert (row["plugin_name"], row["calls"]) == ("counter", 3)
    bot = next(bot for bot in status["bots"] if bot["name"] == agent)
    assert bot["synced"] is True and room_id in [room["room_id"] for room in bot["rooms"]]
    assert human.matching(thread_replies(event_id)) == [reply]  # the API's answers went nowhere in Matrix


async def test_mindroom_run_serves_the_api_and_no_api_turns_it_off(e2e: E2E):
    human = await e2e.human()
    agent = e2e.name("helper")
    config = e2e.basic_config([human.user_id], {agent: {"display_name": "Helper"}})
    port = _free_port()
    daemon = e2e.spawn(config, MINDROOM_API_PORT=str(port), MINDROOM_API_KEY=DASHBOARD)
    daemon.start()
    await daemon.wait_for_line("api listening")
    await daemon.wait_for_line("daemon ready")
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        health = await client.get("/api/health")
        ready = await client.get("/api/ready")
        refused = await client.get("/api/status")
        metrics = await client.get("/metrics", headers={"Authorization": f"Bearer {DASHBOARD}"})
    code = await daemon.terminate()

    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert ready.json() == {"ready": True}
    assert refused.status_code == 401
    assert "mindroom_up 1.0" in metrics.text
    assert code == 0
    listening = [json.loads(line) for line in daemon.output().splitlines() if "api listening" in line]
    assert listening[0]["host"] == "127.0.0.1" and listening[0]["port"] == port

    quiet = e2e.spawn(config, MINDROOM_API_PORT=str(port), MINDROOM_API="false")
    quiet.start()
    await quiet.wait_for_line("daemon ready", count=2)  # the log file holds the first run's lines too
    with pytest.raises(httpx.ConnectError):
        async with httpx.AsyncClient() as client:
            await client.get(f"http://127.0.0.1:{port}/api/health")
    assert await quiet.terminate() == 0
    assert quiet.output().count("api listening") == 1  # the first run's only

    result = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "mindroom", "run", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "--no-api" in result.stdout and "--api-port" in result.stdout


async def test_mindroom_run_on_an_own_homeserver_without_a_key_requires_the_generated_one(e2e: E2E):
    human = await e2e.human()
    agent = e2e.name("helper")
    config = e2e.basic_config([human.user_id], {agent: {"display_name": "Helper"}})
    port = _free_port()
    # MATRIX_HOMESERVER is the test's Synapse: no embedded default. An empty key is no key.
    daemon = e2e.spawn(config, MINDROOM_API_PORT=str(port), MINDROOM_API_KEY="", MINDROOM_API_KEY_FILE="")
    daemon.start()
    await daemon.wait_for_line("daemon ready")
    config_path = e2e.config_dir / "config.yaml"
    before = config_path.read_text()
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        anonymous = await client.get("/api/config/raw")  # from loopback, naming 127.0.0.1 as its Host
        written = await client.put("/api/config/raw", json={"source": "agents: {}\n"})
        metrics = await client.get("/metrics")
        assert (anonymous.status_code, written.status_code, metrics.status_code) == (401, 401, 401)
        key_file = e2e.storage / KEY_FILENAME
        key = key_file.read_text().strip()
        near = await client.get("/api/config/raw", headers={"Authorization": f"Bearer {key}x"})
        keyed = await client.get("/api/config/raw", headers={"Authorization": f"Bearer {key}"})
        docs = await client.get("/docs", headers={"Authorization": f"Bearer {key}"})
    code = await daemon.terminate()

    assert near.status_code == 401 and config_path.read_text() == before
    assert keyed.status_code == 200 and agent in keyed.json()["source"]
    assert docs.status_code == 404  # off unless MINDROOM_ENABLE_API_DOCS
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600 and len(key) >= 24
    assert key not in daemon.output()  # the logs never show it
    assert code == 0
