"""A bot's own handling of its account: invites are accepted only from people who may reach its agents."""

from __future__ import annotations

from typing import Any

import pytest

from mindroom.testing.recorded import RoomChange
from tests.bots.bench import ALICE, BOB, LOBBY, MALLORY

pytestmark = pytest.mark.asyncio

DM = "!dm:localhost"
HELPER = {"helper": {"display_name": "Helper", "rooms": ["lobby"]}}


def kept_rooms(bench: Any, name: str) -> list[str]:
    return [room.room_id for room in bench.daemon.directory.memory.rooms(name)]


async def test_bot_joins_and_keeps_a_room_an_authorized_person_invites_it_into(make_bench):
    bench = await make_bench(HELPER)
    client = bench.client("helper")

    assert await client.receive_invite(DM, ALICE) is True

    assert DM in bench.bots["helper"].joined_rooms
    assert client.records[-1] == RoomChange(DM, "joined")
    assert kept_rooms(bench, "helper") == [DM]


CAROL = "@carol:localhost"
OPS_ONLY = {"room_permissions": {"lobby": [BOB], "!ops:localhost": [CAROL]}}


@pytest.mark.parametrize(
    ("inviter", "room_id"),
    [
        pytest.param(MALLORY, DM, id="stranger"),
        pytest.param(CAROL, DM, id="user-of-a-room-the-agent-does-not-serve"),
    ],
)
async def test_bot_rejects_an_invite_from_someone_who_may_not_reach_it(make_bench, inviter: str, room_id: str):
    bench = await make_bench(HELPER, authorization=OPS_ONLY)
    client = bench.client("helper")

    assert await client.receive_invite(room_id, inviter) is False

    assert room_id not in bench.bots["helper"].joined_rooms
    assert client.records[-1] == RoomChange(room_id, "left")
    assert kept_rooms(bench, "helper") == []


async def test_bot_accepts_an_invite_of_a_room_user_into_that_room(make_bench):
    bench = await make_bench(HELPER)

    assert await bench.client("helper").receive_invite(LOBBY, BOB) is True


async def test_bot_a_user_of_one_of_its_rooms_may_open_a_dm_with_the_agent_and_talk_there(make_bench, model_server):
    bench = await make_bench(HELPER, authorization=OPS_ONLY)
    client = bench.client("helper")

    assert await client.receive_invite(DM, BOB) is True
    await bench.deliver(bench.server.message(DM, BOB, "hello in private"))
    await bench.deliver(bench.server.message(DM, CAROL, "me too"))  # invited by Bob, not a user of the agent
    await bench.settle()

    assert [(m.room_id, m.body) for m in client.messages] == [(DM, "hello in private")]
    assert kept_rooms(bench, "helper") == [DM]


async def test_bot_room_access_for_everyone_lets_no_stranger_into_a_dm(make_bench):
    bench = await make_bench(HELPER, authorization={"default_room_access": True})

    assert await bench.client("helper").receive_invite(DM, MALLORY) is False


async def test_bot_that_never_accepts_invites_rejects_even_an_authorized_person(make_bench):
    bench = await make_bench({"helper": {"display_name": "Helper", "accept_invites": "never"}})

    assert await bench.client("helper").receive_invite(DM, ALICE) is False
    assert await bench.client("helper").receive_invite(DM, BOB) is False
    assert kept_rooms(bench, "helper") == []


async def test_bot_accepts_an_invite_from_another_bot_of_the_daemon(make_bench):
    bench = await make_bench(HELPER)

    assert await bench.client("helper").receive_invite(DM, bench.user_id("router")) is True


async def test_bot_leaving_an_invited_room_forgets_it(make_bench):
    bench = await make_bench(HELPER)
    await bench.client("helper").receive_invite(DM, ALICE)

    await bench.bots["helper"].leave(DM)

    assert DM not in bench.bots["helper"].joined_rooms
    assert kept_rooms(bench, "helper") == []


async def test_bot_sync_asks_keys_and_answers_unreadable_events_only_for_people_who_may_reach_it(make_bench):
    bench = await make_bench(HELPER)

    for name in ("router", "helper"):
        check = bench.client(name).sender_check
        assert check is not None
        assert check(LOBBY, BOB) and check(LOBBY, ALICE)
        assert not check(LOBBY, MALLORY) and not check(DM, MALLORY)
        assert check(LOBBY, bench.user_id("router"))
    # In a room config does not name, a user of the agent's rooms reaches that agent (not the router).
    assert bench.client("helper").sender_check(DM, BOB)  # type: ignore[misc]
    assert not bench.client("router").sender_check(DM, BOB)  # type: ignore[misc]
