"""The SQLite session store without SQLAlchemy: agent turns load none of it, agno's other store methods are
refused by name, and team sessions are stored as agno stores them."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from agno.db.base import AsyncBaseDb, SessionType
from agno.db.sqlite import AsyncSqliteDb
from agno.run.team import TeamRunOutput
from agno.session.team import TeamSession

from mindroom.ai.sessions.history import sqlite_store_class
from mindroom.ai.sessions.sqlite_store import SqliteSessions
from mindroom.private_files import shared_paths
from mindroom.testing.model_server import ScriptedModelServer, Text

_ROOT = Path(__file__).resolve().parents[3]
_TURNS = """
import asyncio, json, sys
from pathlib import Path
from mindroom.ai import generate, load_history
from mindroom.ai.agents import close_caches
from mindroom.config.main import ModelConfig
from tests.ai.test_generation import make_request

async def main():
    root = Path(sys.argv[1])
    model = ModelConfig(provider="openai", id="m", extra_kwargs={"base_url": sys.argv[2], "max_retries": 0})
    await generate(make_request(model, "first", session_id="$root", opens_session=True), storage_root=root, env={})
    await generate(make_request(model, "second", session_id="$root"), storage_root=root, env={})
    history = await load_history("helper", "$root", storage_root=root)
    await close_caches()
    loaded = sorted(name for name in sys.modules if name.split(".")[0] in {"sqlalchemy", "aiosqlite"})
    print(json.dumps({"history": history, "loaded": loaded}))

asyncio.run(main())
"""


@pytest.mark.asyncio
async def test_agent_turns_on_sqlite_load_no_sqlalchemy(model_server: ScriptedModelServer, tmp_path: Path) -> None:
    model_server.script(Text("one"), Text("two"))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _TURNS,
        str(tmp_path),
        model_server.base_url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=_ROOT,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    found = json.loads(out.decode().strip().splitlines()[-1])

    assert found["history"] == [["user", "first"], ["assistant", "one"], ["user", "second"], ["assistant", "two"]]
    assert found["loaded"] == []


@pytest.mark.asyncio
@pytest.mark.parametrize("method", sorted(AsyncBaseDb.__abstractmethods__))
async def test_every_abstract_method_is_implemented_or_refused_by_name(method: str, tmp_path: Path) -> None:
    store = sqlite_store_class()(db_file=str(tmp_path / "s.db"))
    try:
        implemented = not (getattr(SqliteSessions, method).__doc__ or "").startswith("Not implemented")
        if implemented:
            assert getattr(SqliteSessions, method) is not getattr(AsyncBaseDb, method)
        else:
            with pytest.raises(NotImplementedError, match=rf"^{method} is not implemented by the SQLite session"):
                await getattr(store, method)("x")
    finally:
        await store.close()


def _team_session(note: str) -> TeamSession:
    return TeamSession(
        session_id="t1",
        team_id="crew",
        user_id="@ann:example.org",
        team_data={"name": "Crew"},
        session_data={"note": note},
        created_at=1_700_000_000,
    )


@pytest.mark.asyncio
async def test_a_team_session_is_stored_and_read_as_agnos_store_does(tmp_path: Path) -> None:
    answers = []
    for store in (
        AsyncSqliteDb(db_file=str(tmp_path / "theirs.db")),
        sqlite_store_class()(db_file=str(tmp_path / "o.db")),
    ):
        try:
            await store.upsert_session(_team_session("one"))
            run = TeamRunOutput(run_id="r1", session_id="t1", team_id="crew", content="done", created_at=1_700_000_001)
            await store.upsert_run(run, session_id="t1", user_id="@ann:example.org")
            await store.upsert_session(_team_session("two"))
            read = await store.get_session("t1", SessionType.TEAM)
            assert read is not None
            answers.append((type(read).__name__, read.team_id, read.session_data, [r.content for r in read.runs or []]))
        finally:
            await store.close()

    assert answers[0] == ("TeamSession", "crew", {"note": "two"}, ["done"])
    assert answers[1] == answers[0]


def test_a_turn_commits_without_an_fsync_of_its_own_and_its_rows_survive_a_new_connection(tmp_path: Path) -> None:
    """WAL in NORMAL mode: a commit is durable for a crash of the daemon (another connection reads it at once),
    without the fsync FULL mode makes on every commit."""
    import sqlite3

    store = SqliteSessions(db_file=str(tmp_path / "helper.db"))
    mode = store._connection.run(lambda connection: connection.execute("PRAGMA synchronous").fetchone()[0])
    journal = store._connection.run(lambda connection: connection.execute("PRAGMA journal_mode").fetchone()[0])
    store._connection.run(lambda connection: connection.execute("CREATE TABLE probe (n INTEGER)"))
    store._connection.run(lambda connection: connection.execute("INSERT INTO probe VALUES (1)"))
    with sqlite3.connect(tmp_path / "helper.db") as other:
        assert other.execute("SELECT n FROM probe").fetchall() == [(1,)]
    store._connection.close()
    assert (mode, journal) == (1, "wal")  # 1 is NORMAL (FULL is 2)


@pytest.mark.asyncio
async def test_the_store_makes_its_file_and_folder_private_whatever_the_umask(tmp_path: Path) -> None:
    """The store itself, not only its callers, keeps a file holding every prompt and answer to the daemon's user;
    a file and folder an older version left open are tightened when the store opens them."""
    left_open = tmp_path / "old"
    left_open.mkdir(mode=0o755)
    (left_open / "helper.db").touch(mode=0o644)
    previous = os.umask(0o022)  # the usual default: files 0644, folders 0755
    try:
        for folder in (tmp_path / "new" / "sessions", left_open):
            store = SqliteSessions(db_file=str(folder / "helper.db"))
            try:
                await store.upsert_session(TeamSession(session_id="s1", team_id="crew", session_data={"n": 1}))
            finally:
                await store.close()
    finally:
        os.umask(previous)

    assert (tmp_path / "new" / "sessions" / "helper.db").is_file()
    assert shared_paths(tmp_path / "new") == [] and shared_paths(left_open) == []
