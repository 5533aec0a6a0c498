"""`mindroom doctor`'s list of the settings changed from chat (`!model`, `!config` ...), read without the lock.

Each override names what it overrides. One that no longer fits `config.yaml` (its key moved, its model is
gone), or one kept from before of a key chat may not change (`mindroom.config.chat_settable`), is passed
over by the daemon: it is listed as a warning, with `!config reset` as the way out.
The rows are read as the state check reads the state: SQLite opened read-only, PostgreSQL in one short
read-only session; nothing is created or written.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mindroom.cli.doctor_result import CheckResult, check_ok, check_warn
from mindroom.config.effective import passed_over
from mindroom.config.environment import DaemonEnvironment
from mindroom.config.loading import read_config_text
from mindroom.config.main import Config
from mindroom.config.overrides import Override
from mindroom.daemon.standby import database_url
from mindroom.errors import ConfigError

__all__ = ["check_overrides", "read_overrides"]

_NAME = "chat settings"
_COLUMNS = "scope, key, value, set_by, set_at, room_id, thread_id"


def _rows(rows: list[tuple[Any, ...]]) -> list[Override]:
    return [
        Override(scope, key, json.loads(value), by, at, room, thread)
        for scope, key, value, by, at, room, thread in rows
    ]


def read_overrides(storage_root: Path, url: str | None) -> list[Override]:
    """The overrides the state keeps, oldest first (none when there is no store yet)."""
    if url is None:
        path = storage_root / "state" / "overrides.db"
        if not path.exists():
            return []
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return _rows(db.execute(f"SELECT {_COLUMNS} FROM overrides ORDER BY set_at").fetchall())  # noqa: S608
        except sqlite3.OperationalError:
            return []
        finally:
            db.close()
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=5, application_name="mindroom-doctor") as conn:
        conn.execute("SET default_transaction_read_only = on")
        found = conn.execute("SELECT to_regclass('mindroom.overrides') IS NOT NULL").fetchone()
        if not found or not found[0]:
            return []
        return _rows(conn.execute(f"SELECT {_COLUMNS} FROM mindroom.overrides ORDER BY set_at").fetchall())  # noqa: S608


async def check_overrides(
    config: Config, config_path: Path, storage_root: Path, env: Mapping[str, str]
) -> list[CheckResult]:
    """One line per setting changed from chat (a warning for those that no longer fit `config.yaml`)."""
    url = database_url(DaemonEnvironment(config_path=config_path, storage_root=storage_root, values=env), config)
    try:
        overrides = await asyncio.to_thread(read_overrides, storage_root, url)
    except Exception as exc:  # the state check already says why the state cannot be read
        return [check_warn(_NAME, f"cannot read them ({type(exc).__name__})")]
    if not overrides:
        return [check_ok(_NAME, "none: config.yaml holds every setting")]
    try:
        text = read_config_text(config_path)
    except ConfigError as exc:  # the config check already says what is wrong with the file
        return [check_warn(_NAME, f"cannot check them against config.yaml: {exc.problems[0]}")]
    results = []
    for override in overrides:
        why = await asyncio.to_thread(passed_over, override, config, text, config_path, env)
        if why is not None:
            fix = f"`!config reset {override.key}`" if override.scope == "config" else "reset it from chat"
            results.append(check_warn(_NAME, f"{override.describe()}: {why}; passed over", fix))
        else:
            results.append(check_ok(_NAME, override.describe()))
    return results
