"""Private files: created 0600 / 0700 whatever the umask, older open files tightened, open ones found and warned of."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from mindroom.private_files import (
    PRIVATE_UMASK,
    create_private_file,
    make_private,
    open_private_database,
    open_to_others,
    prepare_private_sqlite,
    private_dir,
    shared_paths,
    use_private_umask,
    warn_if_shared,
    write_private_file,
)


@pytest.fixture(autouse=True)
def _usual_umask() -> Iterator[None]:
    """Run every test under the umask most systems default to (files 0644, folders 0755)."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_private_dir_creates_missing_parents_0700_and_tightens_an_open_leaf(tmp_path: Path) -> None:
    created = private_dir(tmp_path / "data" / "sessions")
    (tmp_path / "open").mkdir(mode=0o755)

    private_dir(tmp_path / "open")

    assert _mode(created) == _mode(created.parent) == 0o700
    assert _mode(tmp_path / "open") == 0o700


def test_create_private_file_is_0600_from_the_start_and_tightens_an_old_one(tmp_path: Path) -> None:
    old = tmp_path / "state" / "old.db"
    old.parent.mkdir()
    old.write_text("kept")
    old.chmod(0o644)

    new = create_private_file(tmp_path / "state" / "new.db")
    create_private_file(old)

    assert _mode(new) == _mode(old) == 0o600
    assert old.read_text() == "kept" and new.read_text() == ""


def test_sqlite_database_and_its_side_files_stay_private(tmp_path: Path) -> None:
    path = tmp_path / "sessions" / "helper.db"
    prepare_private_sqlite(path)
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE t (x)")
    db.execute("INSERT INTO t VALUES ('a prompt and its answer')")
    db.commit()

    side_files = sorted(p.name for p in path.parent.iterdir())

    assert side_files == ["helper.db", "helper.db-shm", "helper.db-wal"]
    assert shared_paths(path.parent) == []
    db.close()


def test_prepare_private_sqlite_tightens_side_files_an_older_run_left_open(tmp_path: Path) -> None:
    path = tmp_path / "helper.db"
    for name in ("helper.db", "helper.db-wal", "helper.db-shm"):
        (tmp_path / name).write_bytes(b"")
        (tmp_path / name).chmod(0o644)

    prepare_private_sqlite(path)

    assert {_mode(tmp_path / name) for name in ("helper.db", "helper.db-wal", "helper.db-shm")} == {0o600}


def test_open_private_database_and_write_private_file_leave_nothing_open(tmp_path: Path) -> None:
    data = tmp_path / "data"
    db = open_private_database(data / "state" / "daemon.db")
    db.execute("CREATE TABLE t (x)")
    write_private_file(data / "state" / "hooks.json", "{}")
    write_private_file(data / "sync" / "token", "s1", durable=False)

    assert shared_paths(data) == []
    assert db.execute("PRAGMA cache_size").fetchone()[0] == -512  # KiB: a small page cache per connection
    db.close()


def test_shared_paths_lists_what_others_may_open_but_not_symlinks(tmp_path: Path) -> None:
    data = private_dir(tmp_path / "data")
    (data / "private.txt").write_text("x")
    (data / "private.txt").chmod(0o600)
    (data / "readable.txt").write_text("x")
    (data / "writable-by-group.txt").write_text("x")
    (data / "writable-by-group.txt").chmod(0o620)
    (data / "open-folder").mkdir()
    (data / "open-folder" / "inner.db").write_text("x")
    (data / "link").symlink_to(data / "readable.txt")

    assert shared_paths(data) == [
        data / "open-folder",
        data / "open-folder" / "inner.db",
        data / "readable.txt",
        data / "writable-by-group.txt",
    ]


def test_make_private_tightens_everything_under_a_folder(tmp_path: Path) -> None:
    base = tmp_path / "homeserver"
    (base / "media_store" / "local").mkdir(parents=True)
    (base / "homeserver.db").write_text("x")
    (base / "run.sh").write_text("x")
    (base / "run.sh").chmod(0o755)

    changed = make_private(base)

    assert len(changed) == 5 and shared_paths(base) == []
    assert _mode(base / "run.sh") == 0o700 and _mode(base / "homeserver.db") == 0o600


def test_warn_if_shared_warns_for_an_open_data_dir_only(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    own = private_dir(tmp_path / "own")

    with capture_logs() as logs:
        warned = warn_if_shared(shared)
        quiet = warn_if_shared(own) or warn_if_shared(tmp_path / "missing")

    assert warned and not quiet
    (entry,) = logs
    assert entry["log_level"] == "warning" and entry["path"] == str(shared) and entry["mode"] == "0755"
    assert entry["fix"] == f"chmod 700 {shared}"
    assert open_to_others(shared) and not open_to_others(own)


def test_use_private_umask_makes_new_files_private(tmp_path: Path) -> None:
    previous = use_private_umask()
    try:
        (tmp_path / "folder").mkdir()
        (tmp_path / "folder" / "file").write_text("x")
    finally:
        os.umask(previous)

    assert previous == 0o022 and PRIVATE_UMASK == 0o077
    assert _mode(tmp_path / "folder") == 0o700 and _mode(tmp_path / "folder" / "file") == 0o600
