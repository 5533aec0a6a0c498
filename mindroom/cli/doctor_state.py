"""`mindroom doctor`'s state checks: which backend holds the daemon's state, whether this user can use it,
and whether a daemon holds its lock now (and which one).

The backend is chosen as `mindroom run` chooses it (`daemon_state`). Nothing here takes the lock, creates or
writes anything, so a running daemon is never in the way or disturbed:

- SQLite: the files under `<data>/state` are opened for reading only (a database's first bytes are its
  header); the lock is asked with `lock_held` (a shared, non-blocking `flock` on a descriptor of its own,
  which a holder's exclusive lock refuses and does not notice).
- PostgreSQL: one short session (5 s to connect, read-only, statement and lock timeouts) reads the
  catalog and looks the state's advisory lock up in `pg_locks` instead of trying it.

Output names the database by host, name and user, never with its password; results are redacted as made.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mindroom.cli.doctor_result import CheckResult, check_fail, check_ok, check_warn
from mindroom.config.environment import DaemonEnvironment
from mindroom.config.main import Config
from mindroom.config.project_extras import install_extra_command
from mindroom.daemon.standby import daemon_state, database_url
from mindroom.private_files import open_to_others, shared_paths
from mindroom.state.errors import StateError
from mindroom.state.location import is_postgres_url, safe_url
from mindroom.state.sqlite.backend import LOCK_FILENAME, SqliteState, lock_held, read_lock_file

if TYPE_CHECKING:
    import psycopg

__all__ = ["check_postgres_state", "check_sqlite_state", "check_state"]

_STATE = "state"
_LOCK = "state lock"
_PASSWORD = "state password"
_CONNECT_TIMEOUT_S = 5
_SESSION = (
    "SET default_transaction_read_only = on",
    "SET statement_timeout = 5000",
    "SET lock_timeout = 2000",
)
_SQLITE_HEADER = b"SQLite format 3\x00"
_OWNER_FIX = "run doctor as the daemon's user; if that fails too: chown -R <the daemon's user> {path}"
_URL_FIX = "check MINDROOM_DATABASE_URL (or storage.database_url), that the server runs and takes this user"
_FREE = "free: no daemon runs on this state"
_PLAIN_NAME = re.compile(r"^[a-z_][a-z0-9_$]*$")


async def check_state(
    config: Config, config_path: Path, storage_root: Path, env: Mapping[str, str]
) -> list[CheckResult]:
    """`state`, `state lock` (and `state password` when the file holding it is open to others)."""
    environment = DaemonEnvironment(config_path=config_path, storage_root=storage_root, values=env)
    url = database_url(environment, config)
    if url and not is_postgres_url(url):
        return [check_fail(_STATE, "the database URL is not a postgresql:// URL", _URL_FIX)]
    if url and importlib.util.find_spec("psycopg") is None:
        return [check_fail(_STATE, "state in PostgreSQL needs the psycopg driver", install_extra_command("postgres"))]
    try:
        state = daemon_state(environment, config)  # not connected, not locked; registers the URL's password
    except StateError as exc:
        return [check_fail(_STATE, str(exc), _URL_FIX)]
    if isinstance(state, SqliteState):
        return await asyncio.to_thread(check_sqlite_state, state.state_dir)
    assert url is not None
    results = await asyncio.to_thread(check_postgres_state, url)
    password = _password_file(url, config_path, env)
    if password is not None:
        results.append(password)
    return results


# -- SQLite --------------------------------------------------------------------------------------------------


def check_sqlite_state(state_dir: Path) -> list[CheckResult]:
    """The files under `state_dir` (readable and writable by this user, private, databases intact) and the lock."""
    return [_sqlite_files(state_dir), _sqlite_lock(state_dir / LOCK_FILENAME)]


def _sqlite_files(state_dir: Path) -> CheckResult:
    where = f"SQLite in {state_dir}"
    try:
        entries = sorted(state_dir.iterdir())
    except FileNotFoundError:
        return check_ok(_STATE, f"{where}: no state yet (created on first start)")
    except NotADirectoryError:
        return check_fail(_STATE, f"{where}: it is not a folder", f"move {state_dir} away (the state folder)")
    except OSError as exc:
        return check_fail(_STATE, f"{where}: cannot read it ({exc.strerror})", _OWNER_FIX.format(path=state_dir))
    if not os.access(state_dir, os.R_OK | os.W_OK | os.X_OK):
        return check_fail(_STATE, f"{where}: this user cannot read and write in it", _OWNER_FIX.format(path=state_dir))
    files = [path for path in entries if path.is_file() and not path.is_symlink()]
    unusable = [path.name for path in files if not os.access(path, os.R_OK | os.W_OK)]
    damaged = []
    for path in files:
        if path.suffix != ".db" or path.name in unusable:
            continue
        try:
            with path.open("rb") as database:
                header = database.read(len(_SQLITE_HEADER))
        except OSError:
            unusable.append(path.name)
            continue
        if header and header != _SQLITE_HEADER:
            damaged.append(path.name)
    if unusable:
        names = ", ".join(sorted(unusable))
        return check_fail(
            _STATE, f"{where}: this user cannot read and write {names}", _OWNER_FIX.format(path=state_dir)
        )
    if damaged:
        return check_fail(
            _STATE,
            f"{where}: {', '.join(damaged)} is not a SQLite database",
            "stop the daemon and restore it from a backup (docs/operations.md#backups)",
        )
    databases = sum(1 for path in files if path.suffix == ".db")
    shared = shared_paths(state_dir)
    if shared:
        names = ", ".join(path.name for path in shared[:3]) + (", …" if len(shared) > 3 else "")
        return check_warn(
            _STATE,
            f"{where}: {databases} databases; other users may read {len(shared)} of its paths ({names}),"
            " which hold conversations",
            f"chmod -R go-rwx {state_dir}",
        )
    return check_ok(_STATE, f"{where}: {databases} databases, readable and private")


def _sqlite_lock(lock_path: Path) -> CheckResult:
    try:
        held = lock_held(lock_path)
        holder = read_lock_file(lock_path)
    except OSError as exc:
        return check_warn(
            _LOCK, f"cannot tell whether a daemon holds {lock_path} ({exc.strerror})", "run doctor as the daemon's user"
        )
    if not held:
        last = f" (the last was {holder.describe()})" if holder is not None else ""
        return check_ok(_LOCK, _FREE + last)
    if holder is None:
        return check_warn(
            _LOCK, f"held by a process that left no name in {lock_path}", f"find it with `fuser -v {lock_path}`"
        )
    return check_ok(_LOCK, f"held by a running daemon: {holder.describe()}")


# -- PostgreSQL ----------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Facts:
    database: str
    user: str
    version: str
    may_create: bool
    schema: bool
    schema_usable: bool = True
    tables: int = 0
    closed_tables: tuple[str, ...] = ()
    lock_pid: int | None = None
    lock_client: str = ""
    holder: str | None = None


def check_postgres_state(url: str) -> list[CheckResult]:
    """The database answers and lets this user run the daemon (schema `mindroom` and its tables); the lock."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        location = _describe(conninfo_to_dict(url))
    except psycopg.Error:
        location = safe_url(url)
    try:
        with psycopg.connect(
            url, autocommit=True, connect_timeout=_CONNECT_TIMEOUT_S, application_name="mindroom-doctor"
        ) as conn:
            location = _describe(
                {"host": conn.info.host, "port": conn.info.port, "dbname": conn.info.dbname, "user": conn.info.user}
            )
            for statement in _SESSION:
                conn.execute(statement)  # type: ignore[arg-type]  # constant text
            facts = _read_facts(conn)
    except psycopg.Error as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        return [
            check_fail(_STATE, f"PostgreSQL at {location}: cannot connect ({reason})", _URL_FIX),
            check_warn(_LOCK, "cannot tell whether a daemon holds it: the database did not answer"),
        ]
    return [_postgres_state(facts, location), _postgres_lock(facts)]


def _describe(params: Mapping[str, Any]) -> str:
    """`host:port, database db, user name`: where a connection goes, without its password (or any URL to redact)."""
    host = params.get("host") or "the local socket"
    where = f"{host}:{params['port']}" if params.get("port") else str(host)
    user = params.get("user") or "(the login name)"
    return f"{where}, database {params.get('dbname') or user}, user {user}"


def _read_facts(conn: psycopg.Connection[Any]) -> _Facts:
    import psycopg

    from mindroom.state.postgres.schema import LOCK_KEY, SCHEMA, read_holder

    row = conn.execute(
        "SELECT current_database(), current_user, current_setting('server_version'),"
        " has_database_privilege(current_database(), 'CREATE'), to_regnamespace(%s) IS NOT NULL",
        (SCHEMA,),
    ).fetchone()
    assert row is not None
    facts = _Facts(str(row[0]), str(row[1]), str(row[2]).split()[0], bool(row[3]), bool(row[4]))
    if facts.schema:
        tables = "FROM pg_class c WHERE c.relnamespace = to_regnamespace(%(schema)s) AND c.relkind IN ('r', 'p')"
        row = conn.execute(
            "SELECT has_schema_privilege(%(schema)s, 'USAGE, CREATE'),"  # type: ignore[arg-type]  # constant text
            f" (SELECT count(*) {tables}),"
            f" ARRAY(SELECT c.relname::text {tables}"
            " AND NOT has_table_privilege(c.oid, 'SELECT, INSERT, UPDATE, DELETE') ORDER BY 1)",
            {"schema": SCHEMA},
        ).fetchone()
        assert row is not None
        facts = dataclasses.replace(facts, schema_usable=bool(row[0]), tables=int(row[1]), closed_tables=tuple(row[2]))
    # The advisory lock of a bigint key: its high and low 32 bits as classid and objid, objsubid 1.
    row = conn.execute(
        "SELECT l.pid, coalesce(nullif(a.application_name, ''), 'no application name'), a.usename, host(a.client_addr)"
        " FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid"
        " WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1"
        " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        " AND l.classid::bigint = %s AND l.objid::bigint = %s",
        ((LOCK_KEY >> 32) & 0xFFFFFFFF, LOCK_KEY & 0xFFFFFFFF),
    ).fetchone()
    if row is None:
        return facts
    client = f"{row[1]}, user {row[2]}" + (f", from {row[3]}" if row[3] else "")
    facts = dataclasses.replace(facts, lock_pid=int(row[0]), lock_client=client)
    if facts.schema and "lock_holder" not in facts.closed_tables:
        try:
            holder = read_holder(conn)
        except psycopg.Error:
            holder = None
        facts = dataclasses.replace(facts, holder=holder.describe() if holder is not None else None)
    return facts


def _identifier(name: str) -> str:
    return name if _PLAIN_NAME.match(name) else '"' + name.replace('"', '""') + '"'


def _postgres_state(facts: _Facts, location: str) -> CheckResult:
    where = f"PostgreSQL {facts.version} at {location}"
    user, database = _identifier(facts.user), _identifier(facts.database)
    if not facts.may_create:
        # `CREATE SCHEMA IF NOT EXISTS` at every start needs it, even once the schema exists.
        return check_fail(
            _STATE,
            f"{where}: the user may not create schemas in this database, which every start of the daemon does",
            f"GRANT CREATE ON DATABASE {database} TO {user}",
        )
    if not facts.schema:
        return check_warn(
            _STATE,
            f"{where}: reachable; schema mindroom is not there yet (created on first start)",
            "nothing before the first start; after one, check that the URL names the daemon's database",
        )
    if not facts.schema_usable:
        return check_fail(
            _STATE,
            f"{where}: the user may not use and create tables in schema mindroom",
            f"GRANT USAGE, CREATE ON SCHEMA mindroom TO {user}",
        )
    if facts.closed_tables:
        names = ", ".join(facts.closed_tables[:3]) + (", …" if len(facts.closed_tables) > 3 else "")
        return check_fail(
            _STATE,
            f"{where}: the user may not read and write {len(facts.closed_tables)} tables ({names})",
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA mindroom TO {user}",
        )
    return check_ok(_STATE, f"{where}: schema mindroom, {facts.tables} tables, all usable by this user")


def _postgres_lock(facts: _Facts) -> CheckResult:
    if facts.lock_pid is None:
        return check_ok(_LOCK, _FREE)
    session = f"database session {facts.lock_pid} ({facts.lock_client})"
    if facts.holder is None and "lock_holder" in facts.closed_tables:
        return check_warn(
            _LOCK,
            f"held by {session}; this user cannot read mindroom.lock_holder, which names the daemon",
            "run doctor with the daemon's database user",
        )
    if facts.holder is None:
        return check_warn(
            _LOCK,
            f"held by {session}, which left no name",
            f"look its pid {facts.lock_pid} up in pg_stat_activity",
        )
    return check_ok(_LOCK, f"held by a running daemon: {facts.holder}; {session}")


def _password_file(url: str, config_path: Path, env: Mapping[str, str]) -> CheckResult | None:
    """A warning when a file that holds the database password may be read by other users."""
    if safe_url(url) == url:
        return None  # no password in the URL
    holders: list[Path] = []
    if env.get("MINDROOM_DATABASE_URL"):
        if env.get("MINDROOM_DATABASE_URL_FILE"):
            holders.append(Path(env["MINDROOM_DATABASE_URL_FILE"]))
        dotenv = config_path.parent / ".env"
        try:
            lines = dotenv.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            lines = []
        if any(line.strip().removeprefix("export ").startswith("MINDROOM_DATABASE_URL=") for line in lines):
            holders.append(dotenv)
    else:
        holders.append(config_path)
    shared = [path for path in holders if open_to_others(path)]
    if not shared:
        return None
    names = " ".join(str(path) for path in shared)
    return check_warn(
        _PASSWORD, f"other users may read {names}, which holds the database password", f"chmod 600 {names}"
    )
