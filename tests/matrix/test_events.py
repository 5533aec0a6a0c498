"""Normalizing raw events and building message content: pure functions, no homeserver."""

from __future__ import annotations

import pytest

from mindroom.matrix.content import edit_content, message_content, reaction_content
from mindroom.matrix.events import MatrixEventKind, event_from_raw


def _raw(**overrides):
    raw = {
        "event_id": "$e",
        "sender": "@a:b",
        "type": "m.room.message",
        "content": {"msgtype": "m.text", "body": "hi"},
        "origin_server_ts": 1234,
    }
    raw.update(overrides)
    return raw


def test_event_from_raw_normalizes_a_message():
    event = event_from_raw("!r", _raw())
    assert event is not None
    assert (event.room_id, event.event_id, event.sender, event.type) == ("!r", "$e", "@a:b", "m.room.message")
    assert event.kind is MatrixEventKind.MESSAGE
    assert event.body == "hi"
    assert event.origin_server_ts == 1234
    assert event.state_key is None


@pytest.mark.parametrize(
    "raw",
    [None, "text", [], _raw(event_id=None), _raw(sender=5), _raw(type={"x": 1})],
)
def test_event_from_raw_drops_events_without_identity(raw):
    assert event_from_raw("!r", raw) is None


def test_event_from_raw_tolerates_bad_fields():
    event = event_from_raw("!r", _raw(content="not a dict", origin_server_ts=True, state_key=7))
    assert event is not None
    assert event.content == {}
    assert event.origin_server_ts == 0
    assert event.state_key is None
    assert event.body is None
    assert event.relation == {}


def test_event_from_raw_reads_redacts_from_content_or_top_level():
    modern = event_from_raw("!r", _raw(type="m.room.redaction", content={"redacts": "$x"}))
    legacy = event_from_raw("!r", _raw(type="m.room.redaction", content={}, redacts="$y"))
    assert modern is not None
    assert legacy is not None
    assert (modern.kind, modern.redacts_event_id) == (MatrixEventKind.REDACTION, "$x")
    assert legacy.redacts_event_id == "$y"


def _member(membership, **overrides):
    return _raw(type="m.room.member", state_key="@a:b", content={"membership": membership}, **overrides)


@pytest.mark.parametrize(
    ("overrides", "prev_content", "prev_membership"),
    [
        pytest.param({"unsigned": {"prev_content": {"membership": "invite"}}}, {"membership": "invite"}, "invite",
                     id="unsigned"),
        pytest.param({"prev_content": {"membership": "join", "displayname": "A"}},
                     {"membership": "join", "displayname": "A"}, "join", id="top-level"),
        pytest.param({"unsigned": {"prev_content": {"membership": "leave"}}, "prev_content": {"membership": "join"}},
                     {"membership": "leave"}, "leave", id="unsigned-wins"),
        pytest.param({}, None, None, id="first-membership"),
        pytest.param({"unsigned": {"prev_content": "bad"}}, None, None, id="malformed"),
        pytest.param({"unsigned": {"prev_content": {"membership": 3}}}, {"membership": 3}, None, id="bad-membership"),
    ],
)  # fmt: skip
def test_event_from_raw_reads_prev_content_of_state_events(overrides, prev_content, prev_membership):
    event = event_from_raw("!r", _member("join", **overrides))
    assert event is not None
    assert event.membership == "join"
    assert event.prev_content == prev_content
    assert event.prev_membership == prev_membership


def test_prev_membership_only_for_member_events():
    event = event_from_raw("!r", _raw(unsigned={"prev_content": {"membership": "join"}}))
    assert event is not None
    assert event.prev_membership is None


def test_event_kinds():
    kinds = {
        kind: event_from_raw("!r", _raw(type=kind)).kind
        for kind in ["m.room.message", "m.reaction", "m.room.redaction", "m.room.member", "m.room.topic"]
    }
    assert list(kinds.values()) == [
        MatrixEventKind.MESSAGE,
        MatrixEventKind.REACTION,
        MatrixEventKind.REDACTION,
        MatrixEventKind.MEMBER,
        MatrixEventKind.OTHER,
    ]


def test_message_content_reply_without_thread_and_extra_keys_win():
    content = message_content("hi", reply_to="$p", extra_content={"com.mindroom.original_sender": "@u:s"})
    assert content == {
        "msgtype": "m.text",
        "body": "hi",
        "m.relates_to": {"m.in_reply_to": {"event_id": "$p"}},
        "com.mindroom.original_sender": "@u:s",
    }


def test_message_content_thread_defaults_fallback_reply_to_root_and_formats_html():
    content = message_content("hi", thread_root="$root", formatted_body="<b>hi</b>", mentions=[])
    assert content["m.relates_to"]["m.in_reply_to"] == {"event_id": "$root"}
    assert content["format"] == "org.matrix.custom.html"
    assert content["m.mentions"] == {"user_ids": []}


def test_edit_content_without_thread_has_no_relation_in_new_content():
    content = edit_content("$orig", "new")
    assert content["body"] == "* new"
    assert content["m.new_content"] == {"msgtype": "m.text", "body": "new"}
    assert content["m.relates_to"] == {"rel_type": "m.replace", "event_id": "$orig"}


def test_reaction_content():
    assert reaction_content("$e", "👍") == {"m.relates_to": {"rel_type": "m.annotation", "event_id": "$e", "key": "👍"}}


@pytest.mark.asyncio
async def test_events_one_raw_event_is_read_once_for_every_bot_it_is_handed_to():
    from mindroom.matrix.inbound import deliver_raw

    seen: list[object] = []

    async def handler(event: object) -> None:
        seen.append(event)

    shared = {"event_id": "$1", "sender": "@ann:hs", "type": "m.room.message", "content": {"body": "hi"}}
    same_id_other_text = {**shared, "content": {"body": "changed"}}
    for bot in ("a", "b"):
        await deliver_raw(bot, None, "!room", shared, handler)
    await deliver_raw("c", None, "!room", same_id_other_text, handler)
    await deliver_raw("d", None, "!other", shared, handler)

    first, second, third, fourth = seen
    assert first is second  # one reading, handed to both
    assert third.content == {"body": "changed"}  # another object is read on its own, whatever its id
    assert fourth.room_id == "!other"
