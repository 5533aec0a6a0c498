"""The journal keeps a turn's event with the secrets a person pasted redacted, on both backends; ids stay intact."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from mindroom.state.backend import StateBackend
from tests.pasted_secrets import pasted_secrets

pytestmark = pytest.mark.asyncio

# An id a redaction of every string would break: `-sk-` and what follows has the shape of a provider key.
RELATED_ID = "$x-sk-abcdefghijklmnop0123"


def _event(message: str) -> dict:
    return {
        "room_id": "!room:localhost",
        "event_id": "$edit",
        "sender": "@alice:localhost",
        "type": "m.room.message",
        "content": {
            "msgtype": "m.text",
            "body": f"* {message}",
            "format": "org.matrix.custom.html",
            "formatted_body": f"<p>{message}</p>",
            "m.new_content": {"msgtype": "m.text", "body": message},
            "m.relates_to": {"rel_type": "m.replace", "event_id": RELATED_ID},
        },
        "origin_server_ts": 1,
    }


def _files_text(folder: Path) -> str:
    """Every value of every SQLite database under `folder`, as the files hold them."""
    found = []
    for path in sorted(folder.rglob("*.db")):
        with sqlite3.connect(path) as db:
            tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            found += [str(v) for t in tables for row in db.execute(f'SELECT * FROM "{t}"') for v in row]
    return "\n".join(found)


async def test_journal_keeps_pasted_secrets_redacted_and_near_misses_as_written(
    opener: Callable[[], StateBackend], opened: list[StateBackend], tmp_path: Path
):
    pasted = pasted_secrets(tmp_path / "daemon")
    first = opener()
    opened.append(first)
    await first.acquire()
    event = _event(pasted.message())

    assert (await first.open_stores()).journal.claim("helper", "$edit", event) is True
    await first.close()
    again = opener()
    opened.append(again)
    await again.acquire()
    [pending] = (await again.open_stores()).journal.pending("helper")

    content = pending.event["content"]
    assert content["m.relates_to"] == {"rel_type": "m.replace", "event_id": RELATED_ID}
    assert (pending.event_id, pending.event["event_id"], pending.event["sender"]) == (
        "$edit",
        "$edit",
        "@alice:localhost",
    )
    kept = json.dumps(pending.event)
    on_disk = _files_text(tmp_path / "data")
    for kind, secret in pasted.secrets.items():
        for field in (content["body"], content["formatted_body"], content["m.new_content"]["body"]):
            assert f"my {kind} is [redacted] ok." in field
        assert secret not in kept and secret not in on_disk, f"the journal keeps the {kind}"
    for near in pasted.near_misses:
        assert f"not a secret: {near} ok." in content["m.new_content"]["body"]
