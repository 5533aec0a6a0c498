"""People's OAuth connections on both backends: sealed values per (person, provider) survive the next daemon."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
import pytest

from mindroom.matrix.crypto.sealing import Sealer
from mindroom.oauth.vault import OAuthTokens, TokenVault
from mindroom.state.backend import StateBackend
from mindroom.state.connections import ConnectionStore
from mindroom.state.location import open_state_backend

pytestmark = pytest.mark.asyncio


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest) -> str | None:
    return request.getfixturevalue("postgres_url") if request.param == "postgresql" else None


async def _store(data: Path, url: str | None, opened: list[StateBackend]) -> ConnectionStore:
    backend = open_state_backend(data, url)
    opened.append(backend)
    await backend.acquire()
    stores = await backend.open_stores()
    assert stores.connections is not None
    return stores.connections


def _raw(data: Path, url: str | None) -> bytes:
    if url is None:
        return b"".join(path.read_bytes() for path in (data / "state").glob("connections.db*"))
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT person, provider, sealed FROM mindroom.oauth_connections").fetchall()
    return repr(rows).encode() + b"".join(bytes(row[2]) for row in rows)


async def test_connections_sealed_tokens_round_trip_and_never_rest_in_clear(
    tmp_path: Path, url: str | None, opened: list[StateBackend]
):
    data, key = tmp_path / "data", os.urandom(32)
    vault = TokenVault(await _store(data, url, opened), Sealer(key))
    vault.save("@alice:x", "acme", OAuthTokens("alice-access-token-1", "https://id/t", "alice-refresh-token-1", 5.0))
    vault.save("@bob:x", "acme", OAuthTokens("bob-access-token-1", "https://id/t"))
    vault.save("@alice:x", "github", OAuthTokens("alice-github-token-1", "https://gh/t"))
    assert vault.forget("@bob:x", "acme") and not vault.forget("@bob:x", "acme")
    await opened[0].close()

    again = TokenVault(await _store(data, url, opened), Sealer(key))

    alice = again.load("@alice:x", "acme")
    assert alice is not None and (alice.access_token, alice.refresh_token) == (
        "alice-access-token-1",
        "alice-refresh-token-1",
    )
    assert again.load("@bob:x", "acme") is None
    assert again.providers("@alice:x") == ["acme", "github"]
    assert again.connected() == [("@alice:x", "acme"), ("@alice:x", "github")]
    assert "alice-access-token-1" not in repr(alice)
    raw = _raw(data, url)
    assert raw and b"alice-access-token-1" not in raw and b"alice-refresh-token-1" not in raw
    assert TokenVault(again._store, Sealer(os.urandom(32))).load("@alice:x", "acme") is None  # another key


async def test_connections_a_sealed_value_moved_to_another_person_does_not_open(
    tmp_path: Path, url: str | None, opened: list[StateBackend]
):
    store = await _store(tmp_path / "data", url, opened)
    vault = TokenVault(store, Sealer(os.urandom(32)))
    vault.save("@alice:x", "acme", OAuthTokens("alice-access-token-2", "https://id/t"))
    sealed = store.get("@alice:x", "acme")
    assert sealed is not None

    store.put("@mallory:x", "acme", sealed)

    assert vault.load("@mallory:x", "acme") is None


@pytest.mark.postgres
async def test_connections_migrate_from_sqlite_to_postgresql_still_open(
    tmp_path: Path, postgres_url: str, opened: list[StateBackend]
):
    from mindroom.state.migrate import copy_state
    from mindroom.state.postgres.schema import create_tables

    data, key = tmp_path / "data", os.urandom(32)
    TokenVault(await _store(data, None, opened), Sealer(key)).save(
        "@alice:x", "acme", OAuthTokens("migrated-access-token", "https://id/t")
    )
    await opened[0].close()
    with psycopg.connect(postgres_url) as conn:
        create_tables(conn)
        counts = {count.kind: (count.source, count.target) for count in copy_state(data, conn)}

    moved = TokenVault(await _store(data, postgres_url, opened), Sealer(key)).load("@alice:x", "acme")

    assert counts["oauth connections"] == (1, 1)
    assert moved is not None and moved.access_token == "migrated-access-token"
