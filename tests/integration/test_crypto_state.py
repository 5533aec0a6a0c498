"""The bots' crypto state in PostgreSQL, on a real Synapse and a real PostgreSQL: a standby with an empty data
directory takes over after kill -9 with the same devices, and state the recovery key does not open is refused,
bot by bot, naming the bot and the fix, never replaced by a new device."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest
from structlog.testing import capture_logs

from mindroom.daemon.orchestrator import Orchestrator
from mindroom.matrix import MatrixRecoveryError
from mindroom.matrix.crypto.recovery_key import RecoveryKeys, decode_recovery_key, encode_recovery_key
from mindroom.matrix.crypto.sealing import Sealer
from mindroom.testing.model_server import Echo
from tests.integration.conftest import E2E, DaemonProcess
from tests.integration.support import HumanClient, thread_replies
from tests.integration.test_crypto_recovery import agent_config, encrypted_human, published_keys
from tests.state.postgres_server import postgres_server, postgres_url

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.asyncio]
__all__ = ["postgres_server", "postgres_url"]


def _devices(process: DaemonProcess) -> dict[str, str]:
    """Each bot's device id, as the daemon logged it at its login."""
    found = {}
    for line in process.output().splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if entry.get("event") == "logged in":
                found[entry["agent"]] = entry["device_id"]
    return found


async def _room(e2e: E2E, human: HumanClient, key: str) -> str:
    response = await human.client.room_resolve_alias(f"#{key}:{e2e.homeserver.server_name}")
    await e2e.joined(human, response.room_id)
    return str(response.room_id)


async def _start_in(e2e: E2E, config: dict[str, Any], storage: Path, values: dict[str, str]) -> Orchestrator:
    environment = replace(e2e.environment(e2e.write_config(config)), storage_root=storage, values=values)
    e2e.daemon = Orchestrator(environment, watch=False)
    try:
        await e2e.daemon.start()
    except BaseException:
        await e2e.daemon.stop("start failed")
        raise
    return e2e.daemon


async def test_crypto_state_a_standby_with_an_empty_data_directory_takes_over_the_same_devices(
    postgres_url: str, e2e: E2E
):
    human = await encrypted_human(e2e)
    agent, room = e2e.name("helper"), e2e.name("vault")
    config = agent_config(e2e, human, [agent], room, storage={"database_url": postgres_url})
    e2e.model_server.set_default(Echo(prefix="echo: "), model="agent-model")
    active = e2e.spawn(config)
    active.log_path = e2e.root / "active.log"
    active.start()
    await active.wait_for_line("daemon ready")
    room_id = await _room(e2e, human, room)
    agent_id = f"@{e2e.account_prefix}{agent}:{e2e.homeserver.server_name}"
    await human.wait_for_member(room_id, agent_id)
    first = await human.send(room_id, "before the takeover")
    assert (await human.wait_for(thread_replies(first, agent_id))).get("decrypted") is True
    # The operator keeps the recovery key away from the machine; the standby's machine has nothing else.
    key_copy = e2e.root / "operator-copy-of-the-recovery-key"
    shutil.copy(e2e.storage / "crypto" / "recovery-key", key_copy)
    empty = e2e.root / "standby-machine"
    standby = e2e.spawn(
        config,
        MINDROOM_STANDBY="1",
        MINDROOM_STORAGE_PATH=str(empty),
        MINDROOM_RECOVERY_KEY_FILE=str(key_copy),
    )
    standby.log_path = e2e.root / "standby.log"
    standby.start()
    await standby.wait_for_line("standby: waiting for the active daemon to stop")

    active.kill()
    await standby.wait_for_line("daemon ready", timeout=120)
    second = await human.send(room_id, "after the takeover")
    reply = await human.wait_for(thread_replies(second, agent_id))

    assert reply.get("decrypted") is True and reply["content"]["body"].startswith("echo: after the takeover")
    assert _devices(standby) == _devices(active) != {}
    published = await published_keys(human, agent_id)
    assert list(published["device_keys"][agent_id]) == [_devices(active)[agent]]  # no second device appeared
    assert not list(empty.rglob("*.db")) and not (empty / "crypto").exists()  # nothing of it became a file
    assert await standby.terminate() == 0


async def test_crypto_state_without_the_recovery_key_every_bot_is_refused_and_no_device_is_replaced(
    postgres_url: str, e2e: E2E
):
    human = await encrypted_human(e2e)
    agent, room = e2e.name("helper"), e2e.name("vault")
    config = agent_config(e2e, human, [agent], room, storage={"database_url": postgres_url})
    daemon = await _start_in(e2e, config, e2e.storage, {})
    devices = {name: bot.client.device_id for name, bot in daemon.bots.items()}
    user_ids = dict(daemon.running.directory.bot_user_ids)
    await e2e.stop()
    elsewhere = e2e.root / "another-machine"

    with capture_logs() as logs, pytest.raises(MatrixRecoveryError) as info:
        await _start_in(e2e, config, elsewhere, {})

    assert info.value.bot_name == "router"  # the router is needed for the rooms: the start stops
    refused = {e["agent"]: e for e in logs if e["event"] == "crypto state cannot be opened; bot not started"}
    assert set(refused) == {"router", agent}
    for entry in refused.values():
        assert "sealed with the recovery key, and none is given" in entry["problem"]
        assert "MINDROOM_RECOVERY_KEY_FILE" in entry["fix"]
    assert not (elsewhere / "crypto" / "recovery-key").exists()  # no key was made up in its place
    for name, user_id in user_ids.items():
        assert list((await published_keys(human, user_id))["device_keys"][user_id]) == [devices[name]]


async def test_crypto_state_one_bot_sealed_with_another_key_is_left_out_and_the_others_answer(
    postgres_url: str, e2e: E2E
):
    human = await encrypted_human(e2e)
    odd, kept, room = e2e.name("odd"), e2e.name("kept"), e2e.name("vault")
    config = agent_config(e2e, human, [odd, kept], room, storage={"database_url": postgres_url})
    await _start_in(e2e, config, e2e.storage, {})
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    await e2e.stop()
    key = RecoveryKeys(e2e.storage).load()
    assert key is not None
    other = Sealer(decode_recovery_key(encode_recovery_key(bytes(32))))
    ours = Sealer(key.key)
    with psycopg.connect(postgres_url) as conn:  # as if that bot had been run with another recovery key
        rows = conn.execute("SELECT kind, key, value FROM mindroom.crypto_items WHERE bot = %s", (odd,)).fetchall()
        for kind, item_key, value in rows:
            resealed = other.seal(odd, kind, item_key, ours.unseal(odd, kind, item_key, bytes(value)))
            conn.execute(
                "UPDATE mindroom.crypto_items SET value = %s WHERE bot = %s AND kind = %s AND key = %s",
                (resealed, odd, kind, item_key),
            )
    e2e.model_server.set_default(Echo(prefix="echo: "), model="agent-model")

    with capture_logs() as logs:
        daemon = await _start_in(e2e, config, e2e.storage, {})

    assert odd not in daemon.bots and {kept, "router"} <= set(daemon.bots)
    refusal = next(e for e in logs if e["event"] == "crypto state cannot be opened; bot not started")
    assert refusal["agent"] == odd and "another recovery key sealed it" in refusal["problem"]
    assert "give the recovery key it was sealed with" in refusal["fix"]
    kept_id = e2e.user_id(kept)
    await human.wait_for_member(room_id, kept_id)
    question = await human.send(room_id, "who is still here?", mentions=[kept_id])
    assert (await human.wait_for(thread_replies(question, kept_id))).get("decrypted") is True


async def test_crypto_state_migrate_moves_the_devices_into_the_database(postgres_url: str, e2e: E2E):
    human = await encrypted_human(e2e)
    agent, room = e2e.name("helper"), e2e.name("vault")
    config = agent_config(e2e, human, [agent], room)
    e2e.model_server.set_default(Echo(prefix="echo: "), model="agent-model")
    daemon = await _start_in(e2e, config, e2e.storage, {})
    devices = {name: bot.client.device_id for name, bot in daemon.bots.items()}
    room_id, agent_id = e2e.room_id(room), e2e.user_id(agent)
    await e2e.joined(human, room_id)
    await human.wait_for_member(room_id, agent_id)
    before = await human.send(room_id, "said on SQLite")
    await human.wait_for(thread_replies(before, agent_id))
    await e2e.stop()

    migrated = await e2e.migrate_state(postgres_url)

    assert migrated.returncode == 0, migrated.stderr
    assert re.search(rf"^crypto items of {agent}\s+(\d+)\s+\1\s+ok$", migrated.stdout, re.M), migrated.stdout
    for name in devices:
        shutil.rmtree(e2e.storage / "crypto" / name)  # from now on only the database holds the devices
    config["storage"] = {"database_url": postgres_url}
    daemon = await _start_in(e2e, config, e2e.storage, {})
    assert {name: bot.client.device_id for name, bot in daemon.bots.items()} == devices
    earlier = await daemon.bots[agent].client.get_event(room_id, before)
    assert earlier is not None and earlier.body == "said on SQLite"
    after = await human.send(room_id, "said on PostgreSQL")
    assert (await human.wait_for(thread_replies(after, agent_id))).get("decrypted") is True
