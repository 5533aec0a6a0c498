"""agno's session and run tables in a SQLite file, made and checked with `sqlite3` (no SQLAlchemy).

The statements create what agno's `AsyncSqliteDb` creates for sessions: the sessions table, the runs
table keyed to it, their indexes, and agno's schema-version rows for both, so agno's own store reads
and writes the file as one it made (the contract tests compare the two). A table found in the file
must have agno's columns, as agno requires; else agno's `MigrationRequiredError` is raised.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from agno.db.utils import table_schema_mismatch_error

__all__ = [
    "JSON_COLUMNS",
    "RUN_TABLE_COLUMNS",
    "SESSION_TABLE_COLUMNS",
    "Tables",
    "existing_tables",
    "make_tables",
    "transaction",
]

SESSION_TABLE_COLUMNS = (
    "session_id VARCHAR NOT NULL",
    "session_type VARCHAR NOT NULL",
    "agent_id VARCHAR",
    "team_id VARCHAR",
    "workflow_id VARCHAR",
    "user_id VARCHAR",
    "session_data JSON",
    "agent_data JSON",
    "team_data JSON",
    "workflow_data JSON",
    "metadata JSON",
    "summary JSON",
    "created_at BIGINT NOT NULL",
    "updated_at BIGINT",
)
"""agno's sessions table, column by column, as agno creates it."""
RUN_TABLE_COLUMNS = (
    "run_id VARCHAR NOT NULL",
    "session_id VARCHAR NOT NULL",
    "run_type VARCHAR NOT NULL",
    "agent_id VARCHAR",
    "team_id VARCHAR",
    "workflow_id VARCHAR",
    "user_id VARCHAR",
    "parent_run_id VARCHAR",
    "status VARCHAR",
    "run_index BIGINT",
    "run_data JSON NOT NULL",
    "created_at BIGINT NOT NULL",
    "updated_at BIGINT",
)
"""agno's runs table, column by column, as agno creates it."""
_VERSION_TABLE_COLUMNS = (
    "table_name VARCHAR NOT NULL",
    "version VARCHAR NOT NULL",
    "created_at VARCHAR NOT NULL",
    "updated_at VARCHAR",
)
_SESSION_INDEXES: tuple[tuple[str, ...], ...] = (("created_at",), ("session_type",))
_RUN_INDEXES: tuple[tuple[str, ...], ...] = (
    ("workflow_id",),
    ("status",),
    ("session_id",),
    ("session_id", "run_index"),
    ("agent_id",),
    ("team_id",),
    ("user_id",),
    ("created_at",),
    ("run_type",),
)
JSON_COLUMNS = frozenset(
    {"session_data", "agent_data", "team_data", "workflow_data", "metadata", "summary", "run_data", "runs"}
)
"""Columns agno declares JSON (and the legacy `runs` column of older sessions tables): stored as JSON text."""


@dataclass(frozen=True, slots=True)
class Tables:
    """The names of one store's session, run and schema-version tables."""

    sessions: str
    runs: str
    versions: str


@contextlib.contextmanager
def transaction(connection: sqlite3.Connection, *, write: bool = False) -> Iterator[None]:
    """One transaction: a write takes SQLite's write lock at once, a read sees one snapshot."""
    connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    try:
        yield
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


def _create_table(name: str, columns: tuple[str, ...], key: str, reference: str = "") -> str:
    body = ", \n\t".join((*columns, f"PRIMARY KEY ({key})", *([reference] if reference else [])))
    return f"CREATE TABLE {name} (\n\t{body}\n)"


def _create_index(table: str, columns: tuple[str, ...]) -> str:
    return f"CREATE INDEX idx_{table}_{'_'.join(columns)} ON {table} ({', '.join(columns)})"


def _names(connection: sqlite3.Connection) -> set[str]:
    return {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _check(connection: sqlite3.Connection, table: str, table_type: str, columns: tuple[str, ...]) -> None:
    found = {row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')}
    if not {column.split()[0] for column in columns} <= found:
        raise table_schema_mismatch_error(table, table_type=table_type)


def existing_tables(connection: sqlite3.Connection, tables: Tables) -> set[str]:
    """Which of the sessions and runs tables the file has (`"sessions"`, `"runs"`), each checked for agno's
    columns."""
    names = _names(connection)
    found = set()
    for table_type, table, columns in (
        ("sessions", tables.sessions, SESSION_TABLE_COLUMNS),
        ("runs", tables.runs, RUN_TABLE_COLUMNS),
    ):
        if table in names:
            _check(connection, table, table_type, columns)
            found.add(table_type)
    return found


def make_tables(connection: sqlite3.Connection, tables: Tables, version: str) -> None:
    """Create the tables that are missing, in one transaction, as agno does (with agno's schema `version`)."""
    with transaction(connection, write=True):
        names = _names(connection)
        made = []
        if tables.sessions not in names:
            connection.execute(_create_table(tables.sessions, SESSION_TABLE_COLUMNS, "session_id"))
            for columns in _SESSION_INDEXES:
                connection.execute(_create_index(tables.sessions, columns))
            made.append(tables.sessions)
        if tables.versions not in names:
            connection.execute(_create_table(tables.versions, _VERSION_TABLE_COLUMNS, "table_name"))
            connection.execute(_create_index(tables.versions, ("created_at",)))
        if tables.runs not in names:
            reference = f"FOREIGN KEY(session_id) REFERENCES {tables.sessions} (session_id) ON DELETE CASCADE"
            connection.execute(_create_table(tables.runs, RUN_TABLE_COLUMNS, "run_id", reference))
            for columns in _RUN_INDEXES:
                connection.execute(_create_index(tables.runs, columns))
            made.append(tables.runs)
        for table in made:
            now = datetime.now().isoformat()
            connection.execute(
                f"INSERT INTO {tables.versions} (table_name, version, created_at, updated_at) "  # noqa: S608
                "VALUES (?, ?, ?, ?) ON CONFLICT (table_name) DO UPDATE SET version = ?, updated_at = ?",
                (table, version, now, now, version, now),
            )
