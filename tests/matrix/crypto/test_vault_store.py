"""nio's olm machine on `VaultStore`: what one machine saved, another loads (the same device), sealed or not."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
from nio.crypto import Olm, OlmDevice, TrustState

from mindroom.matrix.crypto.bot_vault import BotVault
from mindroom.matrix.crypto.sealing import Sealer, SealError
from mindroom.matrix.crypto.vault_store import VaultStore
from mindroom.state.sqlite.crypto import SqliteCryptoVault

USER, DEVICE, ROOM = "@helper:example.org", "DEVICEA", "!room:example.org"


def _machine(vault: SqliteCryptoVault, sealer: Sealer | None) -> tuple[Olm, VaultStore]:
    store = VaultStore(USER, DEVICE, BotVault(vault, "helper", sealer, vault.load("helper")), "pickle")
    return Olm(USER, DEVICE, store), store


@pytest.mark.parametrize("sealed", [False, True])
def test_vault_store_a_second_machine_loads_the_same_device(tmp_path: Path, sealed: bool):
    sealer = Sealer(secrets.token_bytes(32)) if sealed else None
    vault = SqliteCryptoVault(tmp_path)
    first, store = _machine(vault, sealer)
    told = []
    store.on_room_key = told.append
    first.create_outbound_group_session(ROOM)  # its own room key is kept as an inbound one too
    other = OlmDevice("@alice:example.org", "PHONE", {"ed25519": "ed", "curve25519": "curve"})
    store.save_device_keys({other.user_id: {other.id: other}})
    store.ignore_devices([other])
    store.save_encrypted_rooms({ROOM})
    first.save_account()

    second, _ = _machine(SqliteCryptoVault(tmp_path), sealer)

    assert second.account.identity_keys == first.account.identity_keys
    assert [s.id for s in second.inbound_group_store] == [s.id for s in first.inbound_group_store] != []
    assert [s.id for s in told] == [s.id for s in first.inbound_group_store]
    loaded = second.device_store["@alice:example.org"]["PHONE"]
    assert loaded.trust_state is TrustState.ignored and loaded.keys == other.keys
    assert second.store.load_encrypted_rooms() == {ROOM}
    raw = b"".join(vault.load("helper").values())
    assert (b'"pickle"' in raw) is not sealed


def test_vault_store_another_recovery_key_does_not_open_sealed_items(tmp_path: Path):
    vault = SqliteCryptoVault(tmp_path)
    _machine(vault, Sealer(secrets.token_bytes(32)))

    with pytest.raises(SealError, match="another recovery key") as info:
        BotVault(vault, "helper", Sealer(secrets.token_bytes(32)), vault.load("helper"))
    assert info.value.other_key


def test_vault_store_a_sealed_item_moved_to_another_bot_does_not_open(tmp_path: Path):
    vault = SqliteCryptoVault(tmp_path)
    sealer = Sealer(secrets.token_bytes(32))
    _machine(vault, sealer)
    vault.put_many("router", [(kind, key, value) for (kind, key), value in vault.load("helper").items()])

    with pytest.raises(SealError, match="changed or damaged"):
        BotVault(vault, "router", sealer, vault.load("router"))


def test_vault_store_an_account_of_another_device_is_not_loaded(tmp_path: Path):
    vault = SqliteCryptoVault(tmp_path)
    first, _ = _machine(vault, None)

    other = VaultStore(USER, "DEVICEB", BotVault(vault, "helper", None, vault.load("helper")), "pickle")

    assert other.load_account() is None
    assert first.account is not None
