"""Cross-signing, the key backup and the recovery key of `MatrixBotClient` against a real Synapse (and, where the
state is there, a real PostgreSQL): signed devices, a lost store restored, a device moved to another machine."""

from __future__ import annotations

import asyncio
import secrets
import shutil
from pathlib import Path
from typing import Any

import pytest
import signedjson.key
import signedjson.sign
from signedjson.sign import SignatureVerifyException
from structlog.testing import capture_logs

from mindroom.matrix import MatrixBotClient, MatrixRecoveryError
from mindroom.matrix.crypto.key_backup import BACKUP_ALGORITHM, BackupKey
from mindroom.matrix.crypto.recovery_key import RecoveryKeys, encode_recovery_key
from mindroom.matrix.crypto.signing import decode_base64
from mindroom.state.backend import StateBackend
from mindroom.state.location import open_state_backend
from mindroom.testing.homeserver import unique_localpart
from tests.state.postgres_server import postgres_server, postgres_url

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
__all__ = ["postgres_server", "postgres_url"]


def _verify_key(key_object: dict[str, Any]) -> Any:
    ((key_id, public),) = key_object["keys"].items()
    return signedjson.key.decode_verify_key_bytes(key_id, decode_base64(public))


async def _keys_of(asker: MatrixBotClient, user_id: str) -> dict[str, Any]:
    reply = await asker._transport.request("POST", "/_matrix/client/v3/keys/query", body={"device_keys": {user_id: []}})
    assert reply.ok, reply
    return reply.body


async def _backed_up(bot: MatrixBotClient, count: int = 1) -> None:
    """Until the bot's uploader has put `count` room keys into the backup."""
    async with asyncio.timeout(15):
        while (uploader := bot._device.uploader) is None or uploader.uploaded < count:
            await asyncio.sleep(0.05)


async def _shared_room(owner: MatrixBotClient, member: MatrixBotClient) -> str:
    entry = await owner.open_room(unique_localpart("vault"), encrypted=True)
    await owner.invite_missing(entry.room_id, [member.user_id])
    await member.join(entry.room_id)
    return entry.room_id


async def test_recovery_a_device_is_signed_by_its_accounts_self_signing_key(make_bot):
    bot, other = await make_bot(), await make_bot()

    published = await _keys_of(other, bot.user_id)

    master = published["master_keys"][bot.user_id]
    self_signing = published["self_signing_keys"][bot.user_id]
    device = published["device_keys"][bot.user_id][bot.device_id]
    # Synapse's own signature library checks the chain: master key -> self-signing key -> the device.
    signedjson.sign.verify_signed_json(self_signing, bot.user_id, _verify_key(master))
    signedjson.sign.verify_signed_json(device, bot.user_id, _verify_key(self_signing))
    with pytest.raises(SignatureVerifyException):
        signedjson.sign.verify_signed_json(device, bot.user_id, _verify_key(master))
    assert bot.key_status is not None and bot.key_status.cross_signed and bot.key_status.problems == []


async def test_recovery_a_restarted_bot_keeps_its_identity_and_backup(make_bot):
    bot, other = await make_bot(), await make_bot()
    first = await _keys_of(other, bot.user_id)
    version = bot.key_status.backup_version if bot.key_status else None
    await bot.close()

    again = await make_bot(bot.bot_name)

    assert again.device_id == bot.device_id
    assert (await _keys_of(other, bot.user_id))["master_keys"] == first["master_keys"]
    assert again.key_status is not None and again.key_status.backup_version == version is not None


async def test_recovery_a_lost_store_comes_back_on_a_new_device_with_its_room_keys(make_bot, start_sync):
    bot, other = await make_bot(), await make_bot()
    room_id = await _shared_room(other, bot)
    recorder = await start_sync(bot)
    sent = await other.send_message(room_id, "before the loss")
    await recorder.wait_for_body("before the loss")
    await _backed_up(bot)  # uploaded by the bot's uploader task, not by the sync that received the key
    await recorder.stop()
    await bot.close()
    old_device, master = bot.device_id, (await _keys_of(other, bot.user_id))["master_keys"]
    shutil.rmtree(bot.crypto_store_path.parent)  # its store and its vault file; the recovery key stays

    with capture_logs() as logs:
        again = await make_bot(bot.bot_name)

    assert again.device_id != old_device
    event = await again.get_event(room_id, sent)
    assert event is not None and event.encrypted and event.body == "before the loss"
    published = await _keys_of(other, bot.user_id)
    assert published["master_keys"] == master  # the same identity, from secret storage
    assert again.key_status is not None and again.key_status.cross_signed
    signedjson.sign.verify_signed_json(
        published["device_keys"][bot.user_id][again.device_id],
        bot.user_id,
        _verify_key(published["self_signing_keys"][bot.user_id]),
    )
    restored = [entry for entry in logs if entry["event"] == "room keys restored from the backup"]
    assert restored and restored[0]["keys"] >= 1


async def test_recovery_a_wrong_recovery_key_names_the_bot_and_the_fix(make_bot, tmp_path: Path):
    bot = await make_bot()
    await bot.close()
    shutil.rmtree(bot.crypto_store_path.parent)
    wrong = RecoveryKeys(tmp_path / "data", given=encode_recovery_key(secrets.token_bytes(32)))

    with pytest.raises(MatrixRecoveryError) as info:
        await make_bot(bot.bot_name, recovery_keys=wrong)

    assert info.value.bot_name == bot.bot_name
    assert "does not open the account's secret storage" in info.value.problem
    assert "MINDROOM_RECOVERY_KEY_FILE" in info.value.fix and "MINDROOM_NEW_CRYPTO_DEVICE=1" in info.value.fix


async def test_recovery_a_backup_replaced_by_another_client_is_reported_and_the_bot_goes_on(make_bot, start_sync):
    bot, other = await make_bot(), await make_bot()
    ours = bot.key_status.backup_version if bot.key_status else None
    foreign = {"algorithm": BACKUP_ALGORITHM, "auth_data": {"public_key": BackupKey.generate().public_key}}
    reply = await bot._transport.request("POST", "/_matrix/client/v3/room_keys/version", body=foreign)
    assert reply.ok, reply

    with capture_logs() as logs:
        room_id = await _shared_room(bot, other)  # its first message there makes a room key to back up
        recorder = await start_sync(other)
        await bot.send_message(room_id, "still answering")
        await recorder.wait_for_body("still answering")
        async with asyncio.timeout(15):
            while not (bot.key_status and bot.key_status.problems):
                await asyncio.sleep(0.05)

    assert ours is not None and reply.body["version"] != ours
    assert "made by another client" in bot.key_status.problems[0]
    report = next(entry for entry in logs if entry["event"] == "account keys need the operator")
    assert report["agent"] == bot.bot_name and f"delete backup version {reply.body['version']}" in report["fix"]
    assert bot._device.uploader is not None and bot._device.uploader.version is None


@pytest.mark.postgres
async def test_recovery_state_in_the_database_moves_the_device_to_an_empty_data_directory(
    make_bot, start_sync, postgres_url: str, tmp_path: Path
):
    backend: StateBackend = open_state_backend(tmp_path / "first", postgres_url)
    await backend.acquire()
    try:
        vault = (await backend.open_stores()).crypto
        keys = RecoveryKeys(tmp_path / "first")
        bot = await make_bot(storage_root=tmp_path / "first", crypto_vault=vault, recovery_keys=keys)
        other = await make_bot()
        room_id = await _shared_room(other, bot)
        recorder = await start_sync(bot)
        sent = await other.send_message(room_id, "for the first machine")
        await recorder.wait_for_body("for the first machine")
        await recorder.stop()
        await bot.close()
        assert not list((tmp_path / "first").rglob("*.db"))  # nothing of the device's state is a file
        key = keys.load()
        assert key is not None

        for root, given, problem in [
            ("none", None, "sealed with the recovery key, and none is given"),
            ("other", encode_recovery_key(secrets.token_bytes(32)), "another recovery key sealed it"),
        ]:
            with pytest.raises(MatrixRecoveryError, match=problem) as info:
                await make_bot(
                    bot.bot_name,
                    storage_root=tmp_path / root,
                    crypto_vault=vault,
                    recovery_keys=RecoveryKeys(tmp_path / root, given=given),
                )
            assert info.value.bot_name == bot.bot_name and "MINDROOM_RECOVERY_KEY_FILE" in info.value.fix

        moved = await make_bot(
            bot.bot_name,
            storage_root=tmp_path / "second",
            crypto_vault=vault,
            recovery_keys=RecoveryKeys(tmp_path / "second", given=key.text),
        )
        assert moved.device_id == bot.device_id
        recorder = await start_sync(moved)
        await other.send_message(room_id, "for the second machine")
        assert (await recorder.wait_for_body("for the second machine")).encrypted
        earlier = await moved.get_event(room_id, sent)
        assert earlier is not None and earlier.body == "for the first machine"
    finally:
        await backend.close()
