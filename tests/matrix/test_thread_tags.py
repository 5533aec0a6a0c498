"""Thread tags in room state: MindRoom's representation, the room's power rule for who may change them, and the
writer chosen among the daemon's accounts."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest

from mindroom.matrix.thread_tags import (
    THREAD_TAGS_EVENT_TYPE,
    ThreadTagError,
    ThreadTagStore,
    normalize_tag,
    parse_state_key,
    state_key,
)
from mindroom.matrix.transport import JsonReply
from mindroom.testing.recording_client import RecordingClient, RecordingHomeserver

ROOM = "!room:localhost"
ALICE, BOB, MALLORY = "@alice:localhost", "@bob:localhost", "@mallory:localhost"


class Member(RecordingClient):
    """A recording client whose room has the people the test names."""

    members: ClassVar[list[str]] = []

    async def room_members(self, room_id: str) -> list[str]:
        return [self.user_id, *self.members]


def world(users: dict[str, int], *, events: dict[str, int] | None = None, members: list[str] | None = None):
    server = RecordingHomeserver()
    router, agent = Member(server, "router"), Member(server, "helper")
    Member.members = [ALICE, BOB, agent.user_id] if members is None else members
    levels: dict[str, Any] = {"users": {router.user_id: 100, **users}, "users_default": 0, "state_default": 50}
    if events is not None:
        levels["events"] = events
    server.state[(ROOM, "m.room.power_levels", "")] = levels
    return server, router, agent


def test_state_key_is_mindrooms_compact_json_pair_and_parses_back():
    key = state_key("$root", "bug")

    assert key == '["$root","bug"]'
    assert parse_state_key(key) == ("$root", "bug")
    assert parse_state_key('["$root"]') is None
    assert parse_state_key('["$root","Bad Tag!"]') is None
    assert parse_state_key("$root|bug") is None


@pytest.mark.parametrize("name", ["Bug", " needs-review ", "p1", "a" * 50])
def test_normalize_tag_takes_names_of_lower_case_letters_digits_hyphens(name):
    assert normalize_tag(name) == name.strip().lower()


@pytest.mark.parametrize("name", ["", "needs_review", "bug!", "a" * 51, "two words", None])
def test_normalize_tag_refuses_near_misses(name):
    with pytest.raises(ThreadTagError):
        normalize_tag(name)


@pytest.mark.asyncio
async def test_thread_tag_store_adds_and_removes_one_state_event_per_tag():
    server, router, agent = world({ALICE: 50})
    store = ThreadTagStore(agent, [agent, router])

    await store.add(ROOM, "$root", "bug", ALICE, "seen twice")
    await store.add(ROOM, "$root", "blocked", ALICE)
    removed = await store.remove(ROOM, "$root", "blocked", ALICE)
    again = await store.remove(ROOM, "$root", "blocked", ALICE)

    content = server.state[(ROOM, THREAD_TAGS_EVENT_TYPE, '["$root","bug"]')]
    assert content["set_by"] == ALICE and content["note"] == "seen twice" and content["data"] == {}
    assert content["set_at"].endswith("Z")
    assert server.state[(ROOM, THREAD_TAGS_EVENT_TYPE, '["$root","blocked"]')] == {}  # removed: emptied
    assert (removed, again) == (True, False)
    assert list(await store.thread_tags(ROOM, "$root")) == ["bug"]
    assert list(await store.room_tags(ROOM)) == ["$root"]


@pytest.mark.asyncio
async def test_thread_tag_store_writes_through_the_first_account_with_the_power():
    _, router, agent = world({ALICE: 50})  # the agent has no power here; the router made the room

    await ThreadTagStore(agent, [agent, router]).add(ROOM, "$root", "bug", ALICE)

    assert [w.event_type for w in router.records if hasattr(w, "event_type")] == [THREAD_TAGS_EVENT_TYPE]
    assert not [w for w in agent.records if hasattr(w, "event_type")]


@pytest.mark.parametrize(
    ("users", "events", "person", "allowed"),
    [
        ({ALICE: 50}, None, ALICE, True),  # state_default 50, exactly met
        ({ALICE: 49}, None, ALICE, False),  # one short
        ({}, None, BOB, False),  # users_default 0
        ({}, {THREAD_TAGS_EVENT_TYPE: 0}, BOB, True),  # the room lets every member tag
        ({}, {THREAD_TAGS_EVENT_TYPE + ".x": 0}, BOB, False),  # a near-miss event type counts for nothing
        ({MALLORY: 100}, None, MALLORY, False),  # power, but not in the room
    ],
)
@pytest.mark.asyncio
async def test_thread_tag_store_lets_only_people_the_room_allows_change_tags(users, events, person, allowed):
    server, router, agent = world(users, events=events)
    store = ThreadTagStore(agent, [agent, router])

    assert await store.may_change(ROOM, person) is allowed
    if allowed:
        await store.add(ROOM, "$root", "bug", person)
        assert list(await store.thread_tags(ROOM, "$root")) == ["bug"]
    else:
        with pytest.raises(ThreadTagError, match="may not change thread tags"):
            await store.add(ROOM, "$root", "bug", person)
        assert not [key for key in server.state if key[1] == THREAD_TAGS_EVENT_TYPE]


@pytest.mark.asyncio
async def test_thread_tag_store_refuses_when_no_account_of_the_daemon_may_write():
    _, _, agent = world({ALICE: 50})

    with pytest.raises(ThreadTagError, match="none of the daemon's accounts"):
        await ThreadTagStore(agent).add(ROOM, "$root", "bug", ALICE)


@pytest.mark.asyncio
async def test_thread_tag_store_reads_tags_other_clients_wrote_and_skips_malformed_ones():
    server, _, agent = world({})
    good = {"set_by": BOB, "set_at": "2026-11-01T10:00:00Z", "data": {"level": "high"}}
    server.state[(ROOM, THREAD_TAGS_EVENT_TYPE, json.dumps(["$a", "priority"]))] = good
    server.state[(ROOM, THREAD_TAGS_EVENT_TYPE, '["$a","Not A Tag"]')] = good
    server.state[(ROOM, THREAD_TAGS_EVENT_TYPE, '["$b","bug"]')] = {"set_at": "2026-11-01T10:00:00Z"}

    tags = await ThreadTagStore(agent).room_tags(ROOM)

    assert list(tags) == ["$a"] and list(tags["$a"]) == ["priority"]
    assert tags["$a"]["priority"].data == {"level": "high"}


@pytest.mark.asyncio
@pytest.mark.parametrize(("version", "allowed"), [("12", True), ("11", False)])
async def test_thread_tag_store_counts_unlisted_creators_from_room_version_12(version, allowed):
    server, _, agent = world({})
    server.state[(ROOM, "m.room.power_levels", "")] = {"users": {}, "state_default": 50}
    create = {"type": "m.room.create", "sender": agent.user_id, "state_key": "", "content": {"room_version": version}}
    server.api_reply = JsonReply(200, [create])

    assert await ThreadTagStore(agent).may_change(ROOM, agent.user_id) is allowed
