"""Retry timing through homeserver outages: a refused connection is asked again soon, other failures back off."""

from __future__ import annotations

import asyncio
import socket

import aiohttp
import pytest

from mindroom.matrix import delivery
from mindroom.matrix.delivery import REFUSED_RETRY_S, send_until_accepted
from mindroom.matrix.errors import MatrixConnectionError
from mindroom.matrix.sync import _Outage
from mindroom.matrix.transport import JsonReply, guard_transport


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def _hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.read(1)
    writer.close()


@pytest.mark.asyncio
async def test_a_port_nobody_listens_on_is_refused() -> None:
    async with aiohttp.ClientSession() as session:
        with pytest.raises(MatrixConnectionError) as caught:
            await guard_transport(session.get(f"http://127.0.0.1:{_closed_port()}/"), "probe")
    assert caught.value.refused


@pytest.mark.asyncio
async def test_a_server_that_hangs_up_is_not_refused() -> None:
    server = await asyncio.start_server(_hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with aiohttp.ClientSession() as session:
            with pytest.raises(MatrixConnectionError) as caught:
                await guard_transport(session.get(f"http://127.0.0.1:{port}/"), "probe")
    finally:
        server.close()
        await server.wait_closed()
    assert not caught.value.refused


@pytest.mark.asyncio
async def test_refused_sends_retry_at_the_short_interval_and_others_back_off(monkeypatch) -> None:
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(delivery.asyncio, "sleep", record)
    failures = [True] * 6 + [False] * 3 + [True]

    async def send(txn_id: str) -> str:
        if failures:
            raise MatrixConnectionError("down", refused=failures.pop(0))
        return "$sent"

    assert await send_until_accepted(send, "probe") == "$sent"
    assert all(0.9 * REFUSED_RETRY_S <= wait <= REFUSED_RETRY_S for wait in waits[:6])  # refusals never grow it
    for wait, step in zip(waits[6:9], [0.5, 1.0, 2.0], strict=True):  # failures that reached a server double it
        assert step <= wait <= step * 1.1
    assert 0.9 * REFUSED_RETRY_S <= waits[9] <= REFUSED_RETRY_S


def test_sync_outage_probes_every_second_while_refused_then_backs_off_from_the_start() -> None:
    outage = _Outage("probe")
    refused = [outage.failed("refused", refused=True) for _ in range(20)]
    assert all(0.8 * REFUSED_RETRY_S <= delay <= REFUSED_RETRY_S for delay in refused)
    first_real = outage.failed("HTTP 502")
    assert 0.5 <= first_real <= 0.55  # a long refused spell does not start the backoff at the cap
    assert outage.failed("HTTP 502") >= 1.0
    outage.recovered()
    assert outage.failed("HTTP 502") <= 0.55


@pytest.mark.parametrize(
    ("body", "seconds"),
    [
        pytest.param({"errcode": "M_LIMIT_EXCEEDED", "retry_after_ms": 2500}, 2.5, id="asked"),
        pytest.param({"retry_after_ms": 0.5}, 0.0005, id="fraction"),
        pytest.param({"errcode": "M_LIMIT_EXCEEDED"}, 1.0, id="not-named"),
        pytest.param({"retry_after_ms": 0}, 1.0, id="zero"),
        pytest.param({"retry_after_ms": -300}, 1.0, id="negative"),
        pytest.param({"retry_after_ms": "2500"}, 1.0, id="text"),
        pytest.param({"retry_after_ms": True}, 1.0, id="bool"),
        pytest.param(None, 1.0, id="not-json"),
    ],
)
def test_a_rate_limited_reply_says_how_long_to_wait(body, seconds) -> None:
    assert JsonReply(429, body).retry_after_s == seconds
