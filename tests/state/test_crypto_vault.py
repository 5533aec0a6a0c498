"""The bots' crypto items round-trip on both backends: what one daemon kept, the next one (after the lock) reads."""

from __future__ import annotations

import stat
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from mindroom.state.backend import StateBackend
from mindroom.state.crypto import CryptoVault
from mindroom.state.location import open_state_backend
from mindroom.state.sqlite.crypto import SqliteCryptoVault

pytestmark = pytest.mark.asyncio


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest) -> str | None:
    return request.getfixturevalue("postgres_url") if request.param == "postgresql" else None


async def _vault(data: Path, url: str | None, opened: list[StateBackend]) -> CryptoVault:
    backend = open_state_backend(data, url)
    opened.append(backend)
    await backend.acquire()
    stores = await backend.open_stores()
    # With state in SQLite the backend leaves the crypto items to files the Matrix layer opens itself.
    return stores.crypto if stores.crypto is not None else SqliteCryptoVault(data)


async def test_crypto_vault_items_round_trip_per_bot(tmp_path: Path, url: str | None, opened: list[StateBackend]):
    vault = await _vault(tmp_path / "data", url, opened)
    assert vault.load("helper") == {}
    vault.put("helper", "secret", "backup", b"\x00key")
    vault.put_many("helper", [("backed_up", "s1", b"1"), ("backed_up", "s2", b"1"), ("device", "d", b"old")])
    vault.put("helper", "device", "d", b"new")
    vault.put("router", "secret", "backup", b"router's")
    vault.delete("helper", "backed_up", "s2")
    vault.put_many("helper", [("olm", "a", b"a"), ("olm", "b", b"b")])
    vault.delete("helper", "olm")
    await opened[0].close()

    again = await _vault(tmp_path / "data", url, opened)

    assert again.load("helper") == {
        ("secret", "backup"): b"\x00key",
        ("backed_up", "s1"): b"1",
        ("device", "d"): b"new",
    }
    assert again.load("router") == {("secret", "backup"): b"router's"}
    assert again.bots() == ["helper", "router"]
    assert again.shared is (url is not None)
    if url is not None:
        password = urlsplit(url).password
        assert "mindroom.crypto_items" in again.location and password and password not in again.location


async def test_crypto_vault_sqlite_files_are_private_and_made_only_when_written(tmp_path: Path):
    vault = SqliteCryptoVault(tmp_path)

    assert vault.load("helper") == {}
    vault.delete("helper", "olm")
    assert not (tmp_path / "crypto" / "helper").exists()
    vault.put("helper", "secret", "x", b"y")

    path = tmp_path / "crypto" / "helper" / "vault.db"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    vault.close()
