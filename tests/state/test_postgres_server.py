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
