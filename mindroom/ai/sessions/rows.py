"""The two rows of a finished turn, spelled as agno's session stores write them, and the check that they still are.

agno writes an agent session's row and then the run's row with SQLAlchemy statements. The batched turn
writes (`mindroom.ai.sessions.store`) run the same two statements as driver SQL: the same columns, JSON
encoding, conflict rules and run index. They rely on agno's table definitions (agno refuses, with
`MigrationRequiredError`, a stored table that does not match them) and on two of its row helpers, so
`agno_differences` compares those with what is written here before the batched writes are used.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass
from typing import Any

from agno.db.utils import build_single_run_row, json_serializer
from agno.run.agent import RunOutput
from agno.session.agent import AgentSession
from agno.utils.string import sanitize_postgres_strings

__all__ = [
    "POSTGRES",
    "RUN_COLUMNS",
    "SESSION_COLUMNS",
    "SQLITE",
    "Dialect",
    "agno_differences",
    "run_params",
    "run_sql",
    "session_params",
    "session_sql",
]

SESSION_COLUMNS = (
    "session_id",
    "session_type",
    "agent_id",
    "user_id",
    "agent_data",
    "session_data",
    "summary",
    "metadata",
    "created_at",
    "updated_at",
)
"""The session row's columns an agent session writes."""
_SESSION_UNWRITTEN = ("team_id", "workflow_id", "team_data", "workflow_data")  # a team's or workflow's
_SESSION_UPDATED = ("agent_id", "user_id", "agent_data", "session_data", "summary", "metadata")
_SESSION_FIELDS = (*_SESSION_UPDATED, "session_id", "created_at")  # what `session_params` reads of a session
_JSON_SESSION_COLUMNS = frozenset({"agent_data", "team_data", "workflow_data", "session_data", "summary", "metadata"})
_OWNERS = {
    "agent": ("agent_id", "agent_data"),
    "team": ("team_id", "team_data"),
    "workflow": ("workflow_id", "workflow_data"),
}
"""A session row's owner and owner data columns, by its kind (agno's `session_type`)."""


def _session_columns(kind: str) -> tuple[str, ...]:
    owner, owned = _OWNERS[kind]
    return ("session_id", "session_type", owner, "user_id", owned, *SESSION_COLUMNS[5:])


RUN_COLUMNS = (
    "run_id",
    "session_id",
    "run_type",
    "agent_id",
    "team_id",
    "workflow_id",
    "user_id",
    "parent_run_id",
    "status",
    "run_index",
    "run_data",
    "created_at",
    "updated_at",
)
"""The run row's columns (all of them)."""


@dataclass(frozen=True, slots=True)
class Dialect:
    """How agno's two turn statements are spelled for one database, and how it prepares their values."""

    backend: str  # agno's package for it: `agno.db.<backend>`
    mark: str  # parameter placeholder
    json: str  # cast of a JSON text parameter
    integer: str  # cast of a nullable integer parameter
    created_or_now: bool  # SQLite's store stamps a session without `created_at`; PostgreSQL's passes it on
    strip_nul: bool  # PostgreSQL text cannot hold NUL characters: agno removes them first


SQLITE = Dialect(backend="sqlite", mark="?", json="", integer="", created_or_now=True, strip_nul=False)
POSTGRES = Dialect(
    backend="postgres", mark="%s", json="::jsonb", integer="::bigint", created_or_now=False, strip_nul=True
)


def session_sql(target: str, qualifier: str, d: Dialect, kind: str = "agent") -> str:
    """agno's upsert of a session's row of `kind` (agent, team, workflow) into `target` (`qualifier` names the
    stored row)."""
    columns = _session_columns(kind)
    names = ", ".join(columns)
    marks = ", ".join(d.mark + (d.json if name in _JSON_SESSION_COLUMNS else "") for name in columns)
    updates = ", ".join(f"{name} = excluded.{name}" for name in (*columns[2:5], *_SESSION_UPDATED[3:]))
    return (
        f"INSERT INTO {target} ({names}) VALUES ({marks}) "  # noqa: S608 - agno's table name, fixed columns
        f"ON CONFLICT (session_id) DO UPDATE SET updated_at = {d.mark}, {updates} "
        f"WHERE {qualifier}.user_id = {d.mark} OR {qualifier}.user_id IS NULL"
    )


def run_sql(target: str, qualifier: str, table: str, d: Dialect) -> str:
    """agno's upsert of a run's row into `target`; a run without an index gets the session's next one."""
    names = ", ".join(RUN_COLUMNS)
    next_index = f"(SELECT COALESCE(MAX(run_index) + 1, 0) FROM {table} WHERE session_id = {d.mark})"  # noqa: S608
    marks = ", ".join(
        f"COALESCE({d.mark}{d.integer}, {next_index})"
        if name == "run_index"
        else d.mark + (d.json if name == "run_data" else "")
        for name in RUN_COLUMNS
    )
    return (
        f"INSERT INTO {target} ({names}) VALUES ({marks}) "  # noqa: S608 - agno's table name, fixed columns
        "ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, run_data = excluded.run_data, "
        "user_id = excluded.user_id, parent_run_id = excluded.parent_run_id, updated_at = excluded.updated_at, "
        f"run_index = COALESCE({qualifier}.run_index, excluded.run_index)"
    )


def session_params(session: Any, d: Dialect, kind: str = "agent") -> tuple[Any, ...]:
    """The row agno's `upsert_session` writes for a session of `kind`, as `session_sql` parameters."""
    owner, owned = _OWNERS[kind]
    data = session.to_dict(include_runs=False)
    if d.strip_nul:
        data.update({key: sanitize_postgres_strings(data[key]) for key in _JSON_SESSION_COLUMNS if data.get(key)})
    now = int(time.time())
    created = data.get("created_at") or now if d.created_or_now else data.get("created_at")
    return (
        data.get("session_id"),
        kind,
        data.get(owner),
        data.get("user_id"),
        json_serializer(data.get(owned)),
        json_serializer(data.get("session_data")),
        json_serializer(data.get("summary")),
        json_serializer(data.get("metadata")),
        created,
        created,
        now,
        data.get("user_id"),
    )


def run_params(run: Any, session_id: str, user_id: str | None, run_index: int | None, d: Dialect) -> tuple[Any, ...]:
    """The row agno's `upsert_run` writes for a run, as `run_sql` parameters."""
    row = build_single_run_row(run=run, session_id=session_id, user_id=user_id, run_index=run_index)
    values: list[Any] = []
    for name in RUN_COLUMNS:
        if name == "run_index":
            values += [row["run_index"], row["session_id"]]
        elif name == "run_data":
            data = sanitize_postgres_strings(row["run_data"]) if d.strip_nul else row["run_data"]
            values.append(json_serializer(data))
        else:
            values.append(row[name])
    return tuple(values)


def _definition_differences(table: str, definition: dict[str, Any], columns: set[str], key: str) -> list[str]:
    defined = {name for name in definition if not name.startswith("__")}
    found = [f"agno's {table} table has the column {name}, not written here" for name in sorted(defined - columns)]
    found += [f"agno's {table} table has no column {name}" for name in sorted(columns - defined)]
    keys = sorted(name for name in defined if definition[name].get("primary_key"))
    if keys != [key]:
        found.append(f"agno's {table} table is keyed by {', '.join(keys) or 'nothing'}, not {key}")
    return found


def agno_differences(store: type[Any], d: Dialect) -> list[str]:
    """How the installed agno's store `store` (for dialect `d`) differs from what the turn's two rows write."""
    found = []
    if not callable(getattr(store, "_get_table", None)):
        found.append(f"{store.__name__} has no _get_table")
    schemas = importlib.import_module(f"agno.db.{d.backend}.schemas")
    sessions = schemas.get_table_schema_definition("sessions")
    found += _definition_differences("sessions", sessions, {*SESSION_COLUMNS, *_SESSION_UNWRITTEN}, "session_id")
    found += _definition_differences("runs", schemas.get_table_schema_definition("runs"), set(RUN_COLUMNS), "run_id")
    probe = RunOutput(run_id="probe", session_id="probe", agent_id="probe")
    built = set(build_single_run_row(run=probe, session_id="probe"))
    if built != set(RUN_COLUMNS):
        found.append(f"agno builds a run row of {', '.join(sorted(built))}")
    fields = set(AgentSession(session_id="probe").to_dict(include_runs=False))
    found += [f"agno's session dict has no {name}" for name in _SESSION_FIELDS if name not in fields]
    return found
