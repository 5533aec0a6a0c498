"""Where a daemon's state lives: SQLite under the data directory (the default) or a PostgreSQL database URL.

`MINDROOM_DATABASE_URL` (or `storage.database_url` in `config.yaml`; the environment wins) selects
PostgreSQL; the driver is imported only then.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from mindroom.config.project_extras import install_extra_command
from mindroom.logging_config import register_secret_values
from mindroom.state.backend import StateBackend
from mindroom.state.errors import StateError
from mindroom.state.knowledge import KnowledgeIndex, knowledge_index_path

__all__ = [
    "POSTGRES_SCHEMES",
    "is_postgres_url",
    "open_knowledge_index",
    "open_state_backend",
    "read_state_snapshot",
    "safe_url",
]

POSTGRES_SCHEMES = ("postgresql", "postgres")
_NEEDS_PSYCOPG = "state in PostgreSQL needs the psycopg driver: "


def is_postgres_url(url: str | None) -> bool:
    """True for `postgresql://...` and `postgres://...`."""
    return bool(url) and urlsplit(url or "").scheme in POSTGRES_SCHEMES


def safe_url(url: str) -> str:
    """The URL without its password, in the authority or as a `password=` parameter (fit for logs and messages)."""
    parts = urlsplit(url)
    query = "&".join(p for p in parts.query.split("&") if p and not p.lower().startswith("password="))
    if query != parts.query:
        parts = parts._replace(query=query)
    if parts.password is None:
        return urlunsplit(parts)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{parts.username}@{host}" if parts.username else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _passwords(url: str) -> list[str | None]:
    parts = urlsplit(url)
    given = [p.split("=", 1)[1] for p in parts.query.split("&") if p.lower().startswith("password=")]
    return [parts.password, *given]


def open_state_backend(storage_root: Path, database_url: str | None) -> StateBackend:
    """The backend for this data directory and URL (nothing is connected or locked yet)."""
    if not database_url:
        from mindroom.state.sqlite.backend import SqliteState

        return SqliteState(storage_root)
    if not is_postgres_url(database_url):
        scheme = urlsplit(database_url).scheme or "(none)"
        raise StateError(f"the database URL's scheme {scheme!r} is not supported; use postgresql://")
    register_secret_values(_passwords(database_url))
    try:
        from mindroom.state.postgres.backend import PostgresState
    except ImportError as exc:
        raise StateError(_NEEDS_PSYCOPG + install_extra_command("postgres")) from exc
    return PostgresState(database_url, safe_url(database_url))


def read_state_snapshot(storage_root: Path, database_url: str | None, name: str) -> str | None:
    """Read a snapshot without the lock (another process writes it): the file, or one query on a short session."""
    if not is_postgres_url(database_url):
        from mindroom.state.sqlite.snapshots import FileSnapshots

        return FileSnapshots(storage_root / "state").read(name)
    assert database_url is not None
    register_secret_values(_passwords(database_url))
    try:
        import psycopg

        from mindroom.state.postgres.positions import read_snapshot
    except ImportError as exc:
        raise StateError(_NEEDS_PSYCOPG + install_extra_command("postgres")) from exc
    try:
        with psycopg.connect(database_url, connect_timeout=5, application_name="mindroom-cli") as conn:
            return read_snapshot(conn, name)
    except psycopg.Error as exc:
        raise StateError(f"cannot read the state database at {safe_url(database_url)}: {exc}") from exc


def open_knowledge_index(storage_root: Path, database_url: str | None, base_id: str) -> KnowledgeIndex:
    """One knowledge base's index: in the state's PostgreSQL database, or a SQLite file under the data directory."""
    if database_url:
        from mindroom.state.postgres.knowledge import PostgresKnowledgeIndex

        return PostgresKnowledgeIndex(database_url, base_id)
    from mindroom.state.sqlite.knowledge import SqliteKnowledgeIndex

    return SqliteKnowledgeIndex(knowledge_index_path(storage_root, base_id))
