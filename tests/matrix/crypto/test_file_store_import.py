"""Moving a device's nio file store into a vault while other bots' stores are in use in the same process."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from nio.crypto import OlmAccount

from mindroom.matrix.crypto.bot_vault import BotVault
from mindroom.matrix.crypto.file_store_import import import_file_store, read_file_store, write_file_store
from mindroom.matrix.crypto.store import CRYPTO_DB_NAME, PICKLE_KEY, CryptoStore, crypto_store_dir, prepare_crypto_store
from mindroom.matrix.crypto.vault_store import VaultStore
from mindroom.state.sqlite.crypto import SqliteCryptoVault

BOTS = ("ada", "bob", "cyd", "dee", "eve")
ROUNDS = 8


def _file_store(storage: Path, bot: str) -> tuple[str, str]:
    """A device's file store holding an account and one encrypted room of its own; its identity key."""
    directory = crypto_store_dir(storage, bot)
    prepare_crypto_store(directory)
    store = CryptoStore(f"@{bot}:hs", f"DEV{bot.upper()}", str(directory), PICKLE_KEY, CRYPTO_DB_NAME)
    account = OlmAccount()
    store.save_account(account)
    store.save_encrypted_rooms({f"!{bot}:hs"})
    store.database.close()
    return bot, account.identity_keys["curve25519"]


def test_file_store_import_copies_the_account_and_rooms_into_the_vault(tmp_path: Path):
    bot, identity = _file_store(tmp_path, "ada")
    vault = SqliteCryptoVault(tmp_path / "vault")

    copied = import_file_store(crypto_store_dir(tmp_path, bot), "@ada:hs", "DEVADA", BotVault(vault, bot, None, {}))

    loaded = VaultStore("@ada:hs", "DEVADA", BotVault(vault, bot, None, vault.load(bot)), PICKLE_KEY)
    assert copied == 2  # the account and the room
    assert loaded.load_account().identity_keys["curve25519"] == identity
    assert loaded.load_encrypted_rooms() == {"!ada:hs"}
    assert read_file_store(tmp_path / "nothing", "@ada:hs", "DEVADA") is None


@pytest.mark.asyncio
async def test_file_store_import_of_many_bots_at_once_gives_each_its_own_keys(tmp_path: Path):
    """As the bots' first starts on PostgreSQL do: read on the loop, write on worker threads, all at once, while
    a running bot reads its own store on the loop."""
    storage = tmp_path / "data"
    identities = dict(_file_store(storage, bot) for bot in BOTS)
    running = CryptoStore("@run:hs", "DEVRUN", str(_prepared(tmp_path / "running")), PICKLE_KEY, CRYPTO_DB_NAME)
    running.save_account(OlmAccount())
    running.save_encrypted_rooms({"!run:hs"})
    misread: list[object] = []
    stop = asyncio.Event()

    async def running_bot() -> None:
        while not stop.is_set():
            if (rooms := running.load_encrypted_rooms()) != {"!run:hs"}:
                misread.append(rooms)
            await asyncio.sleep(0)

    async def first_start(vault: SqliteCryptoVault, bot: str) -> None:
        await asyncio.sleep(0)
        contents = read_file_store(crypto_store_dir(storage, bot), f"@{bot}:hs", f"DEV{bot.upper()}")
        assert contents is not None
        await asyncio.to_thread(write_file_store, contents, BotVault(vault, bot, None, {}))

    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)  # threads take turns as often as on a loaded machine
    reader = asyncio.create_task(running_bot())
    try:
        for round_ in range(ROUNDS):
            vault = SqliteCryptoVault(tmp_path / f"vault-{round_}")
            await asyncio.gather(*(first_start(vault, bot) for bot in BOTS))
            for bot in BOTS:
                store = VaultStore(
                    f"@{bot}:hs", f"DEV{bot.upper()}", BotVault(vault, bot, None, vault.load(bot)), PICKLE_KEY
                )
                assert store.load_account().identity_keys["curve25519"] == identities[bot], (round_, bot)
                assert store.load_encrypted_rooms() == {f"!{bot}:hs"}, (round_, bot)
            vault.close()
    finally:
        sys.setswitchinterval(switch_interval)
        stop.set()
        await reader
        running.database.close()
    assert misread == []


def _prepared(directory: Path) -> Path:
    prepare_crypto_store(directory)
    return directory
