"""Encryption in MatrixBotClient against a real Synapse: encrypted rooms, stores that survive restarts."""

from __future__ import annotations

import stat

import nio
import pytest
from structlog.testing import capture_logs

from mindroom.matrix import (
    BotCredentials,
    CredentialStore,
    MatrixCryptoStoreError,
    MatrixEncryptionError,
    MatrixEventKind,
    bot_localpart,
)
from mindroom.matrix.crypto.device import device_keys_published
from mindroom.matrix.transport import quote_path
from mindroom.testing.homeserver import unique_localpart

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def _raw_event(bot, room_id: str, event_id: str) -> dict:
    path = f"/_matrix/client/v3/rooms/{quote_path(room_id)}/event/{quote_path(event_id)}"
    reply = await bot._transport.request("GET", path)
    assert reply.ok, reply
    return reply.body


def _forget_recovery_key(bot) -> None:
    """Delete the recovery key of the test's data directory: nothing can restore a lost store then."""
    (bot.crypto_store_path.parent.parent / "recovery-key").unlink()


async def test_crypto_messages_edits_and_reactions_travel_encrypted_and_arrive_decrypted(make_bot, start_sync):
    alice, bob = await make_bot(), await make_bot()
    entry = await alice.open_room(unique_localpart("secret"), name="Secret", encrypted=True)
    await alice.invite_missing(entry.room_id, [bob.user_id])
    await bob.join(entry.room_id)
    recorder = await start_sync(bob)

    message_id = await alice.send_message(entry.room_id, "only for members", thread_root=None)
    edit_id = await alice.edit_message(entry.room_id, message_id, "still only for members")
    reaction_id = await alice.react(entry.room_id, message_id, "🔒")

    message = await recorder.wait_for_body("only for members")
    assert message.encrypted
    assert message.kind is MatrixEventKind.MESSAGE
    edit = await recorder.wait_for(lambda event: event.event_id == edit_id)
    assert edit.relation_type == "m.replace"
    assert edit.content["m.new_content"]["body"] == "still only for members"
    reaction = await recorder.wait_for(lambda event: event.event_id == reaction_id)
    assert reaction.encrypted
    assert reaction.reaction_key == "🔒"
    assert reaction.related_event_id == message_id
    for event_id in (message_id, edit_id, reaction_id):
        raw = await _raw_event(alice, entry.room_id, event_id)
        assert raw["type"] == "m.room.encrypted"
        assert "only for members" not in str(raw["content"])
    fetched = await bob.get_event(entry.room_id, message_id)
    assert fetched is not None
    assert fetched.body == "only for members"
    assert fetched.encrypted


async def test_crypto_a_room_joined_just_now_is_known_encrypted_before_any_sync(make_bot, start_sync):
    alice, bob = await make_bot(), await make_bot()
    entry = await alice.open_room(unique_localpart("fresh"), encrypted=True)
    await alice.invite_missing(entry.room_id, [bob.user_id])
    recorder = await start_sync(alice)
    await bob.join(entry.room_id)

    event_id = await bob.send_message(entry.room_id, "first words")  # bob has never synced

    assert (await _raw_event(bob, entry.room_id, event_id))["type"] == "m.room.encrypted"
    assert (await recorder.wait_for_body("first words")).encrypted


async def test_crypto_plain_room_stays_plain(make_bot):
    bot = await make_bot()
    room_id = await bot.ensure_room(unique_localpart("plain"))
    event_id = await bot.send_message(room_id, "in the clear")
    raw = await _raw_event(bot, room_id, event_id)
    assert raw["type"] == "m.room.message"
    assert raw["content"]["body"] == "in the clear"


async def test_crypto_enable_encryption_turns_an_existing_room_encrypted(make_bot):
    bot = await make_bot()
    room_id = await bot.ensure_room(unique_localpart("later"))
    assert await bot.enable_encryption(room_id) is True
    assert await bot.enable_encryption(room_id) is False
    event_id = await bot.send_message(room_id, "from now on")
    assert (await _raw_event(bot, room_id, event_id))["type"] == "m.room.encrypted"


async def test_crypto_store_is_private_and_a_restart_keeps_the_device(make_bot, tmp_path, start_sync):
    first = await make_bot()
    store = first.crypto_store_path
    assert store == tmp_path / "data" / "crypto" / first.bot_name / "crypto.db"
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(store.parent.parent.stat().st_mode) == 0o700
    identity = first._nio.olm.account.identity_keys
    other = await make_bot()
    entry = await other.open_room(unique_localpart("restart"), encrypted=True)
    await other.invite_missing(entry.room_id, [first.user_id])
    await first.join(entry.room_id)
    await other.send_message(entry.room_id, "before the restart")
    await first.close()

    again = await make_bot(first.bot_name)
    recorder = await start_sync(again)
    await other.send_message(entry.room_id, "after the restart")

    assert again.device_id == first.device_id
    assert again._nio.olm.account.identity_keys == identity
    assert (await recorder.wait_for_body("after the restart")).encrypted


async def test_crypto_lost_store_refuses_to_start_the_bot_and_names_the_file(make_bot):
    first = await make_bot()
    device = first.device_id
    await first.close()
    first.crypto_store_path.unlink()
    _forget_recovery_key(first)  # with it, the key backup would restore the store on a new device

    with capture_logs() as logs, pytest.raises(MatrixCryptoStoreError) as info:
        await make_bot(first.bot_name)

    assert str(first.crypto_store_path) in str(info.value)
    assert "MINDROOM_NEW_CRYPTO_DEVICE=1" in str(info.value)
    refusal = next(entry for entry in logs if entry["event"] == "crypto store lost; bot not started")
    assert refusal["log_level"] == "error"
    assert refusal["path"] == str(first.crypto_store_path)
    assert refusal["device_id"] == device
    assert "cannot be read" in refusal["meaning"]
    assert not first.crypto_store_path.exists()  # nothing was created in its place


async def test_crypto_unreadable_store_refuses_then_the_option_makes_a_new_device(make_bot, matrix_homeserver):
    first = await make_bot()
    old_device = first.device_id
    await first.close()
    first.crypto_store_path.write_bytes(b"this is not a database" * 100)
    _forget_recovery_key(first)

    with pytest.raises(MatrixCryptoStoreError, match="cannot be opened"):
        await make_bot(first.bot_name)

    replaced = await make_bot(first.bot_name, new_crypto_device=True)
    assert replaced.device_id != old_device
    assert replaced.crypto_store_path.is_file()
    kept = list(replaced.crypto_store_path.parent.glob("crypto.db.lost-*"))
    assert len(kept) == 1
    assert kept[0].read_bytes().startswith(b"this is not a database")
    # The old device was signed out, so nobody encrypts for it any more.
    assert not await device_keys_published(replaced._transport, replaced.user_id, old_device)
    assert await device_keys_published(replaced._transport, replaced.user_id, replaced.device_id)


async def test_crypto_store_is_started_for_a_device_that_never_published_keys(make_bot, matrix_homeserver, tmp_path):
    name = unique_localpart("legacy")
    user = matrix_homeserver.register_user(bot_localpart(name), "legacy-password")
    credentials = BotCredentials(user.user_id, user.device_id, user.access_token, user.password)
    CredentialStore(tmp_path / "data").save(name, credentials)

    bot = await make_bot(name, registration_shared_secret=None)

    assert bot.device_id == user.device_id
    assert bot.crypto_store_path.is_file()
    assert await device_keys_published(bot._transport, bot.user_id, user.device_id)


async def test_crypto_a_send_that_cannot_be_encrypted_raises_and_sends_nothing(make_bot, monkeypatch):
    bot = await make_bot()
    entry = await bot.open_room(unique_localpart("refuse"), encrypted=True)
    before = await bot.send_message(entry.room_id, "this one goes out")

    def broken(*_args, **_kwargs):
        raise nio.EncryptionError("no outbound session")

    monkeypatch.setattr(bot._nio, "encrypt", broken)
    with pytest.raises(MatrixEncryptionError, match="no outbound session"):
        await bot.send_message(entry.room_id, "this one must not")

    path = f"/_matrix/client/v3/rooms/{quote_path(entry.room_id)}/messages"
    reply = await bot._transport.request("GET", path, query={"dir": "b", "limit": "50"})
    sent = [e for e in reply.body["chunk"] if e["sender"] == bot.user_id and "state_key" not in e]
    assert [e["event_id"] for e in sent] == [before]
    assert sent[0]["type"] == "m.room.encrypted"


async def test_crypto_encryption_turned_on_by_another_member_is_followed(make_bot, start_sync):
    owner, bot = await make_bot(), await make_bot()
    room_id = await owner.ensure_room(unique_localpart("switch"), invite=[bot.user_id])
    await bot.join(room_id)
    recorder = await start_sync(bot)
    plain = await bot.send_message(room_id, "while it was plain")
    assert (await _raw_event(bot, room_id, plain))["type"] == "m.room.message"

    assert await owner.enable_encryption(room_id)
    await recorder.wait_for(lambda event: event.type == "m.room.encryption")
    secret = await bot.send_message(room_id, "now it is not")

    assert (await _raw_event(bot, room_id, secret))["type"] == "m.room.encrypted"


async def test_crypto_one_key_request_per_session_however_many_of_its_events_come_at_once(make_bot):
    alice, bob = await make_bot(), await make_bot()
    entry = await alice.open_room(unique_localpart("sealed"), name="Sealed", encrypted=True)
    first = await _raw_event(alice, entry.room_id, await alice.send_message(entry.room_id, "one", thread_root=None))
    second = await _raw_event(alice, entry.room_id, await alice.send_message(entry.room_id, "two", thread_root=None))
    assert first["content"]["session_id"] == second["content"]["session_id"]

    crypto = bob._crypto
    assert crypto.decrypt(entry.room_id, first) is None  # bob never got the room key
    assert crypto.request_key(entry.room_id, first) is True
    assert crypto.request_key(entry.room_id, second) is False  # the same session's request is already queued
    queued = [m for m in crypto._olm.outgoing_to_device_messages if isinstance(m, nio.RoomKeyRequestMessage)]
    assert len(queued) == 1

    await crypto.maintain()  # sent: now it is an outgoing request nio tracks
    assert crypto._olm.outgoing_to_device_messages == []
    assert crypto.request_key(entry.room_id, second) is False
