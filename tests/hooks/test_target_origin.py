"""`MessageTarget` (validation and helpers) and `TurnOrigin` (intent rule and properties) of the 2026 API."""

import dataclasses
from types import SimpleNamespace

import pytest

from mindroom.dispatch_source import ACTIVE_THREAD_FOLLOW_UP_SOURCE_KIND, TRUSTED_INTERNAL_RELAY_SOURCE_KIND
from mindroom.hooks import MessageTarget, SenderKind, TurnIntent, TurnOrigin, TurnTrust
from mindroom.hooks.origin import select_intent

# -- MessageTarget ----------------------------------------------------------------------------------------


def test_target_session_id_is_the_room_at_room_level_else_room_and_thread():
    assert MessageTarget("!r:l").session_id == "!r:l"
    assert MessageTarget("!r:l", "$t", "$t").session_id == "!r:l:$t"
    assert MessageTarget("!r:l", None, "$t", session_id="custom").session_id == "custom"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"room_id": ""},
        {"room_id": None},
        {"room_id": "!r", "source_thread_id": ""},
        {"room_id": "!r", "resolved_thread_id": ""},
        {"room_id": "!r", "reply_to_event_id": ""},
        {"room_id": "!r", "reply_to_event_id": 5},
        {"room_id": "!r", "session_id": 5},
    ],
)
def test_target_validation_rejects_empty_or_wrong_ids(kwargs):
    with pytest.raises(ValueError, match="MessageTarget"):
        MessageTarget(**kwargs)


def test_target_is_frozen_and_room_mode_follows_the_resolved_thread():
    target = MessageTarget("!r", None, None)

    assert target.is_room_mode is True
    assert MessageTarget("!r", None, "$t").is_room_mode is False
    with pytest.raises(dataclasses.FrozenInstanceError):
        target.room_id = "!other"  # type: ignore[misc]


def test_target_with_thread_root_recomputes_the_session():
    target = MessageTarget("!r", "$src", "$src", "$reply")

    moved = target.with_thread_root("$new")

    assert moved == MessageTarget("!r", "$src", "$new", "$reply", "!r:$new")
    assert target.with_thread_root("$src") is target
    assert target.with_thread_root(None).session_id == "!r"


@pytest.mark.parametrize(
    ("args", "resolved"),
    [
        (("!r", "$thread", "$reply"), "$thread"),
        (("!r", None, "$reply"), "$reply"),
        (("!r", None, "$reply", "$root"), "$root"),
        (("!r", "$thread", "$reply", "$root", True), None),
        (("!r", None, None), None),
    ],
)
def test_target_resolve_picks_room_mode_then_thread_then_new_root_then_reply(args, resolved):
    target = MessageTarget.resolve(*args)

    assert target.resolved_thread_id == resolved
    assert target.source_thread_id == args[1]
    assert target.reply_to_event_id == args[2]


def test_target_for_scheduled_task():
    in_thread = MessageTarget.for_scheduled_task(SimpleNamespace(room_id="!r", thread_id="$t", new_thread=False))
    new_thread = MessageTarget.for_scheduled_task(SimpleNamespace(room_id="!r", thread_id="$t", new_thread=True))

    assert in_thread.resolved_thread_id == "$t"
    assert new_thread.is_room_mode
    with pytest.raises(ValueError, match="room_id"):
        MessageTarget.for_scheduled_task(SimpleNamespace(room_id=None, thread_id=None))


def test_target_metadata_round_trip_and_older_key():
    target = MessageTarget("!r", "$src", "$root", "$reply", "sess")

    assert MessageTarget.from_metadata(target.to_metadata()) == target
    assert MessageTarget.from_metadata({"room_id": "!r", "thread_id": "$t", "resolved_thread_id": "$t"}) == (
        MessageTarget("!r", "$t", "$t")
    )
    with pytest.raises(ValueError, match="mapping"):
        MessageTarget.from_metadata(["!r"])
    with pytest.raises(ValueError, match="room_id"):
        MessageTarget.from_metadata({})


def test_target_log_context_and_lifecycle_key():
    target = MessageTarget("!r", None, "$t")

    assert target.log_context == {"room_id": "!r", "resolved_thread_id": "$t", "session_id": "!r:$t"}
    assert target.lifecycle_key == ("!r", "$t")


# -- TurnOrigin -------------------------------------------------------------------------------------------


def test_origin_enums_are_strenums_with_the_documented_values():
    assert {kind.value for kind in SenderKind} == {"user", "managed_entity"}
    assert {trust.value for trust in TurnTrust} == {"external", "trusted_internal", "trusted_user_relay"}
    assert {intent.value for intent in TurnIntent} == {
        "user_message",
        "managed_message",
        "router_handoff",
        "router_notice",
        "scheduled_fire",
        "external_trigger",
        "hook_message",
        "hook_dispatch",
        "trusted_internal_relay",
        "job_follow_up",
    }
    assert TurnIntent.HOOK_DISPATCH == "hook_dispatch"


INTENT_CASES = [
    # (source_kind, sender_entity_name, trusted_user_relay, expected)
    ("message", "router", True, TurnIntent.ROUTER_HANDOFF),
    ("hook", "code", True, TurnIntent.TRUSTED_INTERNAL_RELAY),  # a trusted relay wins over the source kind
    ("scheduled", "code", False, TurnIntent.SCHEDULED_FIRE),
    ("silent_scheduled", "code", False, TurnIntent.SCHEDULED_FIRE),
    ("external_trigger", None, False, TurnIntent.EXTERNAL_TRIGGER),
    ("hook_dispatch", "router", False, TurnIntent.HOOK_DISPATCH),
    ("hook", "router", False, TurnIntent.HOOK_MESSAGE),
    ("message", "router", False, TurnIntent.ROUTER_NOTICE),
    (TRUSTED_INTERNAL_RELAY_SOURCE_KIND, "code", False, TurnIntent.TRUSTED_INTERNAL_RELAY),
    ("message", "code", False, TurnIntent.MANAGED_MESSAGE),
    ("voice", None, False, TurnIntent.USER_MESSAGE),
    ("message", None, True, TurnIntent.USER_MESSAGE),  # a person cannot be a trusted relay of someone else here
]


@pytest.mark.parametrize(("source_kind", "sender", "relay", "expected"), INTENT_CASES)
def test_origin_intent_follows_the_documented_rule(source_kind, sender, relay, expected):
    made = TurnOrigin.classify(
        transport_sender_id="@x:l" if sender is None else f"@mindroom_{sender}:l",
        requester_id="@alice:l" if sender is not None else "@x:l",
        source_kind=source_kind,
        sender_entity_name=sender,
        trusted_user_relay=relay,
    )

    assert made.intent is expected


def test_origin_select_intent_is_usable_on_its_own():
    assert (
        select_intent(source_kind="message", sender_kind=SenderKind.USER, trust=TurnTrust.EXTERNAL)
        is TurnIntent.USER_MESSAGE
    )


def test_origin_properties():
    person = TurnOrigin.classify(transport_sender_id="@a:l", requester_id="@a:l", source_kind="message")
    handoff = TurnOrigin.classify(
        transport_sender_id="@r:l",
        requester_id="@a:l",
        source_kind="message",
        sender_entity_name="router",
        trusted_user_relay=True,
    )
    bot_chat = TurnOrigin.classify(
        transport_sender_id="@c:l",
        requester_id="@c:l",
        source_kind="message",
        sender_entity_name="code",
        requester_entity_name="code",
    )
    dispatch = TurnOrigin.classify(
        transport_sender_id="@c:l",
        requester_id="@c:l",
        source_kind="hook_dispatch",
        sender_entity_name="code",
        requester_entity_name="code",
    )

    assert (person.may_dispatch_without_mention, handoff.may_dispatch_without_mention) == (False, True)
    assert dispatch.may_dispatch_without_mention is True
    assert person.may_answer_interactive_prompt and handoff.may_answer_interactive_prompt
    assert not bot_chat.may_answer_interactive_prompt
    assert handoff.acting_sender_id == "@a:l"
    assert bot_chat.acting_sender_id == "@c:l"
    assert bot_chat.blocks_unmentioned_managed_sender is True
    assert dispatch.blocks_unmentioned_managed_sender is False
    assert person.blocks_unmentioned_managed_sender is False
    assert person.may_be_superseded_by_newer_requester_turn is True
    assert bot_chat.may_be_superseded_by_newer_requester_turn is False


def test_origin_dispatch_source_constants():
    assert ACTIVE_THREAD_FOLLOW_UP_SOURCE_KIND == "active_thread_follow_up"
    assert TRUSTED_INTERNAL_RELAY_SOURCE_KIND == "trusted_internal_relay"
