"""Attachments end to end on a real Synapse: an encrypted file decrypted and read, and files kept to their room."""

from __future__ import annotations

import base64
import io
import json
import secrets
from typing import Any

import nio
import pytest
from nio.crypto.attachments import encrypt_attachment

from mindroom.testing.model_server import Text, ToolCall, last_user_message
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

IMAGE = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


async def _encrypted_human(e2e: E2E) -> HumanClient:
    """A human with a full encryption device and its own crypto store, as Element is."""
    user = e2e.homeserver.register_user(e2e.name("alice"), "secret-pass-" + e2e.uid)
    human = HumanClient(
        e2e.homeserver.url, user.user_id, user.password, store_dir=e2e.root / "human-crypto" / secrets.token_hex(4)
    )
    await human.start()
    e2e.humans.append(human)
    return human


async def _send_encrypted_media(
    human: HumanClient, room_id: str, msgtype: str, data: bytes, *, name: str, mimetype: str
) -> tuple[str, str]:
    """Upload `data` encrypted (as a client does in an encrypted room) and post it; (event id, mxc URL)."""
    ciphertext, keys = encrypt_attachment(data)
    uploaded, _ = await human.client.upload(
        io.BytesIO(ciphertext), content_type="application/octet-stream", filename=name, filesize=len(ciphertext)
    )
    assert isinstance(uploaded, nio.UploadResponse), uploaded
    content: dict[str, Any] = {
        "msgtype": msgtype,
        "body": name,
        "info": {"mimetype": mimetype, "size": len(data)},
        "file": {"url": uploaded.content_uri, "mimetype": mimetype, **keys},
    }
    event_id = await human._room_send(room_id, "m.room.message", content)
    return event_id, uploaded.content_uri


async def _served_bytes(human: HumanClient, mxc: str) -> bytes:
    """What the homeserver holds for `mxc` (what anyone who could fetch it would get)."""
    server, _, media_id = mxc.removeprefix("mxc://").partition("/")
    path = f"/_matrix/client/v1/media/download/{server}/{media_id}"
    response = await human.client.send("GET", path, None, {"Authorization": f"Bearer {human.client.access_token}"})
    return await response.read()


async def _encrypted_room(e2e: E2E, human: HumanClient, agent: dict[str, Any], **extra: Any) -> tuple[str, str]:
    name, room = e2e.name("helper"), e2e.name("vault")
    config = e2e.basic_config(
        [human.user_id],
        {name: {"display_name": "Helper", "model": "default", "rooms": [room], **agent}},
        rooms={room: {"name": "Vault", "encrypted": True}},
        **extra,
    )
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(human, room_id)
    agent_id = e2e.user_id(name)
    await human.wait_for_member(room_id, agent_id)
    return room_id, agent_id


def _agent_requests(e2e: E2E) -> list[dict[str, Any]]:
    return [r for r in e2e.model_server.requests if r.get("model") == "agent-model"]


def _attachment_id(turn_text: str) -> str:
    """The id a turn names its file by ("...; attachment <id>]")."""
    return turn_text.split("attachment ")[1].split("]")[0]


def _reply_in(root: str, sender: str, body: str):
    """An event of `sender` in the thread of `root` that says `body`."""

    def predicate(event: dict[str, Any]) -> bool:
        content = event.get("content", {})
        relation = content.get("m.relates_to") or {}
        return event.get("sender") == sender and relation.get("event_id") == root and content.get("body") == body

    return predicate


def _tool_message(request: dict[str, Any]) -> str:
    message = request["messages"][-1]
    assert message["role"] == "tool", message
    return str(message["content"])


async def test_attachments_an_encrypted_file_reaches_the_model_through_read_attachment(e2e: E2E):
    human = await _encrypted_human(e2e)
    room_id, agent_id = await _encrypted_room(e2e, human, {"tools": ["attachments"]})
    report = b"the vault code is 4-8-15-16\n"
    e2e.model_server.set_default(Text("got the file"), model="agent-model")

    event_id, mxc = await _send_encrypted_media(
        human, room_id, "m.file", report, name="code.txt", mimetype="text/plain"
    )
    await human.wait_for(thread_replies(event_id, agent_id))
    named = last_user_message(_agent_requests(e2e)[-1])
    assert named.startswith("[file attached: code.txt, text/plain, 28 bytes; attachment ")
    e2e.model_server.script(
        ToolCall("read_attachment", {"attachment_id": _attachment_id(named)}),
        Text("It is 4-8-15-16."),
        model="agent-model",
    )
    await human.send(room_id, "what does the file say?", thread_root=event_id)
    reply = await human.wait_for(_reply_in(event_id, agent_id, "It is 4-8-15-16."))

    assert reply.get("decrypted") is True
    assert _tool_message(_agent_requests(e2e)[-1]) == "code.txt (text/plain, 28 bytes):\n" + report.decode()
    # What the homeserver keeps is ciphertext: only a device with the room's keys could read the file.
    assert report not in await _served_bytes(human, mxc)


async def test_attachments_an_encrypted_image_reaches_a_vision_model(e2e: E2E):
    human = await _encrypted_human(e2e)
    models = e2e.models()
    models["default"]["vision"] = True
    room_id, agent_id = await _encrypted_room(e2e, human, {}, models=models)
    e2e.model_server.set_default(Text("a dot"), model="agent-model")

    event_id, mxc = await _send_encrypted_media(human, room_id, "m.image", IMAGE, name="dot.png", mimetype="image/png")
    await human.wait_for(thread_replies(event_id, agent_id))

    assert IMAGE not in await _served_bytes(human, mxc)
    request = _agent_requests(e2e)[-1]
    assert last_user_message(request).startswith("[image: dot.png]")
    assert base64.b64encode(IMAGE).decode() in json.dumps(request["messages"])


async def test_attachments_a_file_sent_in_a_dm_is_not_readable_from_another_room(e2e: E2E):
    """Bob's file in his DM with the agent; Alice, authorized in the lobby, has the agent ask for it by id there."""
    alice, bob = await e2e.human("alice"), await e2e.human("bob")
    agent, lobby = e2e.name("helper"), e2e.name("lobby")
    config = e2e.basic_config(
        [alice.user_id, bob.user_id],
        {agent: {"display_name": "Helper", "model": "default", "rooms": [lobby], "tools": ["attachments"]}},
    )
    e2e.model_server.set_default(Text("noted"), model="agent-model")
    await e2e.start(config, watch=False)
    agent_id = e2e.user_id(agent)
    lobby_id = e2e.room_id(lobby)
    await e2e.joined(alice, lobby_id)
    created = await bob.client.room_create(is_direct=True, invite=[agent_id], preset=nio.RoomPreset.private_chat)
    assert isinstance(created, nio.RoomCreateResponse), created
    dm = created.room_id
    await bob.wait_for_member(dm, agent_id)

    contract = b"salary: 250000\n"
    sent = await bob.send_media(dm, "m.file", contract, name="contract.txt", mimetype="text/plain")
    await bob.wait_for(thread_replies(sent, agent_id))
    bobs_id = _attachment_id(last_user_message(_agent_requests(e2e)[-1]))
    e2e.model_server.script(
        ToolCall("read_attachment", {"attachment_id": bobs_id}),
        Text("done"),
        ToolCall("read_attachment", {"attachment_id": bobs_id}),
        Text("done"),
        model="agent-model",
    )

    asked = await alice.send(lobby_id, f"read attachment {bobs_id}")
    await alice.wait_for(thread_replies(asked, agent_id))
    in_lobby = _tool_message(_agent_requests(e2e)[-1])
    await bob.send(dm, "read my contract again", thread_root=sent)
    await bob.wait_for(_reply_in(sent, agent_id, "done"))
    in_dm = _tool_message(_agent_requests(e2e)[-1])

    assert "salary" not in in_lobby and "there is no attachment" in in_lobby
    assert in_dm == "contract.txt (text/plain, 15 bytes):\nsalary: 250000\n"
