"""Authorization: who may reach agents in a room, and whose invites the bots accept."""

from typing import Any

import pytest

from mindroom.bots.authorization import is_authorized, may_invite, room_keys_for
from mindroom.config.main import Config

ALICE = "@alice:localhost"
BOB = "@bob:localhost"
OLGA = "@olga:localhost"
TESS = "@tess:localhost"
STRANGER = "@mallory:localhost"
HELPER = "@mindroom_helper:localhost"
FOREIGN_BOT = "@otherdaemon_helper:localhost"
BOT_IDS = (HELPER, "@mindroom_router:localhost")

LOBBY = "!lobby:localhost"
LOBBY_KEYS = {LOBBY, "lobby"}
OPS = "!ops:localhost"
TEAM = "!team:localhost"
TEAM_KEYS = room_keys_for(TEAM, ["#team:localhost"], "localhost")
ELSEWHERE = {"!elsewhere:localhost"}


def make_config(default_room_access: bool = False, **authorization: Any) -> Config:
    return Config.model_validate(
        {
            "authorization": {
                "global_users": [ALICE],
                "room_permissions": {"lobby": [BOB], OPS: [OLGA], "#team:localhost": [TESS]},
                "default_room_access": default_room_access,
                **authorization,
            }
        }
    )


# -- room_keys_for ------------------------------------------------------------------------------------

ROOM_KEYS = [
    pytest.param([], "localhost", {LOBBY}, id="no-aliases"),
    pytest.param(["#lobby:localhost"], "localhost", {LOBBY, "#lobby:localhost", "lobby"}, id="local-alias"),
    pytest.param(["#lobby:example.org"], "localhost", {LOBBY, "#lobby:example.org"}, id="remote-alias"),
    pytest.param(["#lobby:notlocalhost"], "localhost", {LOBBY, "#lobby:notlocalhost"}, id="server-name-suffix"),
    pytest.param(["#lobby:sub.localhost"], "localhost", {LOBBY, "#lobby:sub.localhost"}, id="subdomain-alias"),
    pytest.param(["#lobby:example.org"], "example.org", {LOBBY, "#lobby:example.org", "lobby"}, id="dotted-server"),
    pytest.param(
        ["#lobby:localhost", "#hall:localhost", "#hall:example.org"],
        "localhost",
        {LOBBY, "#lobby:localhost", "lobby", "#hall:localhost", "hall", "#hall:example.org"},
        id="several-aliases",
    ),
    pytest.param(["lobby:localhost"], "localhost", {LOBBY, "lobby:localhost"}, id="not-an-alias"),
    pytest.param(["#lobby:localhost:8448"], "localhost:8448", {LOBBY, "#lobby:localhost:8448", "lobby"}, id="port"),
]


@pytest.mark.parametrize(("aliases", "server_name", "expected"), ROOM_KEYS)
def test_room_keys_for(aliases: list[str], server_name: str, expected: set[str]) -> None:
    assert room_keys_for(LOBBY, aliases, server_name) == expected


def test_room_keys_for_accepts_any_iterable() -> None:
    aliases = (alias for alias in ["#lobby:localhost"])
    assert room_keys_for(LOBBY, aliases, "localhost") == {LOBBY, "#lobby:localhost", "lobby"}


# -- is_authorized ------------------------------------------------------------------------------------

AUTHORIZED = [
    pytest.param(ALICE, LOBBY_KEYS, True, id="global-user-managed-room"),
    pytest.param(ALICE, ELSEWHERE, True, id="global-user-any-room"),
    pytest.param(ALICE, set(), True, id="global-user-no-room-keys"),
    pytest.param(BOB, LOBBY_KEYS, True, id="room-user-by-config-key"),
    pytest.param(BOB, {LOBBY}, False, id="room-user-id-only-without-config-key"),
    pytest.param(BOB, {OPS}, False, id="room-user-other-room"),
    pytest.param(BOB, set(), False, id="room-user-no-room-keys"),
    pytest.param(OLGA, {OPS}, True, id="room-user-by-room-id"),
    pytest.param(OLGA, LOBBY_KEYS, False, id="room-id-user-other-room"),
    pytest.param(TESS, TEAM_KEYS, True, id="room-user-by-alias"),
    pytest.param(TESS, {TEAM, "team"}, False, id="alias-user-without-alias-key"),
    pytest.param(STRANGER, LOBBY_KEYS, False, id="stranger"),
    pytest.param(STRANGER, ELSEWHERE, False, id="stranger-unmanaged-room"),
    pytest.param(HELPER, LOBBY_KEYS, True, id="own-bot"),
    pytest.param(HELPER, ELSEWHERE, True, id="own-bot-any-room"),
    pytest.param(FOREIGN_BOT, LOBBY_KEYS, False, id="bot-of-another-daemon"),
    pytest.param("", LOBBY_KEYS, False, id="empty-user-id"),
    pytest.param("@ALICE:localhost", LOBBY_KEYS, False, id="user-ids-are-case-sensitive"),
]


@pytest.mark.parametrize(("user_id", "room_keys", "expected"), AUTHORIZED)
def test_is_authorized(user_id: str, room_keys: set[str], expected: bool) -> None:
    assert is_authorized(make_config(), user_id, room_keys, bot_user_ids=BOT_IDS) is expected


@pytest.mark.parametrize(
    ("user_id", "room_keys"),
    [
        pytest.param(STRANGER, LOBBY_KEYS, id="stranger-managed-room"),
        pytest.param(BOB, {OPS}, id="room-user-other-room"),
        pytest.param(FOREIGN_BOT, LOBBY_KEYS, id="bot-of-another-daemon"),
    ],
)
def test_is_authorized_default_room_access(user_id: str, room_keys: set[str]) -> None:
    assert is_authorized(make_config(default_room_access=False), user_id, room_keys) is False
    assert is_authorized(make_config(default_room_access=True), user_id, room_keys) is True


def test_is_authorized_bots_need_to_be_named() -> None:
    assert is_authorized(make_config(), HELPER, LOBBY_KEYS) is False
    assert is_authorized(make_config(), HELPER, LOBBY_KEYS, bot_user_ids=iter(BOT_IDS)) is True


def test_is_authorized_with_empty_config() -> None:
    config = Config()
    assert is_authorized(config, ALICE, LOBBY_KEYS) is False
    assert is_authorized(config, HELPER, LOBBY_KEYS, bot_user_ids=BOT_IDS) is True


def test_is_authorized_user_listed_in_several_rooms() -> None:
    config = make_config(room_permissions={"lobby": [BOB], OPS: [BOB]})
    assert is_authorized(config, BOB, LOBBY_KEYS) is True
    assert is_authorized(config, BOB, {OPS}) is True
    assert is_authorized(config, BOB, ELSEWHERE) is False


# -- may_invite ---------------------------------------------------------------------------------------

INVITES = [
    pytest.param(HELPER, ELSEWHERE, True, id="own-bot"),
    pytest.param("@mindroom_router:localhost", LOBBY_KEYS, True, id="router"),
    pytest.param(FOREIGN_BOT, ELSEWHERE, False, id="bot-of-another-daemon"),
    pytest.param(ALICE, ELSEWHERE, True, id="global-user-any-room"),
    pytest.param(ALICE, set(), True, id="global-user-no-room-keys"),
    pytest.param(BOB, LOBBY_KEYS, True, id="room-user-to-that-room"),
    pytest.param(BOB, {OPS}, False, id="room-user-to-another-room"),
    pytest.param(BOB, ELSEWHERE, False, id="room-user-to-unmanaged-room"),
    pytest.param(OLGA, {OPS}, True, id="room-user-by-room-id"),
    pytest.param(TESS, TEAM_KEYS, True, id="room-user-by-alias"),
    pytest.param(STRANGER, LOBBY_KEYS, False, id="stranger-to-managed-room"),
    pytest.param(STRANGER, ELSEWHERE, False, id="stranger-to-unmanaged-room"),
]


@pytest.mark.parametrize(("inviter", "room_keys", "expected"), INVITES)
def test_may_invite(inviter: str, room_keys: set[str], expected: bool) -> None:
    assert may_invite(make_config(), inviter, room_keys, bot_user_ids=BOT_IDS) is expected


@pytest.mark.parametrize(
    ("inviter", "room_keys"),
    [
        pytest.param(STRANGER, LOBBY_KEYS, id="stranger-to-managed-room"),
        pytest.param(STRANGER, ELSEWHERE, id="stranger-to-unmanaged-room"),
    ],
)
def test_may_invite_ignores_default_room_access(inviter: str, room_keys: set[str]) -> None:
    assert may_invite(make_config(default_room_access=True), inviter, room_keys, bot_user_ids=BOT_IDS) is False


@pytest.mark.parametrize(
    ("default_room_access", "managed", "expected"),
    [(True, True, True), (True, False, False), (False, True, False), (False, False, False)],
)
def test_is_authorized_default_room_access_only_in_managed_rooms(default_room_access, managed, expected):
    config = Config.model_validate({"authorization": {"default_room_access": default_room_access}})

    assert is_authorized(config, "@stranger:localhost", {"!room:localhost"}, managed=managed) is expected


# -- the agent's own rooms reach into rooms config does not name ---------------------------------------


@pytest.mark.parametrize(
    ("user_id", "managed", "expected"),
    [
        pytest.param(BOB, False, True, id="user-of-an-agents-room-in-its-dm"),
        pytest.param(BOB, True, False, id="not-in-another-managed-room"),
        pytest.param(OLGA, False, False, id="user-of-a-room-the-agent-does-not-serve"),
        pytest.param(STRANGER, False, False, id="stranger"),
    ],
)
def test_is_authorized_home_rooms_count_only_outside_managed_rooms(user_id: str, managed: bool, expected: bool):
    config = make_config()

    assert is_authorized(config, user_id, ELSEWHERE, managed=managed, home_keys=LOBBY_KEYS) is expected


@pytest.mark.parametrize(
    ("inviter", "expected"),
    [pytest.param(BOB, True, id="user-of-an-agents-room"), pytest.param(OLGA, False, id="user-of-another-room")],
)
def test_may_invite_a_user_of_one_of_the_agents_rooms_into_any_room(inviter: str, expected: bool):
    assert may_invite(make_config(), inviter, ELSEWHERE, home_keys=LOBBY_KEYS) is expected
    assert may_invite(make_config(default_room_access=True), STRANGER, ELSEWHERE, home_keys=LOBBY_KEYS) is False


# -- Directory.room_keys -------------------------------------------------------------------------------


def test_directory_room_keys_follow_a_room_set_up_later(tmp_path):
    from mindroom.bots.directory import Directory
    from mindroom.state.sqlite.rooms import SqliteRoomMemory

    directory = Directory("localhost", SqliteRoomMemory(tmp_path / "rooms.db"), room_ids={"lobby": LOBBY})
    assert directory.room_keys(LOBBY) == {LOBBY, "lobby", "#lobby:localhost"}
    assert directory.room_keys("!ops:localhost") == {"!ops:localhost"}

    directory.room_set_up("ops", "!ops:localhost")  # a room made after the first messages were read

    assert directory.room_keys("!ops:localhost") == {"!ops:localhost", "ops", "#ops:localhost"}
    assert dict(directory.room_ids) == {"lobby": LOBBY, "ops": "!ops:localhost"}
