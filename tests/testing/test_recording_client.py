"""The recording Matrix client: deterministic ids, one event per transaction, events fed to a running sync."""

from __future__ import annotations

import asyncio

import pytest

from mindroom.matrix.media import MediaTooLargeError
from mindroom.testing import RecordingClient, RecordingHomeserver
from mindroom.testing.recorded import RoomChange, SentEdit, SentMessage, TypingNotice

pytestmark = pytest.mark.asyncio

ROOM = "!room:localhost"


async def test_recording_client_records_sends_with_deterministic_ids_in_order():
    server = RecordingHomeserver()
    client = server.client("helper")

    first = await client.send_message(ROOM, "hello", thread_root="$root", reply_to="$q")
    edit = await client.edit_message(ROOM, first, "hello again")
    await client.set_typing(ROOM, True)

    assert (first, edit) == ("$ev1", "$ev2")
    assert client.user_id == "@mindroom_helper:localhost"
    [message, edited, typing] = client.records
    assert isinstance(message, SentMessage) and (message.thread_root, message.reply_to) == ("$root", "$q")
    assert message.content["m.relates_to"]["rel_type"] == "m.thread"
    assert isinstance(edited, SentEdit) and edited.target_event_id == first and edited.body == "hello again"
    assert typing == TypingNotice(ROOM, True)


async def test_recording_client_takes_a_transaction_once_as_a_homeserver_does():
    client = RecordingHomeserver().client("helper")

    first = await client.send_message(ROOM, "once", txn_id="txn-1")
    again = await client.send_message(ROOM, "once", txn_id="txn-1")

    assert first == again and len(client.messages) == 1


async def test_recording_client_finds_events_its_server_knows_in_their_room():
    server = RecordingHomeserver()
    helper, router = server.client("helper"), server.client("router")
    sent = await helper.send_message(ROOM, "mine")
    fed = server.message(ROOM, "@alice:localhost", "hi")

    found = await router.get_event(ROOM, sent)
    assert found is not None and found.sender == helper.user_id and found.body == "mine"
    assert (await router.get_event(ROOM, fed.event_id)) == fed
    assert await router.get_event("!other:localhost", sent) is None


async def test_recording_client_feeds_events_and_invites_to_a_running_sync():
    client = RecordingHomeserver().client("helper")
    seen: list[str] = []

    async def on_event(event):
        seen.append(event.event_id)

    async def on_invite(room_id: str, inviter: str) -> bool:
        return inviter == "@alice:localhost"

    with pytest.raises(RuntimeError, match="not syncing"):
        await client.deliver(client.server.message(ROOM, "@alice:localhost", "too early"))
    sync = asyncio.ensure_future(client.run_sync(on_event, on_invite=on_invite))
    await client.first_sync_done()
    event = client.server.message(ROOM, "@alice:localhost", "hi")
    await client.deliver(event)
    accepted = await client.receive_invite("!dm:localhost", "@alice:localhost")
    declined = await client.receive_invite("!spam:localhost", "@mallory:localhost")
    sync.cancel()
    await asyncio.gather(sync, return_exceptions=True)

    assert seen == [event.event_id]
    assert (accepted, declined) == (True, False)
    assert client.records == [RoomChange("!dm:localhost", "joined"), RoomChange("!spam:localhost", "left")]
    assert await client.joined_rooms() == ["!dm:localhost"]


async def test_recording_client_downloads_what_the_test_uploaded_within_the_limit():
    server = RecordingHomeserver()
    client: RecordingClient = server.client("helper")
    url = server.upload(b"\x89PNG....", "cat.png", "image/png")
    content = {"msgtype": "m.image", "body": "cat.png", "url": url}

    media = await client.download_media(content, max_bytes=1024)

    assert (media.data, media.name, media.mimetype) == (b"\x89PNG....", "cat.png", "image/png")
    with pytest.raises(MediaTooLargeError):
        await client.download_media(content, max_bytes=4)
