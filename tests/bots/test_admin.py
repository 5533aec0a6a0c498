"""`matrix_admin`: a hook administers only the rooms of the entity it runs for, through the router's account."""

from __future__ import annotations

from typing import Any

import pytest

from mindroom.hooks import EVENT_MESSAGE_RECEIVED, hook
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
    invites = [r.path for r in bench.client("router").records if isinstance(r, ApiRequest)]
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
