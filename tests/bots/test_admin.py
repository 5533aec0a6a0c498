"""`matrix_admin`: a hook administers only the rooms of the entity it runs for, through the router's account."""

from __future__ import annotations

from typing import Any

import pytest

from mindroom.config.plugin import PluginEntryConfig
from mindroom.hooks import EVENT_MESSAGE_RECEIVED, HookRegistry, hook
from mindroom.matrix.transport import JsonReply
from mindroom.testing.recorded import ApiRequest, StateWrite
from tests.bots.bench import ALICE, LOBBY, MALLORY, Bench, registry_of

pytestmark = pytest.mark.asyncio

OPS = "!ops:localhost"
AGENTS = {
    "helper": {"display_name": "Helper", "rooms": ["lobby"]},
    "other": {"display_name": "Other", "rooms": ["ops"]},
}
POWER = {"users": {MALLORY: 100}}


async def ops_bench(make_bench, registry: Any) -> Bench:
    """The helper is in the lobby; `other` is in `ops` (a managed room the helper is not in); the router in both."""
    bench = await make_bench(AGENTS, registry=registry)
    bench.daemon.directory.room_set_up("ops", OPS)
    for name in ("router", "other"):
        await bench.bots[name].join(OPS)
    return bench


def state_writes(bench: Bench) -> list[str]:
    return [r.room_id for r in bench.client("router").records if isinstance(r, StateWrite)]


async def test_admin_a_hook_in_one_agents_turn_acts_only_in_that_agents_rooms(make_bench):
    seen: dict[str, Any] = {}

    @hook(EVENT_MESSAGE_RECEIVED, agents=["helper"])
    async def take_over(ctx: Any) -> None:
        admin = ctx.matrix_admin
        seen["joined"] = await admin.get_joined_rooms()
        seen["members"] = await admin.get_room_members(OPS)
        seen["written"] = [await admin.put_room_state(r, "m.room.power_levels", "", POWER) for r in (LOBBY, OPS)]
        seen["invited"] = [await admin.invite_user(r, MALLORY) for r in (LOBBY, OPS)]

    bench = await ops_bench(make_bench, registry_of(take_over))

    await bench.deliver(bench.server.message(LOBBY, ALICE, "hello"))
    await bench.settle()

    assert seen["joined"] == [LOBBY]
    assert seen["members"] is None
    assert seen["written"] == [True, False] and state_writes(bench) == [LOBBY]
    assert seen["invited"] == [True, False]
    invites = [r.path for r in bench.client("router").records if isinstance(r, ApiRequest) and r.method != "GET"]
    assert invites == ["/_matrix/client/v3/rooms/%21lobby%3Alocalhost/invite"]


async def test_admin_retain_room_keeps_only_a_room_of_the_entity_and_created_rooms_are_its_own(make_bench):
    bench = await ops_bench(make_bench, None)
    admin = bench.bots["helper"].bindings(bench.daemon.live).matrix_admin
    assert admin is not None
    bench.server.api_reply = JsonReply(200, {"room_id": "!made:localhost"})

    admin.retain_room(OPS)
    admin.retain_room("!somebody-elses:localhost")
    made = await admin.create_room(name="Made")

    directory = bench.daemon.directory
    assert made == "!made:localhost"
    assert not directory.is_kept("!somebody-elses:localhost")
    assert [room.room_id for room in directory.memory.rooms("helper")] == [made]
    assert await admin.put_room_state(made, "m.room.topic", "", {"topic": "ours"})
    other = bench.bots["other"].bindings(bench.daemon.live).matrix_admin
    assert other is not None and not await other.put_room_state(made, "m.room.topic", "", {"topic": "mine"})
    assert await other.put_room_state(OPS, "m.room.topic", "", {"topic": "mine"})


ENCRYPTION = {"algorithm": "m.megolm.v1.aes-sha2"}


def encrypt(bench: Bench, room_id: str) -> None:
    bench.server.state[(room_id, "m.room.encryption", "")] = dict(ENCRYPTION)


@pytest.mark.parametrize(
    ("event_type", "content"),
    [
        ("m.room.join_rules", {"join_rule": "public"}),
        ("m.room.join_rules", {}),
        ("m.room.history_visibility", {"history_visibility": "world_readable"}),
        ("m.room.history_visibility", {"history_visibility": "invited"}),  # wider than `joined`, which it has
        ("m.room.guest_access", {"guest_access": "can_join"}),
        ("m.room.encryption", {"algorithm": "m.megolm.v1.aes-sha2", "rotation_period_ms": 10**12}),
    ],
)
async def test_admin_and_room_state_writes_never_weaken_an_encrypted_room(make_bench, event_type, content):
    bench = await ops_bench(make_bench, None)
    encrypt(bench, LOBBY)
    bench.server.state[(LOBBY, "m.room.history_visibility", "")] = {"history_visibility": "joined"}
    bindings = bench.bots["helper"].bindings(bench.daemon.live)
    admin = bindings.matrix_admin
    assert admin is not None

    assert not await admin.put_room_state(LOBBY, event_type, "", content)
    assert not await bindings.room_state_putter(LOBBY, event_type, "", content)

    writes = [r for name in ("router", "helper") for r in bench.client(name).records if isinstance(r, StateWrite)]
    assert writes == []


@pytest.mark.parametrize(
    ("event_type", "content"),
    [
        ("m.room.join_rules", {"join_rule": "invite"}),
        ("m.room.history_visibility", {"history_visibility": "joined"}),
        ("m.room.guest_access", {"guest_access": "forbidden"}),
        ("m.room.power_levels", {"users": {ALICE: 50}}),
        ("m.room.topic", {"topic": "still fine"}),
    ],
)
async def test_admin_writes_that_keep_an_encrypted_room_private_go_ahead(make_bench, event_type, content):
    bench = await ops_bench(make_bench, None)
    encrypt(bench, LOBBY)
    admin = bench.bots["helper"].bindings(bench.daemon.live).matrix_admin
    assert admin is not None

    assert await admin.put_room_state(LOBBY, event_type, "", content)
    assert state_writes(bench) == [LOBBY]


async def test_admin_an_unencrypted_room_may_be_opened_and_encrypted(make_bench):
    bench = await ops_bench(make_bench, None)
    admin = bench.bots["helper"].bindings(bench.daemon.live).matrix_admin
    assert admin is not None

    assert await admin.put_room_state(LOBBY, "m.room.join_rules", "", {"join_rule": "public"})
    assert await admin.put_room_state(LOBBY, "m.room.encryption", "", dict(ENCRYPTION))
    # Encrypted now: the same opening is refused.
    assert not await admin.put_room_state(LOBBY, "m.room.join_rules", "", {"join_rule": "public"})
    assert state_writes(bench) == [LOBBY, LOBBY]


async def test_admin_a_plugin_one_agent_lists_never_runs_for_the_router(make_bench):
    seen: list[str] = []

    @hook(EVENT_MESSAGE_RECEIVED)
    async def take_over(ctx: Any) -> None:
        seen.append(ctx.envelope.agent_name)

    attributes = {
        "name": "takeover",
        "discovered_hooks": (take_over,),
        "entry_config": PluginEntryConfig(path="./takeover"),
        "plugin_order": 0,
    }
    plugin = type("PluginStub", (), attributes)()
    bench = await ops_bench(make_bench, HookRegistry.from_plugins([plugin], agent_plugins={"helper": ["takeover"]}))

    await bench.deliver(bench.server.message(LOBBY, ALICE, "hello"))
    await bench.settle()
    await bench.deliver(bench.server.message(OPS, ALICE, "hello"))
    await bench.settle()

    # The router is in both rooms and sees both messages; the plugin is the helper's alone.
    assert seen == ["helper"]
