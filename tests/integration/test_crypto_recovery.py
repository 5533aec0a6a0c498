"""Encryption that never goes silent, on a real Synapse with an encryption-capable human: the agents' devices are
cross-signed and trusted through that chain, a lost store comes back from the key backup with the recovery key,
and each fault (a wrong recovery key, a backup replaced by another client) names the bot and the fix while
the other bots answer."""

from __future__ import annotations

import asyncio
import json
import secrets
import shutil
import time
from dataclasses import replace
from typing import Any
from urllib.parse import quote

import pytest
import signedjson.key
import signedjson.sign
from structlog.testing import capture_logs

from mindroom.bots.ingress import CLOCK_SKEW_MS
from mindroom.cli.doctor import CheckStatus, check_crypto_stores
from mindroom.config.loading import load_config
from mindroom.daemon.orchestrator import Orchestrator
from mindroom.matrix import MatrixBotClient
from mindroom.matrix.credentials import CredentialStore
from mindroom.matrix.crypto.key_backup import BACKUP_ALGORITHM, BackupKey
from mindroom.matrix.crypto.recovery_key import encode_recovery_key
from mindroom.matrix.crypto.signing import decode_base64
from mindroom.testing.model_server import Echo
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, edits_of, eventually, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

KEYS_QUERY = "/_matrix/client/v3/keys/query"


async def encrypted_human(e2e: E2E) -> HumanClient:
    """A human that is a full encryption device with its own store, as Element is."""
    user = e2e.homeserver.register_user(e2e.name("alice"), "secret-pass-" + e2e.uid)
    human = HumanClient(e2e.homeserver.url, user.user_id, user.password, store_dir=e2e.root / "human-crypto")
    await human.start()
    e2e.humans.append(human)
    return human


def agent_config(e2e: E2E, human: HumanClient, agents: list[str], room: str, **extra: Any) -> dict[str, Any]:
    """Agents in one managed room the daemon creates encrypted."""
    entries = {
        name: {"display_name": name.title(), "role": "helps", "model": "default", "rooms": [room]} for name in agents
    }
    return e2e.basic_config([human.user_id], entries, rooms={room: {"name": "Vault", "encrypted": True}}, **extra)


async def start_with(e2e: E2E, config: dict[str, Any], values: dict[str, str] | None = None) -> Orchestrator:
    """Start the daemon in-process with these environment values (the recovery key, say)."""
    environment = replace(e2e.environment(e2e.write_config(config)), values=values or {})
    e2e.daemon = Orchestrator(environment, watch=False)
    try:
        await e2e.daemon.start()
    except BaseException:
        await e2e.daemon.stop("start failed")
        raise
    return e2e.daemon


async def published_keys(human: HumanClient, user_id: str) -> dict[str, Any]:
    """What the homeserver tells any client about `user_id`'s keys."""
    headers = {"Authorization": f"Bearer {human.client.access_token}", "Content-Type": "application/json"}
    body = json.dumps({"device_keys": {user_id: []}})
    response = await human.client.send("POST", KEYS_QUERY, body, headers)
    return dict(await response.json())


def verify_key(key_object: dict[str, Any]) -> Any:
    ((key_id, public),) = key_object["keys"].items()
    return signedjson.key.decode_verify_key_bytes(key_id, decode_base64(public))


async def backed_up(client: MatrixBotClient, count: int = 1) -> None:
    """Until the agent's backup uploader has uploaded `count` room keys."""
    async with asyncio.timeout(20):
        while (uploader := client._device.uploader) is None or uploader.uploaded < count:
            await asyncio.sleep(0.05)


async def _echoing_agent_in_a_vault(e2e: E2E) -> tuple[HumanClient, str, dict[str, Any], str, str]:
    """One echoing agent with a human in an encrypted room, the daemon running: (human, agent, config, room, id)."""
    human = await encrypted_human(e2e)
    agent, room = e2e.name("helper"), e2e.name("vault")
    config = agent_config(e2e, human, [agent], room)
    e2e.model_server.set_default(Echo(prefix="echo: "), model="agent-model")
    await start_with(e2e, config)
    room_id, agent_id = e2e.room_id(room), e2e.user_id(agent)
    await e2e.joined(human, room_id)
    await human.wait_for_member(room_id, agent_id)
    return human, agent, config, room_id, agent_id


async def test_crypto_recovery_the_human_trusts_the_agents_device_through_its_cross_signing(e2e: E2E):
    human, agent, config, room_id, agent_id = await _echoing_agent_in_a_vault(e2e)
    device_id = e2e.daemon.bots[agent].client.device_id

    published = await published_keys(human, agent_id)

    # The chain a client checks before trusting a device: master key -> self-signing key -> the device.
    self_signing = published["self_signing_keys"][agent_id]
    device = published["device_keys"][agent_id][device_id]
    signedjson.sign.verify_signed_json(self_signing, agent_id, verify_key(published["master_keys"][agent_id]))
    signedjson.sign.verify_signed_json(device, agent_id, verify_key(self_signing))
    question = await human.send(room_id, "is this device yours?")
    reply = await human.wait_for(thread_replies(question, agent_id))
    assert reply.get("decrypted") is True
    # ... and it is the device the human encrypts for and receives from.
    known = human.client.device_store[agent_id][device_id]
    assert known.ed25519 == device["keys"][f"ed25519:{device_id}"]
    await backed_up(e2e.daemon.bots[agent].client)
    report = {
        r.name: r
        for r in await check_crypto_stores(load_config(e2e.write_config(config), {}), e2e.storage, e2e.homeserver.url)
    }
    line = report[f"crypto {agent}"]
    assert line.status is CheckStatus.PASS, line
    assert device_id in line.detail and "cross-signed by its self-signing key" in line.detail
    assert "key backup version" in line.detail and " holds 0 keys" not in line.detail
    assert str(e2e.storage / "crypto" / agent) in line.detail


async def test_crypto_recovery_a_lost_store_comes_back_with_the_recovery_key_and_an_edit_is_answered(e2e: E2E):
    human, agent, config, room_id, agent_id = await _echoing_agent_in_a_vault(e2e)
    question = await human.send(room_id, "what is the capital of Frence")
    answer = await human.wait_for(thread_replies(question, agent_id))
    client = e2e.daemon.bots[agent].client
    await backed_up(client)
    old_device = client.device_id
    key_file = e2e.storage / "crypto" / "recovery-key"
    recovery_key = key_file.read_text().strip()
    await e2e.stop()
    shutil.rmtree(e2e.storage / "crypto" / agent)  # the agent's store and vault: gone
    key_file.unlink()  # only the operator's copy is left

    await start_with(e2e, config, {"MINDROOM_RECOVERY_KEY": recovery_key})

    client = e2e.daemon.bots[agent].client
    assert client.device_id != old_device
    before = await client.get_event(room_id, question)  # encrypted for the lost device; readable again
    assert before is not None and before.encrypted and before.body == "what is the capital of Frence"
    await human.wait_for_device(agent_id, str(client.device_id))
    edit = {
        "msgtype": "m.text",
        "body": "* what is the capital of France",
        "m.new_content": {"msgtype": "m.text", "body": "what is the capital of France"},
        "m.relates_to": {"rel_type": "m.replace", "event_id": question},
    }
    await human._room_send(room_id, "m.room.message", edit)
    edited = await human.wait_for(
        lambda ev: edits_of(answer["event_id"])(ev) and "France" in ev["content"]["m.new_content"]["body"]
    )
    assert edited.get("decrypted") is True
    assert not key_file.exists()  # a key given by the operator is not written down again


async def test_crypto_recovery_a_wrong_recovery_key_leaves_that_agent_out_and_the_others_answer(e2e: E2E):
    human = await encrypted_human(e2e)
    lost, kept, room = e2e.name("lost"), e2e.name("kept"), e2e.name("vault")
    config = agent_config(e2e, human, [lost, kept], room)
    await start_with(e2e, config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    await e2e.stop()
    shutil.rmtree(e2e.storage / "crypto" / lost)
    wrong = encode_recovery_key(secrets.token_bytes(32))
    e2e.model_server.set_default(Echo(prefix="echo: "), model="agent-model")

    with capture_logs() as logs:
        daemon = await start_with(e2e, config, {"MINDROOM_RECOVERY_KEY": wrong})

    assert lost not in daemon.bots and {kept, "router"} <= set(daemon.bots)
    refusal = next(entry for entry in logs if entry["event"] == "crypto store lost; bot not started")
    assert refusal["agent"] == lost
    assert "does not open the account's secret storage" in refusal["problem"]
    assert "MINDROOM_RECOVERY_KEY_FILE" in refusal["fix"] and "MINDROOM_NEW_CRYPTO_DEVICE=1" in refusal["fix"]
    kept_id = e2e.user_id(kept)
    await human.wait_for_member(room_id, kept_id)
    question = await human.send(room_id, "still there?", mentions=[kept_id])
    reply = await human.wait_for(thread_replies(question, kept_id))
    assert reply.get("decrypted") is True


async def test_crypto_recovery_a_backup_replaced_by_another_client_is_reported_and_the_agent_answers(e2e: E2E):
    human, agent, config, room_id, agent_id = await _echoing_agent_in_a_vault(e2e)
    client = e2e.daemon.bots[agent].client
    ours = client.key_status.backup_version if client.key_status else None
    # Another client of the agent's account (its own session) makes a backup of its own.
    credentials = CredentialStore(e2e.storage).load(agent)
    assert credentials is not None
    foreign = {"algorithm": BACKUP_ALGORITHM, "auth_data": {"public_key": BackupKey.generate().public_key}}
    headers = {"Authorization": f"Bearer {credentials.access_token}", "Content-Type": "application/json"}
    response = await human.client.send("POST", "/_matrix/client/v3/room_keys/version", json.dumps(foreign), headers)
    version = (await response.json())["version"]
    assert response.status == 200 and version != ours

    with capture_logs() as logs:
        question = await human.send(room_id, "are my keys backed up?")  # a new room key for the agent
        reply = await human.wait_for(thread_replies(question, agent_id))
        async with asyncio.timeout(20):
            while not any(entry["event"] == "account keys need the operator" for entry in logs):
                await asyncio.sleep(0.05)

    assert reply.get("decrypted") is True
    report = next(entry for entry in logs if entry["event"] == "account keys need the operator")
    assert report["agent"] == agent and "made by another client" in report["problem"]
    assert f"delete backup version {version}" in report["fix"]
    doctor = {
        r.name: r
        for r in await check_crypto_stores(load_config(e2e.write_config(config), {}), e2e.storage, e2e.homeserver.url)
    }
    line = doctor[f"crypto {agent}"]
    assert line.status is CheckStatus.WARN
    assert f"key backup version {version} is not the bot's (it keeps {ours})" in line.detail
    assert doctor["crypto router"].status is CheckStatus.PASS


async def _in_backup(human: HumanClient, token: str, room_id: str, session_id: str) -> bool:
    """Whether the account of `token` holds the room key `session_id` of `room_id` in its current key backup."""
    headers = {"Authorization": f"Bearer {token}"}
    response = await human.client.send("GET", "/_matrix/client/v3/room_keys/version", None, headers)
    version = (await response.json())["version"]
    path = f"/_matrix/client/v3/room_keys/keys/{quote(room_id, safe='')}/{quote(session_id, safe='')}?version={version}"
    return (await human.client.send("GET", path, None, headers)).status == 200


async def test_crypto_recovery_a_message_sent_while_the_store_was_lost_is_answered_once_after_the_restore(
    each_delivery: E2E,
):
    e2e = each_delivery
    human, agent, config, room_id, agent_id = await _echoing_agent_in_a_vault(e2e)
    first = await human.send(room_id, "first question")
    await human.wait_for(thread_replies(first, agent_id))
    session_id = human.client.olm.outbound_group_sessions[room_id].id
    credentials = CredentialStore(e2e.storage).load(agent)
    assert credentials is not None and credentials.access_token is not None
    token = credentials.access_token
    await eventually(lambda: _in_backup(human, token, room_id, session_id), "the human's room key in the backup")
    key_file = e2e.storage / "crypto" / "recovery-key"
    recovery_key = key_file.read_text().strip()
    await e2e.stop()
    shutil.rmtree(e2e.storage / "crypto" / agent)  # the agent's store and vault: gone
    key_file.unlink()

    second = await human.send(room_id, "second question, while the store was lost")
    raw = next(event for event in await human.raw_timeline(room_id) if event["event_id"] == second)
    assert raw["type"] == "m.room.encrypted" and raw["content"]["session_id"] == session_id  # the same room key
    # The operator restarts later than the clock allowance: the message is from before this run.
    sent_ms = raw["origin_server_ts"]
    await eventually(lambda: time.time() * 1000 > sent_ms + CLOCK_SKEW_MS, "the clock allowance passing")
    with capture_logs() as logs:
        await start_with(e2e, config, {"MINDROOM_RECOVERY_KEY": recovery_key})
        reply = await human.wait_for(thread_replies(second, agent_id))
        await e2e.settle(human, room_id)

    assert reply.get("decrypted") is True
    assert reply["content"]["body"] == "echo: second question, while the store was lost"
    assert len(human.matching(thread_replies(second, agent_id))) == 1
    assert len(human.matching(thread_replies(first, agent_id))) == 1
    restored = next(entry for entry in logs if entry["event"] == "room keys restored from the backup")
    assert restored["agent"] == agent and restored["keys"] >= 1
    held = [entry for entry in logs if entry["event"] == "held messages decrypted after the key restore"]
    assert [(entry["agent"], entry["messages"]) for entry in held] == [(agent, 1)]
    assert not [entry for entry in logs if entry["event"] == "held message still unreadable after the key restore"]
