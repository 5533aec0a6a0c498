"""Usage read without the state's lock (the running daemon writes it): the SQLite file read-only, or one query
on a short PostgreSQL session. For `mindroom usage`; turns the daemon has not written yet (at most its last
few seconds) are not in it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from mindroom.config.project_extras import install_extra_command
from mindroom.state.errors import StateError
from mindroom.state.location import is_postgres_url, safe_url
from mindroom.state.usage import UsageQuery, UsageTotals, query_sql, totals_of

__all__ = ["read_usage"]


def read_usage(storage_root: Path, database_url: str | None, query: UsageQuery) -> list[UsageTotals]:
    """The sums `query` asks for, from the state of this data directory (or database); none when nothing is kept."""
    if not is_postgres_url(database_url):
        path = storage_root / "state" / "usage.db"
        if not path.is_file():
            return []
        sql, params = query_sql(query, "usage", "?")
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return totals_of(db.execute(sql, params).fetchall(), len(query.group_by))
        except sqlite3.Error as exc:
            raise StateError(f"cannot read usage from {path}: {exc}") from exc
        finally:
            db.close()
    assert database_url is not None
    try:
        import psycopg
    except ImportError as exc:
        raise StateError("usage in PostgreSQL needs the psycopg driver: " + install_extra_command("postgres")) from exc
    sql, params = query_sql(query, "mindroom.usage", "%s")
    try:
        with psycopg.connect(database_url, connect_timeout=5, application_name="mindroom-cli") as conn:
            return totals_of(conn.execute(sql, params).fetchall(), len(query.group_by))  # type: ignore[arg-type]
    except psycopg.errors.UndefinedTable:
        return []
    except psycopg.Error as exc:
        raise StateError(f"cannot read usage from the state database at {safe_url(database_url)}: {exc}") from exc
