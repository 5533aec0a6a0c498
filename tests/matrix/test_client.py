"""MatrixBotClient against a real Synapse: login, rooms, messages, edits, reactions and room state."""

from __future__ import annotations

import asyncio
import json
import stat
import urllib.request
from urllib.parse import quote

import pytest

from mindroom.matrix import (
    CredentialStore,
    MatrixEventKind,
    MatrixLoginError,
    MatrixRequestError,
    bot_localpart,
    bot_user_id,
)
from mindroom.testing.homeserver import unique_localpart

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def test_client_login_registers_with_shared_secret_and_stores_private_credentials(
    make_bot, matrix_homeserver, tmp_path
):
    bot = await make_bot("alpha_" + unique_localpart("x"), display_name="Alpha")
    assert bot.user_id == bot_user_id(bot.bot_name, matrix_homeserver.server_name)
    path = tmp_path / "data" / "matrix" / "credentials" / f"{bot.bot_name}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    stored = json.loads(path.read_text())
    assert stored["user_id"] == bot.user_id
    assert stored["device_id"] == bot.device_id
    assert len(stored["password"]) >= 32
    assert stored["access_token"]
    profile_url = f"{matrix_homeserver.url}/_matrix/client/v3/profile/{quote(bot.user_id)}/displayname"
    profile = await asyncio.to_thread(lambda: json.loads(urllib.request.urlopen(profile_url, timeout=10).read()))
    assert profile["displayname"] == "Alpha"


async def test_client_login_reuses_stored_token_and_device(make_bot, tmp_path):
    first = await make_bot()
    path = CredentialStore(tmp_path / "data").path(first.bot_name)
    before = path.read_text()
    await first.close()

    second = await make_bot(first.bot_name)
    assert second.user_id == first.user_id
    assert second.device_id == first.device_id
    assert path.read_text() == before


async def test_client_login_falls_back_to_stored_password_when_token_is_revoked(make_bot, tmp_path):
    first = await make_bot()
    store = CredentialStore(tmp_path / "data")
    stored = store.load(first.bot_name)
    assert stored is not None
    store.save(first.bot_name, stored.with_session(stored.user_id, stored.device_id or "", "syt_not_a_real_token"))

    second = await make_bot(first.bot_name)
    assert second.user_id == first.user_id
    assert second.device_id == first.device_id
    renewed = store.load(first.bot_name)
    assert renewed is not None
    assert renewed.access_token not in {None, "syt_not_a_real_token"}
    assert renewed.password == stored.password


async def test_client_login_with_configured_password_and_no_secret(make_bot, matrix_homeserver):
    name = unique_localpart("pw")
    matrix_homeserver.register_user(bot_localpart(name), "configured-password")
    bot = await make_bot(name, registration_shared_secret=None, password="configured-password")
    assert bot.user_id == bot_user_id(name, matrix_homeserver.server_name)


async def test_client_login_without_any_way_in_names_the_bot(make_bot):
    name = unique_localpart("nobody")
    with pytest.raises(MatrixLoginError, match=name):
        await make_bot(name, registration_shared_secret=None)


async def test_client_login_existing_account_with_unknown_password_fails(make_bot, matrix_homeserver):
    name = unique_localpart("taken")
    matrix_homeserver.register_user(bot_localpart(name), "someone-elses-password")
    with pytest.raises(MatrixLoginError, match="account exists"):
        await make_bot(name)


async def test_client_ensure_room_creates_alias_room_that_a_second_bot_joins(make_bot):
    alice, bob = await make_bot(), await make_bot()
    key = unique_localpart("lobby")
    room_id = await alice.ensure_room(key, name="Lobby", topic="Chat", invite=[bob.user_id])
    assert await bob.resolve_room(key) == room_id
    assert await bob.ensure_room(key, name="Lobby") == room_id
    assert set(await alice.room_members(room_id)) == {alice.user_id, bob.user_id}
    assert room_id in await bob.joined_rooms()
    assert (await alice.get_room_state(room_id, "m.room.name", ""))["name"] == "Lobby"
    assert (await alice.get_room_state(room_id, "m.room.topic", ""))["topic"] == "Chat"


async def test_client_ensure_room_race_ends_in_one_room(make_bot):
    bots = [await make_bot() for _ in range(3)]
    key = unique_localpart("race")
    everyone = [bot.user_id for bot in bots]
    room_ids = await asyncio.gather(*(bot.ensure_room(key, name="Race", invite=everyone) for bot in bots))
    assert len(set(room_ids)) == 1
    assert set(await bots[0].room_members(room_ids[0])) == {bot.user_id for bot in bots}


async def test_client_ordinary_members_may_invite(make_bot):
    owner, member, newcomer = await make_bot(), await make_bot(), await make_bot()
    room_id = await owner.ensure_room(unique_localpart("open"), name="Open", invite=[member.user_id])
    await member.join(room_id)
    await member.invite(room_id, newcomer.user_id)
    await member.invite(room_id, owner.user_id)  # already in the room: not an error
    await newcomer.join(room_id)
    assert newcomer.user_id in await owner.room_members(room_id)


async def test_client_resolve_room_accepts_ids_aliases_and_bare_keys(make_bot, matrix_homeserver):
    bot = await make_bot()
    key = unique_localpart("named")
    room_id = await bot.ensure_room(key)
    assert await bot.resolve_room(key) == room_id
    assert await bot.resolve_room(f"#{key}:{matrix_homeserver.server_name}") == room_id
    assert await bot.resolve_room(room_id) == room_id
    assert await bot.resolve_room(unique_localpart("missing")) is None


async def test_client_threaded_message_has_thread_relation_and_mentions(make_bot):
    bot, other = await make_bot(), await make_bot()
    room_id = await bot.ensure_room(unique_localpart("thread"))
    root = await bot.send_message(room_id, "root")
    latest = await bot.send_message(room_id, "first", thread_root=root)
    reply_id = await bot.send_message(
        room_id,
        "second",
        thread_root=root,
        reply_to=latest,
        mentions=[other.user_id],
        extra_content={"com.mindroom.original_sender": other.user_id},
    )
    event = await bot.get_event(room_id, reply_id)
    assert event is not None
    assert event.content["m.relates_to"] == {
        "rel_type": "m.thread",
        "event_id": root,
        "is_falling_back": True,
        "m.in_reply_to": {"event_id": latest},
    }
    assert event.content["m.mentions"] == {"user_ids": [other.user_id]}
    assert event.content["com.mindroom.original_sender"] == other.user_id
    assert event.thread_root == root
    assert event.reply_to == latest
    first = await bot.get_event(room_id, latest)
    assert first is not None
    assert first.reply_to == root


async def test_client_edit_replaces_text_and_keeps_thread(make_bot):
    bot = await make_bot()
    room_id = await bot.ensure_room(unique_localpart("edit"))
    root = await bot.send_message(room_id, "root")
    original = await bot.send_message(room_id, "draft", thread_root=root)
    edit_id = await bot.edit_message(room_id, original, "final", thread_root=root, extra_content={"com.x": 1})
    edit = await bot.get_event(room_id, edit_id)
    assert edit is not None
    assert edit.body == "* final"
    assert edit.relation == {"rel_type": "m.replace", "event_id": original}
    assert edit.content["m.new_content"]["body"] == "final"
    assert edit.content["m.new_content"]["com.x"] == 1
    assert edit.content["m.new_content"]["m.relates_to"]["event_id"] == root


async def test_client_react_and_redact(make_bot):
    bot = await make_bot()
    room_id = await bot.ensure_room(unique_localpart("react"))
    message = await bot.send_message(room_id, "hello")
    reaction_id = await bot.react(room_id, message, "👍")
    reaction = await bot.get_event(room_id, reaction_id)
    assert reaction is not None
    assert reaction.kind is MatrixEventKind.REACTION
    assert reaction.reaction_key == "👍"
    assert reaction.related_event_id == message
    redaction_id = await bot.redact(room_id, message, reason="test")
    assert redaction_id.startswith("$")
    redacted = await bot.get_event(room_id, message)
    assert redacted is not None
    assert redacted.body is None


async def test_client_room_state_get_and_put(make_bot):
    owner, member = await make_bot(), await make_bot()
    room_id = await owner.ensure_room(unique_localpart("state"), invite=[member.user_id])
    await member.join(room_id)

    assert await owner.put_room_state(room_id, "com.mindroom.test", "a", {"value": 1})
    assert await owner.put_room_state(room_id, "com.mindroom.test", "b", {"value": 2})
    assert await owner.get_room_state(room_id, "com.mindroom.test", "a") == {"value": 1}
    assert await owner.get_room_state(room_id, "com.mindroom.test") == {"a": {"value": 1}, "b": {"value": 2}}
    assert await owner.get_room_state(room_id, "com.mindroom.test", "missing") is None
    assert await owner.get_room_state(room_id, "com.mindroom.none") == {}
    # An ordinary member lacks the power to set state.
    assert await member.put_room_state(room_id, "com.mindroom.test", "a", {"value": 3}) is False
    unknown_room = "!doesnotexist:" + owner.server_name
    assert await owner.get_room_state(unknown_room, "com.mindroom.test", "a") is None
    assert await owner.get_room_state(unknown_room, "com.mindroom.test") is None
    assert await owner.put_room_state(unknown_room, "com.mindroom.test", "a", {}) is False


async def test_client_leave_and_errors_raise_matrix_request_error(make_bot):
    bot = await make_bot()
    room_id = await bot.ensure_room(unique_localpart("leave"))
    await bot.leave(room_id)
    assert room_id not in await bot.joined_rooms()
    with pytest.raises(MatrixRequestError) as info:
        await bot.send_message(room_id, "not a member any more")
    assert info.value.errcode == "M_FORBIDDEN"
