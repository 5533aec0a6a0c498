"""`mindroom state migrate`: move a data directory's SQLite state into PostgreSQL, under both locks.

Refused while a daemon holds either side (the data directory's lock file, or the database's advisory
lock), so nothing changes underneath the copy. The bots' credentials and crypto state go into the database
too, sealed with the data directory's recovery key (`mindroom.matrix.crypto.file_store_import`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from mindroom.ai.memory import copy_memories
from mindroom.ai.sessions.history import copy_sessions
from mindroom.logging_config import get_logger
from mindroom.matrix.crypto.file_store_import import copy_crypto_state
from mindroom.state.errors import StateError
from mindroom.state.location import is_postgres_url, open_state_backend, safe_url
from mindroom.state.migrate import CopyCount, copy_state
from mindroom.state.sqlite.backend import SqliteState

__all__ = ["count_lines", "migrate_state"]

logger = get_logger(__name__)


async def migrate_state(storage_root: Path, url: str) -> list[CopyCount]:
    """Copy every kind of state from `storage_root` into the database at `url`; both sides' counts."""
    if not is_postgres_url(url):
        raise StateError("the target must be a postgresql:// URL")
    if not await asyncio.to_thread((storage_root / "state").is_dir):
        raise StateError(f"no daemon state under {storage_root} (its state/ folder is missing)")
    from mindroom.state.postgres.backend import PostgresState

    source = SqliteState(storage_root)
    target = open_state_backend(storage_root, url)
    assert isinstance(target, PostgresState)
    try:
        await source.acquire()
        await target.acquire()
        logger.info("copying state", source=str(storage_root), target=safe_url(url))
        counts: list[CopyCount] = await asyncio.wrap_future(
            target.connection.submit(lambda conn: copy_state(storage_root, conn))
        )
        counts += await copy_sessions(storage_root, url)
        counts += await copy_memories(storage_root, url)
        stores = await target.open_stores()
        assert stores.crypto is not None
        counts += await asyncio.to_thread(copy_crypto_state, storage_root, stores.crypto)
    finally:
        await target.close()
        await source.close()
    return counts


def count_lines(counts: list[CopyCount]) -> list[str]:
    """The counts as aligned lines: kind, SQLite rows, PostgreSQL rows, verdict."""
    width = max([len(count.kind) for count in counts] + [4])
    lines = [f"{'kind':<{width}}  {'sqlite':>8}  {'postgresql':>10}"]
    for count in counts:
        verdict = "ok" if count.verified else "MISSING"
        lines.append(f"{count.kind:<{width}}  {count.source:>8}  {count.target:>10}  {verdict}")
    return lines
