"""Who owns a room, read from its state events: the creator, or the top power level."""

from __future__ import annotations

import pytest

from mindroom.matrix.rooms import room_owned_by

OURS = {"@mindroom_router:localhost", "@mindroom_helper:localhost"}


def create(sender: str, **content: object) -> dict:
    return {"type": "m.room.create", "sender": sender, "state_key": "", "content": content}


def levels(users: dict[str, int], default: int = 0) -> dict:
    return {"type": "m.room.power_levels", "state_key": "", "content": {"users": users, "users_default": default}}


@pytest.mark.parametrize(
    ("state", "owned"),
    [
        pytest.param([create("@mindroom_router:localhost")], True, id="created-by-the-router"),
        pytest.param([create("@mallory:localhost", creator="@mindroom_helper:localhost")], True, id="creator-field"),
        pytest.param(
            [create("@mallory:localhost", additional_creators=["@mindroom_router:localhost"])],
            True,
            id="additional-creator",
        ),
        pytest.param([create("@mallory:localhost"), levels({"@mallory:localhost": 100})], False, id="a-strangers-room"),
        pytest.param(
            [create("@mallory:localhost"), levels({"@mallory:localhost": 100, "@mindroom_router:localhost": 50})],
            False,
            id="we-are-only-moderator",
        ),
        pytest.param(
            [create("@mallory:localhost"), levels({"@mallory:localhost": 100, "@mindroom_router:localhost": 100})],
            True,
            id="we-share-the-top-level",
        ),
        pytest.param(
            [
                create("@mallory:localhost", room_version="11"),
                levels({"@mallory:localhost": 100, "@mindroom_router:localhost": 100}),
            ],
            True,
            id="v11-we-share-the-top-level",
        ),
        pytest.param(
            [
                create("@mallory:localhost", room_version="12"),
                levels({"@mindroom_router:localhost": 100}),
            ],
            False,
            id="v12-a-strangers-room-whatever-power-we-got",
        ),
        pytest.param(
            [create("@mallory:localhost", room_version="12", additional_creators=["@mindroom_helper:localhost"])],
            True,
            id="v12-we-are-an-additional-creator",
        ),
        pytest.param([create("@mindroom_router:localhost", room_version="12"), levels({})], True, id="v12-ours"),
        pytest.param([create("@mallory:localhost"), levels({}, default=0)], False, id="nobody-has-power"),
        pytest.param([create("@mallory:localhost")], False, id="no-power-levels"),
        pytest.param(["junk", {"type": "m.room.create"}], False, id="malformed-events"),
    ],
)
def test_room_owned_by_creator_or_top_power_level(state, owned):
    assert room_owned_by(state, OURS) is owned
