"""`MessageEnvelope` in both generations' shapes: every name of both reads the same message."""

import dataclasses
import timeit
from dataclasses import MISSING

import pytest

from mindroom.hooks import MessageEnvelope, MessageTarget, SenderKind, TurnIntent, TurnOrigin, TurnTrust
from mindroom.message_target import MessageTarget as PublishedTarget
from mindroom.turn_origin import TurnOrigin as PublishedOrigin

OLDER = {
    "source_event_id": "$event",
    "room_id": "!room:localhost",
    "thread_id": "$root",
    "resolved_thread_id": "$root",
    "requester_id": "@alice:localhost",
    "sender_id": "@alice:localhost",
    "body": "hello",
    "attachment_ids": ("a1",),
    "mentioned_agents": ("code",),
    "agent_name": "code",
    "source_kind": "message",
}


def older(**changes):
    return MessageEnvelope(**{**OLDER, **changes})


def origin(**changes):
    values = {
        "transport_sender_id": "@mindroom_router:localhost",
        "requester_id": "@alice:localhost",
        "source_kind": "message",
        "sender_entity_name": "router",
        "trusted_user_relay": True,
    }
    return TurnOrigin.classify(**{**values, **changes})


TARGET = MessageTarget("!room:localhost", "$root", "$root", "$event")


def test_envelope_older_keyword_shape_keeps_every_flat_name():
    env = older(hook_source="p:h", message_received_depth=1)

    assert (env.room_id, env.thread_id, env.resolved_thread_id) == ("!room:localhost", "$root", "$root")
    assert (env.requester_id, env.sender_id, env.source_kind) == ("@alice:localhost", "@alice:localhost", "message")
    assert (env.hook_source, env.message_received_depth, env.dispatch_policy_source_kind) == ("p:h", 1, None)


def test_envelope_older_positional_shape_with_spec_defaults():
    env = MessageEnvelope(*OLDER.values())

    assert env == older()
    assert env.hook_source is None
    assert env.message_received_depth == 0


def test_envelope_older_shape_derives_target_and_origin():
    env = older(thread_id=None, resolved_thread_id="$event")

    assert env.target == MessageTarget("!room:localhost", None, "$event", "$event", "!room:localhost:$event")
    assert env.target.thread_id is None
    assert env.origin.requester_id == env.origin.transport_sender_id == "@alice:localhost"
    assert env.origin.intent is TurnIntent.USER_MESSAGE
    assert env.origin.trust is TurnTrust.EXTERNAL


def test_envelope_older_shape_of_a_relayed_hook_message_is_managed():
    env = older(sender_id="@mindroom_router:localhost", source_kind="hook_dispatch")

    assert env.origin.sender_kind is SenderKind.MANAGED_ENTITY
    assert env.origin.requester_kind is SenderKind.USER
    assert env.origin.intent is TurnIntent.HOOK_DISPATCH
    assert env.origin.may_dispatch_without_mention is True


def test_envelope_newer_keyword_shape_sets_the_flat_names():
    made = origin()
    env = MessageEnvelope(
        source_event_id="$event",
        target=TARGET,
        body="hello",
        attachment_ids=(),
        mentioned_agents=("code",),
        agent_name="code",
        origin=made,
    )

    assert env.target is TARGET
    assert env.origin is made
    assert (env.room_id, env.thread_id, env.resolved_thread_id) == ("!room:localhost", "$root", "$root")
    assert env.requester_id == "@alice:localhost"
    assert env.sender_id == "@mindroom_router:localhost"
    assert env.source_kind == "message"
    assert env.origin.intent is TurnIntent.ROUTER_HANDOFF


def test_envelope_newer_positional_shape():
    made = origin()
    env = MessageEnvelope(
        "$event", TARGET, "hello", (), ("code",), "code", "p:h", 2, "active_thread_follow_up", origin=made
    )

    assert (env.body, env.agent_name, env.hook_source, env.message_received_depth) == ("hello", "code", "p:h", 2)
    assert env.dispatch_policy_source_kind == "active_thread_follow_up"
    assert env.source_kind == "message"  # the follow-up keeps the original modality


def test_envelope_newer_shape_requires_origin_keyword():
    with pytest.raises(TypeError, match="origin"):
        MessageEnvelope("$event", TARGET, "hello", (), (), "code")
    with pytest.raises(TypeError, match="origin"):
        MessageEnvelope("$event", TARGET, "hello", (), (), "code", origin=None)


def test_envelope_rejects_a_wrong_target_or_origin_type():
    with pytest.raises(TypeError, match="MessageTarget"):
        MessageEnvelope("$e", target="!room", body="b", attachment_ids=(), mentioned_agents=(), agent_name="a")
    with pytest.raises(TypeError, match="TurnOrigin"):
        MessageEnvelope("$e", TARGET, "b", (), (), "a", origin="@alice")


def test_envelope_older_shape_missing_argument_is_a_type_error():
    values = dict(OLDER)
    del values["source_kind"]

    with pytest.raises(TypeError, match="source_kind"):
        MessageEnvelope(**values)


def test_envelope_is_frozen_and_hashable():
    env = older()

    with pytest.raises(dataclasses.FrozenInstanceError):
        env.body = "changed"  # type: ignore[misc]
    # A derived name is read-only too (Python 3.11's slotted frozen dataclasses report it as a TypeError).
    with pytest.raises((dataclasses.FrozenInstanceError, AttributeError, TypeError)):
        env.target = TARGET  # type: ignore[misc]
    assert hash(env) == hash(older())
    assert {env, older()} == {env}


def test_envelope_equality_sees_what_only_target_and_origin_hold():
    plain = older()
    with_reply = MessageEnvelope(
        source_event_id="$event",
        target=MessageTarget("!room:localhost", "$root", "$root", "$other-reply"),
        body="hello",
        attachment_ids=("a1",),
        mentioned_agents=("code",),
        agent_name="code",
        origin=TurnOrigin.from_envelope_fields("@alice:localhost", "@alice:localhost", "message"),
    )

    assert plain.room_id == with_reply.room_id
    assert plain != with_reply


def test_envelope_replace_keeps_target_and_origin_when_unrelated_fields_change():
    made = origin()
    env = MessageEnvelope("$event", TARGET, "hello", (), (), "code", origin=made)

    changed = dataclasses.replace(env, body="edited")

    assert changed.body == "edited"
    assert changed.target is TARGET
    assert changed.origin is made


def test_envelope_replace_of_a_flat_field_rederives_what_it_contradicts():
    env = MessageEnvelope("$event", TARGET, "hello", (), (), "code", origin=origin())

    moved = dataclasses.replace(env, room_id="!elsewhere:localhost", requester_id="@bob:localhost")

    assert moved.target.room_id == "!elsewhere:localhost"
    assert moved.target.session_id == "!elsewhere:localhost:$root"
    assert moved.origin.requester_id == "@bob:localhost"


def test_envelope_replace_with_a_new_origin_or_target_wins_over_flat_fields():
    env = older()
    scheduled = TurnOrigin.classify(
        transport_sender_id="@mindroom_code:localhost", requester_id="@alice:localhost", source_kind="silent_scheduled"
    )
    moved_target = MessageTarget("!other:localhost", None, "$t")

    changed = dataclasses.replace(env, origin=scheduled)
    retargeted = dataclasses.replace(env, target=moved_target)

    assert changed.source_kind == "silent_scheduled"
    assert changed.sender_id == "@mindroom_code:localhost"
    assert changed.origin.intent is TurnIntent.SCHEDULED_FIRE
    assert retargeted.room_id == "!other:localhost"
    assert retargeted.resolved_thread_id == "$t"
    assert retargeted.body == "hello"


def test_envelope_unknown_keyword_in_newer_shape_is_a_type_error():
    with pytest.raises(TypeError, match="colour"):
        MessageEnvelope("$e", TARGET, "b", (), (), "a", origin=origin(), colour="red")


def test_envelope_published_import_paths_are_the_same_classes():
    assert PublishedTarget is MessageTarget
    assert PublishedOrigin is TurnOrigin


def test_envelope_older_shape_stays_cheap_to_build():
    # Built for every message of every entity: the two shapes must cost about what a dataclass does.
    @dataclasses.dataclass(frozen=True, slots=True)
    class Plain:
        source_event_id: str
        room_id: str
        thread_id: str | None
        resolved_thread_id: str | None
        requester_id: str
        sender_id: str
        body: str
        attachment_ids: tuple[str, ...]
        mentioned_agents: tuple[str, ...]
        agent_name: str
        source_kind: str

    # Many short interleaved rounds, best of each: a load spike on a shared machine hits some rounds, and a
    # short round (well under a scheduler time slice) often runs whole; the minimum is the undisturbed cost.
    plain, ours = [], []
    for _ in range(80):
        plain.append(timeit.timeit(lambda: Plain(**OLDER), number=200))
        ours.append(timeit.timeit(lambda: MessageEnvelope(**OLDER), number=200))

    assert min(ours) < min(plain) * 4


def test_envelope_fields_are_the_2026_shape_only():
    names = [f.name for f in dataclasses.fields(MessageEnvelope)]

    assert names == [
        "source_event_id",
        "target",
        "body",
        "attachment_ids",
        "mentioned_agents",
        "agent_name",
        "hook_source",
        "message_received_depth",
        "dispatch_policy_source_kind",
        "origin",
    ]
    # The flat names are read through target and origin, never stored beside them.
    assert not {"room_id", "thread_id", "resolved_thread_id", "requester_id", "sender_id", "source_kind"} & set(
        MessageEnvelope.__slots__
    )


OPTIONAL = [f.name for f in dataclasses.fields(MessageEnvelope) if f.default is not MISSING and not f.kw_only]


@pytest.mark.parametrize("name", OPTIONAL)
def test_envelope_older_shape_hands_every_optional_field_through(name):
    # So a field added to the envelope (with a default) needs no change to the older shape's adapter.
    value = object()

    env = older(**{name: value})

    assert getattr(env, name) is value
    assert env.body == "hello"


def test_envelope_older_shape_keeps_ids_no_target_could_hold():
    # The hooks spec never checked its ids: a context built without a message has an empty room.
    env = older(room_id="", thread_id="")

    assert (env.room_id, env.thread_id, env.target.room_id) == ("", "", "")
    assert env == older(room_id="", thread_id="")
    assert hash(env) == hash(older(room_id="", thread_id=""))


def test_envelope_older_shape_repeated_or_surplus_arguments_are_type_errors():
    with pytest.raises(TypeError, match="multiple values for argument 'room_id'"):
        MessageEnvelope(*OLDER.values(), room_id="!x:localhost")
    with pytest.raises(TypeError, match="at most 14 positional"):
        MessageEnvelope(*OLDER.values(), None, 0, None, "surplus")
