"""`mindroom knowledge status` and `reindex`: the indexes as the CLI sees and rebuilds them, SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mindroom.cli.app import app
from tests.state.postgres_server import postgres_server, postgres_url

__all__ = ["postgres_server", "postgres_url"]

runner = CliRunner()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def state_url(request: pytest.FixtureRequest) -> str | None:
    return request.getfixturevalue("postgres_url") if request.param == "postgres" else None


def _config(folder: Path, database_url: str | None) -> Path:
    docs = folder / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\nTurn the valve clockwise.")
    (docs / "old.txt").write_bytes("caf\xe9".encode("latin-1"))
    config: dict[str, object] = {
        "models": {"default": {"provider": "offline", "id": "offline"}},
        "agents": {"assistant": {"display_name": "Assistant", "knowledge_bases": ["docs"]}},
        "knowledge_bases": {"docs": {"path": "docs"}, "shelf": {"path": "shelf", "mode": "files"}},
    }
    if database_url is not None:
        config["storage"] = {"database_url": database_url}
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _run(config: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["knowledge", *args, "-c", str(config), "--storage-path", str(config.parent / "data")])
    return result.exit_code, result.output


def test_knowledge_reindex_builds_and_status_shows_counts_and_skipped_files(tmp_path: Path, state_url: str | None):
    config = _config(tmp_path, state_url)

    before = _run(config, "status")
    built = _run(config, "reindex", "docs")
    after = _run(config, "status")

    assert before[0] == 0 and "docs: not built" in before[1]
    assert built[0] == 0, built[1]
    assert "docs: indexed 1 files" in built[1] and "skipped old.txt: not UTF-8 text" in built[1]
    assert after[0] == 0
    assert "docs: ready; 1 files, 1 chunks, 0 vectors; searched by words" in after[1]
    assert "skipped old.txt: not UTF-8 text" in after[1]
    assert "shelf: files mode (no index)" in after[1]
    assert (tmp_path / "data" / "knowledge_db").is_dir() == (state_url is None)


def test_knowledge_reindex_refuses_an_unknown_base(tmp_path: Path):
    code, output = _run(_config(tmp_path, None), "reindex", "nope")

    assert code == 2
    assert "no indexed knowledge base 'nope' (known: docs)" in output
