"""`mindroom chat`: who it signs in as, and how answers (streamed as edits) are followed."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mindroom.cli import app
from mindroom.cli.chat import ChatError, ReplyBoard, resolve_login
from mindroom.matrix import MatrixEvent
from mindroom.matrix.delivery import STREAM_CURSOR

ME, BOT = "@user:localhost", "@mindroom_assistant:localhost"


def _message(event_id: str, body: str, *, sender: str = BOT, thread: str | None = "$root") -> MatrixEvent:
    content: dict = {"msgtype": "m.text", "body": body}
    if thread:
        content["m.relates_to"] = {"rel_type": "m.thread", "event_id": thread}
    return MatrixEvent("!r", event_id, sender, "m.room.message", content, 1)


def _edit(event_id: str, target: str, body: str) -> MatrixEvent:
    content = {
        "body": f"* {body}",
        "m.new_content": {"body": body, "m.relates_to": {"rel_type": "m.thread", "event_id": "$root"}},
        "m.relates_to": {"rel_type": "m.replace", "event_id": target},
    }
    return MatrixEvent("!r", event_id, BOT, "m.room.message", content, 2)


def test_reply_board_follows_a_streamed_answer_until_its_final_edit():
    board = ReplyBoard(ME)
    board.watch("$root")

    assert board.feed(_message("$a", "Hel" + STREAM_CURSOR))
    assert board.feed(_edit("$e1", "$a", "Hello wor" + STREAM_CURSOR))
    assert not board.done(settle_s=0)
    assert board.feed(_edit("$e2", "$a", "Hello world"))

    assert board.done(settle_s=0)
    assert [(r.sender, r.shown_text) for r in board.replies.values()] == [(BOT, "Hello world")]


def test_reply_board_ignores_own_messages_other_threads_and_unknown_edits():
    board = ReplyBoard(ME)
    board.watch("$root")

    assert not board.feed(_message("$mine", "me again", sender=ME))
    assert not board.feed(_message("$other", "elsewhere", thread="$other-root"))
    assert not board.feed(_message("$top", "top level", thread=None))
    assert not board.feed(_edit("$e", "$unknown", "x"))
    assert not board.done(settle_s=0)


def test_reply_board_drops_a_redacted_answer():
    board = ReplyBoard(ME)
    board.watch("$root")
    board.feed(_message("$a", "draft" + STREAM_CURSOR))

    redaction = MatrixEvent("!r", "$red", BOT, "m.room.redaction", {}, 3, redacts_event_id="$a")
    assert board.feed(redaction)
    assert board.replies == {}


def test_resolve_login_prefers_options_then_environment_then_the_embedded_account(tmp_path):
    base = tmp_path / "homeserver"
    base.mkdir()
    (base / "embedded.json").write_text(json.dumps({"port": 18999}))
    (base / "user.json").write_text(json.dumps({"user_id": ME, "password": "embedded-pw"}))

    embedded = resolve_login({}, tmp_path)
    from_env = resolve_login(
        {"MATRIX_HOMESERVER": "https://hs.example/", "MINDROOM_USER": "@a:hs", "MINDROOM_USER_PASSWORD": "p"}, tmp_path
    )
    from_options = resolve_login({}, tmp_path, homeserver="http://x", user="@b:x", password="q")

    assert (embedded.url, embedded.user_id, embedded.password) == ("http://127.0.0.1:18999", ME, "embedded-pw")
    assert (from_env.url, from_env.user_id, from_env.password) == ("https://hs.example", "@a:hs", "p")
    assert (from_options.url, from_options.user_id) == ("http://x", "@b:x")
    assert "embedded-pw" not in repr(embedded)


def test_resolve_login_explains_what_to_set(tmp_path):
    with pytest.raises(ChatError, match="mindroom run"):
        resolve_login({}, tmp_path)
    with pytest.raises(ChatError, match="MINDROOM_USER_PASSWORD"):
        resolve_login({"MATRIX_HOMESERVER": "https://hs.example"}, tmp_path)


def test_chat_command_without_a_homeserver_fails_with_a_hint(tmp_path, monkeypatch):
    monkeypatch.delenv("MATRIX_HOMESERVER", raising=False)
    config = tmp_path / "config.yaml"
    config.write_text("agents: {}\n")

    result = CliRunner().invoke(app, ["chat", "-c", str(config), "-m", "hi"])

    assert result.exit_code == 2
    assert "mindroom run" in result.output
