"""Per-room hook policy: who may set it, what it turns off, what it cannot touch, and what it costs a room without."""

import itertools

import pytest

from mindroom.config.plugin import PluginEntryConfig
from mindroom.hooks import EVENT_MESSAGE_RECEIVED, HookRegistry, MessageReceivedContext, hook
from mindroom.hooks.execution import emit
from mindroom.hooks.room_policy import POLICY_EVENT_TYPE, RoomHookPolicies
from mindroom.matrix.events import event_from_raw
from tests.hooks.support import stub_plugin

ROOM, OTHER = "!lab:example.org", "!bench:example.org"
ADMIN, MOD, BOB = "@admin:example.org", "@mod:example.org", "@bob:example.org"
LEVELS = {"users": {ADMIN: 100, MOD: 99, BOB: 50}, "users_default": 0, "state_default": 50}
_ids = itertools.count()


def make_hook(name, calls=None):
    @hook(EVENT_MESSAGE_RECEIVED, name=name)
    async def callback(ctx):
        if calls is not None:
            calls.append(name)

    return callback


def registry(calls=None, *, fixed=(), level=None, previous=None):
    plugins = [
        stub_plugin("audit", [make_hook("log", calls), make_hook("keep", calls)]),
        stub_plugin("tagger", [make_hook("tag", calls)]),
    ]
    for plugin in plugins:
        if plugin.name in fixed:
            plugin.entry_config = PluginEntryConfig(path=f"./plugins/{plugin.name}", room_policy="fixed")
    return HookRegistry.from_plugins(plugins, previous=previous, room_policy_power_level=level)


def state(kind, content, sender=ADMIN, state_key="", room_id=ROOM):
    raw = {"type": kind, "content": content, "sender": sender, "state_key": state_key, "event_id": f"$e{next(_ids)}"}
    return raw, event_from_raw(room_id, raw)


def member(user_id, membership="join"):
    return state("m.room.member", {"membership": membership}, sender=user_id, state_key=user_id)


def load(policies, policy_sender, content, *, levels=LEVELS, members=(ADMIN, MOD, BOB), room_id=ROOM):
    events = [
        state("m.room.create", {"room_version": "10"}, sender=ADMIN)[0],
        state("m.room.power_levels", levels)[0],
        *(member(user)[0] for user in members),
        state(POLICY_EVENT_TYPE, content, sender=policy_sender)[0],
    ]
    policies.load(room_id, events)


def running(reg, room_id=ROOM):
    return [f"{h.plugin_name}.{h.hook_name}" for h in reg.matching(EVENT_MESSAGE_RECEIVED, "helper", room_id)]


ALL = ["audit.log", "audit.keep", "tagger.tag"]


def test_room_policy_from_an_admin_turns_a_plugin_off_in_its_room_only():
    reg = registry()
    load(reg.room_policies, ADMIN, {"plugins": {"audit": False}})

    assert running(reg) == ["tagger.tag"]
    assert running(reg, OTHER) == ALL


def test_room_policy_sender_one_level_below_the_required_power_does_not_count():
    reg = registry()
    load(reg.room_policies, MOD, {"plugins": {"audit": False}})
    load(reg.room_policies, ADMIN, {"plugins": {"audit": False}}, room_id=OTHER)

    assert running(reg) == ALL
    assert ROOM not in reg.room_policies.rooms
    assert running(reg, OTHER) == ["tagger.tag"]  # the same policy from a sender at exactly 100 counts


def test_room_policy_power_level_is_the_operators_setting():
    reg = registry(level=50)
    load(reg.room_policies, BOB, {"plugins": {"audit": False}})
    assert running(reg) == ["tagger.tag"]

    # The operator raises the bar on reload: Bob's policy no longer counts.
    raised = registry(level=51, previous=reg)
    assert running(raised) == ALL


def test_room_policy_from_a_sender_who_is_not_joined_does_not_count():
    reg = registry()
    load(reg.room_policies, ADMIN, {"plugins": {"audit": False}}, members=(MOD, BOB))
    load(reg.room_policies, ADMIN, {"plugins": {"audit": False}}, room_id=OTHER)

    assert running(reg) == ALL
    assert running(reg, OTHER) == ["tagger.tag"]


def test_room_policy_lapses_when_its_sender_leaves_or_is_demoted():
    reg = registry()
    policies = reg.room_policies
    load(policies, ADMIN, {"plugins": {"audit": False}})
    assert running(reg) == ["tagger.tag"]

    policies.note(member(ADMIN, "leave")[1])
    assert running(reg) == ALL
    policies.note(member(ADMIN)[1])
    assert running(reg) == ["tagger.tag"]
    policies.note(state("m.room.power_levels", {**LEVELS, "users": {ADMIN: 99}})[1])
    assert running(reg) == ALL


def test_room_policy_of_a_fixed_plugin_is_ignored():
    reg = registry(fixed=("audit",))
    load(reg.room_policies, ADMIN, {"plugins": {"audit": False, "tagger": False}})

    assert running(reg) == ["audit.log", "audit.keep"]
    assert "- plugin audit: off (fixed by config: ignored)" in reg.room_policies.describe(ROOM, reg.fixed_plugins)


def test_room_policy_a_hook_of_its_own_wins_over_its_plugin():
    reg = registry()
    load(
        reg.room_policies,
        ADMIN,
        {"plugins": {"audit": False}, "hooks": {"audit": {"keep": True}, "tagger": {"tag": False}}},
    )

    assert running(reg) == ["audit.keep"]


def test_room_policy_arriving_as_an_event_takes_effect_and_asks_for_an_unread_room():
    reg = registry()
    policies = reg.room_policies
    load(policies, ADMIN, {})
    assert ROOM not in policies.rooms  # an empty policy changes nothing, and costs nothing

    assert policies.note(state(POLICY_EVENT_TYPE, {"plugins": {"tagger": False}})[1]) is False
    assert running(reg) == ["audit.log", "audit.keep"]
    # A policy in a room never read: the caller is told to read the room (power levels are not known yet).
    assert policies.note(state(POLICY_EVENT_TYPE, {"plugins": {"tagger": False}}, room_id=OTHER)[1]) is True
    assert running(reg, OTHER) == ALL


def test_room_policy_under_another_state_key_or_of_a_near_miss_type_is_ignored():
    reg = registry()
    policies = reg.room_policies
    load(policies, ADMIN, {})
    policies.note(state(POLICY_EVENT_TYPE, {"plugins": {"audit": False}}, state_key="audit")[1])
    policies.note(state(POLICY_EVENT_TYPE + ".v2", {"plugins": {"audit": False}})[1])
    policies.note(state("com.mindroom.hooks", {"plugins": {"audit": False}})[1])

    assert running(reg) == ALL


def test_room_policy_without_power_levels_counts_for_the_room_creator_alone():
    reg = registry()
    events = [
        state("m.room.create", {"creator": ADMIN})[0],
        member(ADMIN)[0],
        member(BOB)[0],
        state(POLICY_EVENT_TYPE, {"plugins": {"audit": False}}, sender=BOB)[0],
    ]
    reg.room_policies.load(ROOM, events)
    assert running(reg) == ALL

    events[-1] = state(POLICY_EVENT_TYPE, {"plugins": {"audit": False}}, sender=ADMIN)[0]
    reg.room_policies.load(ROOM, events)
    assert running(reg) == ["tagger.tag"]


def test_room_policy_survives_a_reload_and_a_room_without_one_gets_the_registrys_own_tuple():
    reg = registry()
    load(reg.room_policies, ADMIN, {"plugins": {"audit": False}})
    reloaded = registry(previous=reg)

    assert running(reloaded) == ["tagger.tag"]
    assert reloaded.matching(EVENT_MESSAGE_RECEIVED, "helper", OTHER) is reloaded.hooks_for(EVENT_MESSAGE_RECEIVED)
    assert RoomHookPolicies().rooms == {}


@pytest.mark.asyncio
async def test_room_policy_is_honoured_at_dispatch(hook_context_factory):
    calls = []
    reg = registry(calls)
    load(reg.room_policies, ADMIN, {"plugins": {"audit": False}})

    await emit(reg, EVENT_MESSAGE_RECEIVED, hook_context_factory(MessageReceivedContext, agent_name="x", room_id=ROOM))
    assert calls == ["tag"]
    await emit(reg, EVENT_MESSAGE_RECEIVED, hook_context_factory(MessageReceivedContext, agent_name="x", room_id=OTHER))
    assert calls == ["tag", "log", "keep", "tag"]


def test_room_policy_noted_while_the_room_is_being_read_wins_over_the_older_state_read():
    reg = registry()
    policies = reg.room_policies
    assert policies.claim(ROOM) is True
    assert policies.claim(ROOM) is False  # a second bot does not read it again

    policies.note(state(POLICY_EVENT_TYPE, {"plugins": {"audit": False}})[1])
    load(policies, BOB, {})  # the read's answer was taken before the event

    assert running(reg) == ["tagger.tag"]


def test_room_policy_a_room_whose_read_failed_is_read_again_at_its_next_policy():
    policies = registry().room_policies
    assert policies.note(state(POLICY_EVENT_TYPE, {"plugins": {"audit": False}}, state_key="x")[1]) is False
    assert not policies.known(ROOM)  # a near miss does not count the room as read

    assert policies.note(state(POLICY_EVENT_TYPE, {"plugins": {"audit": False}})[1]) is True
    policies.forget(ROOM)
    assert policies.note(state(POLICY_EVENT_TYPE, {"plugins": {"audit": False}})[1]) is True
