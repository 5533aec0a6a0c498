"""A gap larger than the sync timeline limit is backfilled: nothing sent while a bot was away is lost."""

import pytest

from mindroom.testing.homeserver import unique_localpart

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def test_sync_backfills_a_limited_timeline_after_a_long_absence(make_bot, start_sync):
    sender, listener = await make_bot(), await make_bot()
    room_id = await sender.ensure_room(unique_localpart("gap"), invite=[listener.user_id])
    await listener.join(room_id)
    recorder = await start_sync(listener)
    await sender.send_message(room_id, "before")
    await recorder.wait_for_body("before")
    await recorder.stop()

    bodies = [f"while away {index}" for index in range(150)]
    for body in bodies:
        await sender.send_message(room_id, body)

    resumed = await start_sync(listener)
    await resumed.wait_for_body(bodies[-1], seconds=30)
    delivered = [event.body for event in resumed.events if event.body and event.body.startswith("while away")]
    assert delivered == bodies
