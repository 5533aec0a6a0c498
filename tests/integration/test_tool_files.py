"""Files a tool makes arrive with the answer: in its thread, encrypted in an encrypted room, seen by hooks."""

from __future__ import annotations

import json
import secrets
from typing import Any
from urllib.parse import quote

import pytest
from nio.crypto.attachments import decrypt_attachment

from mindroom.testing.model_server import Text, ToolCall
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

KEEP_ONE = """
import json
from pathlib import Path

from mindroom.hooks import hook


@hook("message:before_response")
async def keep_one(ctx):
    listing = ctx.draft.extra_content["com.mindroom.attachments"]
    Path(ctx.settings["log"]).write_text(json.dumps(listing))
    ctx.draft.extra_content["com.mindroom.attachments"] = [e for e in listing if e["name"] != "draft.txt"]
"""


async def encrypted_human(e2e: E2E) -> HumanClient:
    user = e2e.homeserver.register_user(e2e.name("alice"), "secret-pass-" + e2e.uid)
    store = e2e.root / "human-crypto" / secrets.token_hex(4)
    human = HumanClient(e2e.homeserver.url, user.user_id, user.password, store_dir=store)
    await human.start()
    e2e.humans.append(human)
    return human


async def download(human: HumanClient, url: str) -> bytes:
    server, _, media_id = url.removeprefix("mxc://").partition("/")
    path = f"/_matrix/client/v1/media/download/{quote(server)}/{quote(media_id)}"
    response = await human.client.send("GET", path, None, {"Authorization": f"Bearer {human.client.access_token}"})
    assert response.status == 200
    return await response.read()


def is_file(root: str, agent_id: str):
    return lambda e: thread_replies(root, agent_id)(e) and e["content"].get("msgtype") == "m.file"


async def test_tool_file_arrives_encrypted_in_the_answers_thread_and_decrypts(e2e: E2E, tmp_path):
    human = await encrypted_human(e2e)
    log = tmp_path / "listing.json"
    e2e.plugin("keeper", KEEP_ONE)
    agent, room = e2e.name("helper"), e2e.name("vault")
    agents = {agent: {"display_name": "Helper", "model": "default", "rooms": [room], "tools": ["file_generation"]}}
    config = e2e.basic_config(
        [human.user_id], agents,
        rooms={room: {"name": "Vault", "encrypted": True}},
        plugins=[{"path": "plugins/keeper", "settings": {"log": str(log)}}],
    )  # fmt: skip
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    agent_id = e2e.user_id(agent)
    await human.wait_for_member(room_id, agent_id)
    e2e.model_server.script(
        ToolCall("generate_text_file", {"content": "the secret notes", "filename": "notes.txt"}),
        ToolCall("generate_text_file", {"content": "not for sending", "filename": "draft.txt"}),
        Text("Here is your file."),
        model="agent-model",
    )

    root = await human.send(room_id, "write me the notes")
    answer = await human.wait_for(
        lambda e: thread_replies(root, agent_id)(e) and e["content"].get("msgtype") == "m.text"
    )
    sent = await human.wait_for(is_file(root, agent_id))

    assert answer["content"]["body"] == "Here is your file." and "com.mindroom.attachments" not in answer["content"]
    assert sent.get("decrypted") is True and sent["content"]["body"] == "notes.txt"
    assert "url" not in sent["content"]  # the file is only reachable through its key
    file_info: dict[str, Any] = sent["content"]["file"]
    data = await download(human, file_info["url"])
    assert b"the secret notes" not in data
    plain = decrypt_attachment(data, file_info["key"]["k"], file_info["hashes"]["sha256"], file_info["iv"])
    assert plain == b"the secret notes"
    assert sent["content"]["info"] == {"mimetype": "text/plain", "size": len(b"the secret notes")}

    listing = json.loads(log.read_text())
    assert [(e["name"], e["mimetype"], e["size"]) for e in listing] == [
        ("notes.txt", "text/plain", 16), ("draft.txt", "text/plain", 15)
    ]  # fmt: skip
    assert [e["content"]["body"] for e in human.matching(is_file(root, agent_id))] == ["notes.txt"]
    bots = set(e2e.daemon.running.directory.bot_user_ids.values())
    raw = [e for e in await human.raw_timeline(room_id) if e["sender"] in bots and "state_key" not in e]
    assert {e["type"] for e in raw} == {"m.room.encrypted"}
