"""`mindroom doctor`'s crypto line of each bot, read from real crypto stores on disk."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from nio.crypto import OlmAccount

from mindroom.cli.doctor_crypto import check_crypto_stores
from mindroom.cli.doctor_result import CheckStatus
from mindroom.config.main import Config
from mindroom.matrix import BotCredentials, CredentialStore
from mindroom.matrix.crypto.store import CRYPTO_DB_NAME, PICKLE_KEY, CryptoStore, crypto_store_dir, prepare_crypto_store

pytestmark = pytest.mark.asyncio

BOTS = ("router", "ada", "bob", "cyd", "dee")
CHECKS = 40
"""Rounds of the doctor's check, each reading every bot's store: on the threads' schedule below, a doctor that
reads the stores on a worker thread gets some of them wrong within far fewer."""


def _store(storage_root: Path, bot: str) -> CryptoStore:
    directory = crypto_store_dir(storage_root, bot)
    prepare_crypto_store(directory)
    store = CryptoStore(f"@{bot}:hs", f"DEV{bot.upper()}", str(directory), PICKLE_KEY, CRYPTO_DB_NAME)
    store.save_account(OlmAccount())
    return store


async def test_doctor_crypto_reads_each_store_while_a_daemon_in_the_same_process_uses_its_own(tmp_path: Path):
    storage = tmp_path / "data"
    credentials = CredentialStore(storage)
    for bot in BOTS:
        _store(storage, bot).database.close()
        credentials.save(bot, BotCredentials(f"@{bot}:hs", f"DEV{bot.upper()}", "token"))
    config = Config.model_validate({"agents": {bot: {"display_name": bot.title()} for bot in BOTS[1:]}})
    # A daemon in this process (as in the integration tests) reads its own bot's store on the event loop.
    daemon_store = _store(tmp_path / "daemon", "eve")
    daemon_store.save_encrypted_rooms({"!vault:hs"})
    misread: list[object] = []
    stop = asyncio.Event()

    async def daemon_at_work() -> None:
        while not stop.is_set():
            rooms = daemon_store.load_encrypted_rooms()
            if rooms != {"!vault:hs"}:
                misread.append(rooms)
            await asyncio.sleep(0)

    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)  # threads take turns as often as on a loaded machine
    daemon = asyncio.create_task(daemon_at_work())
    try:
        for _ in range(CHECKS):
            lines = await check_crypto_stores(config, storage, None)
            assert [line.name for line in lines] == [f"crypto {bot}" for bot in BOTS]
            wrong = [line for line in lines if line.status is not CheckStatus.PASS]
            assert not wrong, wrong
            assert all("holds this device's keys" in line.detail for line in lines)
    finally:
        sys.setswitchinterval(switch_interval)
        stop.set()
        await daemon
        daemon_store.database.close()
    assert misread == []
