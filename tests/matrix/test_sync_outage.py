"""run_sync across a homeserver outage: one log line when it goes, one when it is back, no lost messages."""

from __future__ import annotations

import asyncio

import pytest
from structlog.testing import capture_logs

from mindroom.testing.homeserver import unique_localpart

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def test_sync_rides_out_an_outage_and_logs_it_once(matrix_homeserver, make_bot, start_sync):
    if matrix_homeserver.is_external:
        pytest.skip("cannot stop an external homeserver")
    sender, listener = await make_bot(), await make_bot()
    room_id = await sender.ensure_room(unique_localpart("outage"), invite=[listener.user_id])
    await listener.join(room_id)

    with capture_logs() as logs:
        recorder = await start_sync(listener)
        await asyncio.to_thread(matrix_homeserver.stop)
        await asyncio.sleep(2.0)  # several reconnection attempts fail meanwhile
        await asyncio.to_thread(matrix_homeserver.start)
        await sender.send_message(room_id, "after the outage")
        await recorder.wait_for_body("after the outage", seconds=40)

    events = [entry["event"] for entry in logs]
    assert events.count("sync connection lost") == 1
    assert events.count("sync connection restored") == 1
    restored = next(entry for entry in logs if entry["event"] == "sync connection restored")
    assert restored["attempts"] >= 2
    assert restored["agent"] == listener.bot_name
