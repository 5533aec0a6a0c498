"""run_sync against a real Synapse: live delivery without backlog, resume without repeats, invites, bad events."""

from __future__ import annotations

import asyncio
import contextlib
import stat

import pytest

from mindroom.matrix import MatrixBotClient, MatrixEventKind, SyncTokenStore
from mindroom.testing.homeserver import unique_localpart

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def _shared_room(owner: MatrixBotClient, *members: MatrixBotClient) -> str:
    room_id = await owner.ensure_room(unique_localpart("room"), invite=[member.user_id for member in members])
    for member in members:
        await member.join(room_id)
    return room_id


async def test_sync_delivers_live_messages_but_not_the_backlog(make_bot, start_sync):
    sender, listener = await make_bot(), await make_bot()
    room_id = await _shared_room(sender, listener)
    await sender.send_message(room_id, "backlog")

    recorder = await start_sync(listener)
    await sender.send_message(room_id, "live")

    event = await recorder.wait_for_body("live")
    assert event.room_id == room_id
    assert event.sender == sender.user_id
    assert event.kind is MatrixEventKind.MESSAGE
    assert event.origin_server_ts > 0
    assert event.state_key is None
    assert all(delivered.body != "backlog" for delivered in recorder.events)


async def test_sync_resumes_from_stored_token_without_repeating_events(make_bot, start_sync, tmp_path):
    sender, listener = await make_bot(), await make_bot()
    room_id = await _shared_room(sender, listener)
    first = await start_sync(listener)
    delivered_id = await sender.send_message(room_id, "before restart")
    await first.wait_for_body("before restart")
    await first.stop()
    await listener.close()

    token_path = SyncTokenStore(tmp_path / "data").path(listener.bot_name)
    assert stat.S_IMODE(token_path.stat().st_mode) == 0o600
    await sender.send_message(room_id, "while offline")

    restarted = await make_bot(listener.bot_name)
    second = await start_sync(restarted)
    await sender.send_message(room_id, "after restart")
    await second.wait_for_body("after restart")
    bodies = [event.body for event in second.events if event.kind is MatrixEventKind.MESSAGE]
    assert bodies == ["while offline", "after restart"]
    assert delivered_id not in {event.event_id for event in second.events}


async def test_sync_delivers_malformed_and_unknown_events_raw(make_bot, start_sync):
    sender, listener = await make_bot(), await make_bot()
    room_id = await _shared_room(sender, listener)
    recorder = await start_sync(listener)

    await sender.send_event(
        room_id,
        "m.room.message",
        {
            "msgtype": "m.text",
            "body": "x",
            "format": [],
            "formatted_body": 5,
            "m.mentions": {"user_ids": "everyone"},
            "m.relates_to": {"rel_type": 7, "m.in_reply_to": "nope"},
            "marker": 1,
        },
    )
    await sender.send_event(
        room_id, "m.room.message", {"msgtype": "m.text", "body": "", "m.new_content": 5, "marker": 2}
    )
    await sender.send_event(room_id, "m.room.message", {"msgtype": "com.example.weird", "body": "x", "marker": 3})
    await sender.send_event(room_id, "com.example.custom", {"marker": 4, "nested": [1, {"a": None}]})
    await sender.send_event(room_id, "m.reaction", {"m.relates_to": "not an object", "marker": 5})

    for marker in range(1, 6):
        await recorder.wait_for(lambda event, marker=marker: event.content.get("marker") == marker)
    by_marker = {event.content.get("marker"): event for event in recorder.events}
    assert by_marker[1].content["formatted_body"] == 5
    assert by_marker[1].relation_type is None
    assert by_marker[1].reply_to is None
    assert by_marker[2].body == ""
    assert by_marker[2].content["m.new_content"] == 5
    assert by_marker[3].msgtype == "com.example.weird"
    assert by_marker[4].kind is MatrixEventKind.OTHER
    assert by_marker[4].content["nested"] == [1, {"a": None}]
    assert by_marker[5].kind is MatrixEventKind.REACTION
    assert by_marker[5].relation == {}
    assert by_marker[5].reaction_key is None


async def test_sync_survives_a_failing_handler(make_bot):
    sender, listener = await make_bot(), await make_bot()
    room_id = await _shared_room(sender, listener)
    alive = asyncio.Event()

    async def handler(event):
        if event.body == "boom":
            raise RuntimeError("handler bug")
        if event.body == "still alive":
            alive.set()

    async def never_invited(room_id: str, inviter: str) -> bool:
        return False

    task = asyncio.create_task(listener.run_sync(handler, on_invite=never_invited))
    try:
        async with asyncio.timeout(15):
            await listener.first_sync_done()
            await sender.send_message(room_id, "boom")
            await sender.send_message(room_id, "still alive")
            await alive.wait()
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_sync_invite_callback_accepts_and_rejects(make_bot, start_sync):
    host, guest = await make_bot(), await make_bot()
    welcome = await host.ensure_room(unique_localpart("welcome"))
    unwanted = await host.ensure_room(unique_localpart("unwanted"))
    recorder = await start_sync(guest, accept_invites=lambda room_id, inviter: room_id == welcome)

    await host.invite(welcome, guest.user_id)
    await host.invite(unwanted, guest.user_id)
    await recorder.wait_for_invites(2)
    assert sorted(recorder.invites) == sorted([(welcome, host.user_id), (unwanted, host.user_id)])

    joined = await recorder.wait_for(
        lambda event: event.room_id == welcome and event.state_key == guest.user_id and event.membership == "join"
    )
    assert joined.kind is MatrixEventKind.MEMBER
    assert guest.user_id in await host.room_members(welcome)
    for _ in range(300):
        member = await host.get_room_state(unwanted, "m.room.member", guest.user_id)
        if member is not None and member.get("membership") == "leave":
            break
        await asyncio.sleep(0.05)
    else:
        pytest.fail("the unwanted invite was not rejected")
    assert unwanted not in await guest.joined_rooms()


async def test_sync_after_join_skips_history_from_before_the_join(make_bot, start_sync):
    host, guest = await make_bot(), await make_bot()
    room_id = await host.ensure_room(unique_localpart("history"))
    recorder = await start_sync(guest)
    await host.send_message(room_id, "said before the guest was there")
    await host.invite(room_id, guest.user_id)
    await recorder.wait_for(lambda event: event.room_id == room_id and event.membership == "join")
    await host.send_message(room_id, "said after the join")
    await recorder.wait_for_body("said after the join")
    assert all(event.body != "said before the guest was there" for event in recorder.events)


async def test_sync_runs_only_once_per_client(make_bot, start_sync):
    listener = await make_bot()
    await start_sync(listener)

    async def ignore(event):
        return None

    async def decline(room_id: str, inviter: str) -> bool:
        return False

    with pytest.raises(RuntimeError, match="already syncing"):
        await listener.run_sync(ignore, on_invite=decline)


async def test_sync_with_settle_gathers_what_follows_a_batch_into_the_next_one(make_bot):
    sender, listener = await make_bot(), await make_bot()
    room_id = await _shared_room(sender, listener)
    arrived: dict[str, float] = {}
    reply_of: dict[str, int] = {}  # which sync reply each message came in
    syncs = 0
    transport = listener._transport
    request = transport.request

    async def counting(method, path, **options):
        nonlocal syncs
        answer = await request(method, path, **options)
        syncs += path.endswith("/sync")
        return answer

    transport.request = counting  # type: ignore[method-assign]

    async def handler(event):
        if event.body:
            arrived[event.body] = asyncio.get_running_loop().time()
            reply_of[event.body] = syncs

    async def on_invite(room_id: str, inviter: str) -> bool:
        return False

    # A settle long enough that both later messages are sent before it ends, even on a loaded machine.
    task = asyncio.create_task(listener.run_sync(handler, on_invite=on_invite, settle_s=3.0))
    try:
        await asyncio.wait_for(listener.first_sync_done(), timeout=15)
        await sender.send_message(room_id, "one")
        while "one" not in arrived:
            await asyncio.sleep(0.01)
        await sender.send_message(room_id, "two")
        await sender.send_message(room_id, "three")
        while "three" not in arrived:
            await asyncio.sleep(0.01)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    assert arrived["two"] - arrived["one"] >= 2.9  # the loop waited before its next long-poll
    assert reply_of["two"] == reply_of["three"] != reply_of["one"]  # and both came in that one reply
