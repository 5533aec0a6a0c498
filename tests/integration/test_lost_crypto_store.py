"""A bot whose crypto store is lost stays down while the router and the other agents run, on a real Synapse;
the admin room and `mindroom doctor` name the bot and the fix, and `mindroom run --new-device BOT` applies it."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from mindroom.cli.doctor import CheckStatus, check_crypto_stores
from mindroom.config.loading import load_config
from mindroom.matrix import MatrixCryptoStoreError
from mindroom.testing.model_server import Text
from tests.integration.conftest import E2E, DaemonProcess
from tests.integration.support import HumanClient, thread_replies
from tests.integration.test_encryption import _agent, _body, _encrypted_human

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


class _DaemonWithArgs(DaemonProcess):
    """`python -m mindroom run` with extra command-line arguments, and no `MINDROOM_NEW_CRYPTO_DEVICE`."""

    def __init__(self, e2e: E2E, config_path: Path, args: list[str]) -> None:
        super().__init__(e2e, config_path, {})
        self.args = tuple(args)
        self.log_path = e2e.root / "flagged.log"
        e2e.processes.append(self)

    def start(self, args: tuple[str, ...] = ()) -> None:
        saved = os.environ.pop("MINDROOM_NEW_CRYPTO_DEVICE", None)
        try:
            super().start((*self.args, *args))
        finally:
            if saved is not None:
                os.environ["MINDROOM_NEW_CRYPTO_DEVICE"] = saved


async def _world(e2e: E2E, human: HumanClient) -> tuple[dict[str, Any], dict[str, str]]:
    """`helper` in an encrypted room, `other` in a plain one, and an admin room; returns (config, room ids)."""
    helper, other = e2e.name("helper"), e2e.name("other")
    vault, plain, admin = e2e.name("vault"), e2e.name("plain"), e2e.name("admin")
    config = e2e.basic_config(
        [human.user_id],
        {helper: _agent(helper, vault), other: _agent(other, plain)},
        rooms={vault: {"name": "Vault", "encrypted": True}},
        admin_room=admin,
    )
    await e2e.start(config)
    rooms = {key: e2e.room_id(key) for key in (vault, plain, admin)}
    for room_id in rooms.values():
        await e2e.joined(human, room_id)
    await human.wait_for_member(rooms[vault], e2e.user_id(helper))
    return config, rooms


async def test_lost_crypto_store_keeps_that_bot_down_and_the_others_running(e2e: E2E):
    human = await _encrypted_human(e2e)
    config, rooms = await _world(e2e, human)
    helper, other = e2e.name("helper"), e2e.name("other")
    vault, plain, admin = (rooms[e2e.name(key)] for key in ("vault", "plain", "admin"))
    assert e2e.daemon is not None
    client = e2e.daemon.bots[helper].client
    old_device, store = client.device_id, client.crypto_store_path
    other_id = e2e.user_id(other)
    await e2e.stop()
    store.unlink()
    (e2e.storage / "crypto" / "recovery-key").unlink()  # with it, the key backup would restore the store

    await e2e.start(config)  # the daemon runs: before, the lost store of one agent stopped it whole
    daemon = e2e.daemon
    assert daemon is not None
    assert sorted(daemon.bots) == sorted(["router", other]) and list(daemon.down) == [helper]
    assert not store.exists()  # nothing replaced the device behind the operator's back
    e2e.model_server.set_default(Text("other answers"), model="agent-model")
    event_id = await human.send(plain, "is anyone there?")
    reply = await human.wait_for(thread_replies(event_id, other_id))
    assert _body(reply) == "other answers"

    notice = await human.wait_for(
        lambda ev: ev.get("room_id") == admin and helper in _body(ev) and "not running" in _body(ev)
    )
    body = _body(notice)
    assert f"`mindroom run --new-device {helper}`" in body and f"crypto/{helper}/crypto.db" in body
    assert str(e2e.storage) not in body  # the data directory's place is the operator's business
    loaded = load_config(e2e.write_config(config), {})
    checks = {r.name: r for r in await check_crypto_stores(loaded, e2e.storage, e2e.homeserver.url)}
    assert checks[f"crypto {helper}"].status is CheckStatus.FAIL
    assert f"mindroom run --new-device {helper}" in checks[f"crypto {helper}"].fix
    assert checks["crypto router"].status is CheckStatus.PASS
    assert checks[f"crypto {other}"].status is CheckStatus.PASS
    await e2e.stop()

    flagged = _DaemonWithArgs(e2e, e2e.write_config(config), ["--new-device", helper, "--new-device", "nobody"])
    flagged.start()
    await flagged.wait_for_line('"daemon ready"')
    lines = [json.loads(line) for line in flagged.output().splitlines() if line.startswith("{")]
    replaced = next(line for line in lines if line["event"] == "new crypto device replaces a lost one")
    assert replaced["agent"] == helper and replaced["old_device_id"] == old_device
    assert next(line for line in lines if line["event"] == "daemon ready")["down"] == []
    assert any(line["event"] == "--new-device names no bot of this config" for line in lines)
    helper_id = f"@{e2e.account_prefix}{helper}:{e2e.homeserver.server_name}"
    await human.wait_for_device(helper_id, replaced["device_id"])
    e2e.model_server.set_default(Text("a new device, the same agent"), model="agent-model")
    event_id = await human.send(vault, "can the new device read me?")
    reply = await human.wait_for(thread_replies(event_id, helper_id))
    assert reply.get("decrypted") is True and _body(reply) == "a new device, the same agent"
    assert await flagged.terminate() == 0


async def test_lost_crypto_store_of_the_router_still_stops_the_daemon(e2e: E2E):
    human = await _encrypted_human(e2e)
    config, _rooms = await _world(e2e, human)
    assert e2e.daemon is not None
    store = e2e.daemon.bots["router"].client.crypto_store_path
    await e2e.stop()
    store.unlink()
    (e2e.storage / "crypto" / "recovery-key").unlink()  # with it, the key backup would restore the store

    with pytest.raises(MatrixCryptoStoreError, match=str(store)):
        await e2e.start(config)
    await asyncio.sleep(0)
    assert not store.exists()
