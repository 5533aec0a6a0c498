"""Threads people find again, on the real homeserver: tags and resolution set by command and by tool are room
state other clients read, only people the room allows change them, and they survive a restart."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from mindroom.api.app import create_app
from mindroom.api.app_context import ApiContext
from mindroom.api.server import ApiServer
from mindroom.api.settings import api_settings
from mindroom.daemon.wiring import DaemonApiView
from mindroom.matrix.thread_tags import THREAD_TAGS_EVENT_TYPE
from mindroom.testing.model_server import Text, ToolCall
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, eventually, thread_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

SUMMARY_KEY = "io.mindroom.thread_summary"


def threads_config(e2e: E2E, alice: str, bob: str, agent: str, room: str) -> dict[str, Any]:
    tools = [{"thread_tags": {"tags": ["bug", "blocked"]}}, "thread_resolution"]
    agents = {agent: {"display_name": "Helper", "model": "default", "rooms": [room], "tools": tools}}
    config = e2e.basic_config([alice, bob], agents)
    config["room_defaults"]["admins"] = [alice]  # alice may change thread tags; bob (power 0) may not
    return config


async def command(e2e: E2E, human: HumanClient, room_id: str, text: str, thread_root: str) -> str:
    """Send a command in a thread; the router's answer to it."""
    sent = await human.send(room_id, text, thread_root=thread_root)

    def answer(event: dict[str, Any]) -> bool:
        relates = event.get("content", {}).get("m.relates_to", {})
        return (
            thread_replies(thread_root, e2e.user_id("router"))(event)
            and relates.get("m.in_reply_to", {}).get("event_id") == sent
            and SUMMARY_KEY not in event.get("content", {})
        )

    return str((await human.wait_for(answer))["content"]["body"])


async def room_tags(human: HumanClient, room_id: str) -> dict[str, dict[str, Any]]:
    """The thread tag state events of the room as `human`'s own client reads them: state key -> content."""
    path = f"/_matrix/client/v3/rooms/{quote(room_id, safe='')}/state"
    headers = {"Authorization": f"Bearer {human.client.access_token}"}
    body = await (await human.client.send("GET", path, None, headers)).json()
    return {e["state_key"]: e["content"] for e in body if e.get("type") == THREAD_TAGS_EVENT_TYPE}


def key(root: str, tag: str) -> str:
    return json.dumps([root, tag], separators=(",", ":"))


async def test_thread_tags_and_resolution_by_command_and_tool_are_room_state_that_survives_a_restart(e2e: E2E):
    alice, bob = await e2e.human("alice"), await e2e.human("bob")
    agent, room = e2e.name("helper"), e2e.name("room")
    config = threads_config(e2e, alice.user_id, bob.user_id, agent, room)
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    await e2e.joined(bob, room_id)
    e2e.model_server.script(
        ToolCall("tag_thread", {"tag": "bug", "note": "CI only"}),
        ToolCall("resolve_thread", {}),
        Text("Tagged and resolved."),
        model="agent-model",
    )

    root = await alice.send(room_id, "the build is red; tag it and close it", mentions=[e2e.user_id(agent)])
    answer = await alice.wait_for(thread_replies(root, e2e.user_id(agent)))
    tagged = await command(e2e, alice, room_id, "!tag blocked waiting on infra", root)
    outside = await command(e2e, alice, room_id, "!tag bugs", root)  # one letter off the vocabulary
    refused = await command(e2e, bob, room_id, "!tag remove bug", root)

    assert answer["content"]["body"] == "Tagged and resolved."
    assert tagged.startswith("Tagged `blocked`.")
    assert "not one of this room's tags" in outside
    assert "may not change thread tags" in refused
    seen_by_bob = await room_tags(bob, room_id)
    assert seen_by_bob[key(root, "bug")]["set_by"] == alice.user_id  # the tool acts for the person it serves
    assert seen_by_bob[key(root, "bug")]["note"] == "CI only"
    assert seen_by_bob[key(root, "blocked")]["note"] == "waiting on infra"
    assert seen_by_bob[key(root, "resolved")]["set_by"] == alice.user_id
    assert key(root, "bugs") not in seen_by_bob

    await e2e.stop()
    await e2e.start(config)

    listed = await command(e2e, alice, room_id, "!tag", root)
    reopened = await command(e2e, alice, room_id, "!reopen", root)
    removed = await command(e2e, alice, room_id, "!tag remove bug", root)

    assert listed == "This thread has `blocked`, `bug`, `resolved`."
    assert reopened == "This thread is open again."
    assert removed == "Removed `bug`."
    after = await room_tags(bob, room_id)
    assert after[key(root, "resolved")] == {} and after[key(root, "bug")] == {}
    assert after[key(root, "blocked")]["set_by"] == alice.user_id


def answer_to(event: dict[str, Any], root: str, sender: str, question: str) -> bool:
    """Whether `event` is `sender`'s answer to `question` in the thread of `root`."""
    relates = event.get("content", {}).get("m.relates_to", {})
    return thread_replies(root, sender)(event) and relates.get("m.in_reply_to", {}).get("event_id") == question


def summary_notices(root: str, sender: str) -> Any:
    """A predicate for the summary notices `sender` posts in the thread of `root`."""

    def predicate(event: dict[str, Any]) -> bool:
        content = event.get("content", {})
        return thread_replies(root, sender)(event) and isinstance(content.get(SUMMARY_KEY), dict)

    return predicate


async def summaries_settled(e2e: E2E, human: HumanClient, room_id: str) -> None:
    """Until the daemon is idle, its summary tasks have ended, and `human` has seen all it sent."""
    assert e2e.daemon is not None and e2e.daemon.running is not None
    await e2e.idle()
    await e2e.daemon.running.stores.summaries.settled()
    await human.sync_past(room_id)


def summary_config(e2e: E2E, people: list[str], agent: str, room: str, **room_entry: Any) -> dict[str, Any]:
    agents = {agent: {"display_name": "Helper", "model": "default", "rooms": [room]}}
    models = {**e2e.models(), "summary": {**e2e.models()["default"], "id": "summary-model"}}
    config = e2e.basic_config(people, agents, models=models, rooms={room: {"name": "Work", **room_entry}})
    config["defaults"].update(thread_summary_first_threshold=3, thread_summary_subsequent_interval=2)
    config["room_thread_summary_models"] = {room: "summary"}
    return config


async def test_thread_summary_is_written_past_the_threshold_renewed_as_it_grows_and_seen_by_another_client(e2e: E2E):
    alice, bob = await e2e.human("alice"), await e2e.human("bob")
    agent, room = e2e.name("helper"), e2e.name("room")
    await e2e.start(summary_config(e2e, [alice.user_id, bob.user_id], agent, room))
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    await e2e.joined(bob, room_id)
    agent_id = e2e.user_id(agent)
    e2e.model_server.set_default(Text("Looking into it."), model="agent-model")
    e2e.model_server.script(
        Text("The build is red on CI; a fix is waiting on infra."),
        Text("**CI fixed** after the infra change; nothing open."),
        model="summary-model",
    )

    root = await alice.send(room_id, "the build is red", mentions=[agent_id])
    await alice.wait_for(thread_replies(root, agent_id))
    await summaries_settled(e2e, alice, room_id)
    assert not alice.matching(summary_notices(root, agent_id))  # two messages: under the threshold of three

    await alice.send(room_id, "any news?", thread_root=root)
    first = await bob.wait_for(summary_notices(root, agent_id))
    for text in ("and now?", "thanks"):  # the thread is read again only once it may have grown enough
        sent = await alice.send(room_id, text, thread_root=root)
        await alice.wait_for(lambda ev, sent=sent: answer_to(ev, root, agent_id, sent))
    second = await bob.wait_for(lambda ev: summary_notices(root, agent_id)(ev) and ev["event_id"] != first["event_id"])
    await summaries_settled(e2e, alice, room_id)

    assert first["content"]["msgtype"] == "m.notice"
    assert first["content"]["body"] == "The build is red on CI; a fix is waiting on infra."
    meta = first["content"][SUMMARY_KEY]
    assert (meta["version"], meta["summary"], meta["message_count"], meta["model"]) == (
        1,
        first["content"]["body"],
        4,
        "summary",
    )
    assert second["content"]["body"] == "CI fixed after the infra change; nothing open."  # plain text
    assert second["content"][SUMMARY_KEY]["message_count"] == 8  # the first notice is not counted
    summary_requests = [r for r in e2e.model_server.requests if r.get("model") == "summary-model"]
    assert len(summary_requests) == 2
    assert "the build is red" in json.dumps(summary_requests[0]["messages"])


async def test_thread_summary_in_an_encrypted_room_is_sent_encrypted_and_summary_command_writes_one_now(e2e: E2E):
    alice, bob = await e2e.human("alice", encrypted=True), await e2e.human("bob", encrypted=True)
    agent, room = e2e.name("helper"), e2e.name("vault")
    config = summary_config(e2e, [alice.user_id, bob.user_id], agent, room, encrypted=True)
    config["defaults"]["thread_summary_first_threshold"] = 50  # only !summary writes one here
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    await e2e.joined(bob, room_id)
    agent_id, router_id = e2e.user_id(agent), e2e.user_id("router")
    await alice.wait_for_member(room_id, agent_id)
    e2e.model_server.set_default(Text("The vault code is rotated weekly."), model="agent-model")
    e2e.model_server.script(Text("Vault code rotation: weekly, confirmed."), model="summary-model")

    root = await alice.send(room_id, "how often is the vault code rotated?", mentions=[agent_id])
    await alice.wait_for(thread_replies(root, agent_id))
    answer = await command(e2e, alice, room_id, "!summary", root)
    notice = await bob.wait_for(summary_notices(root, router_id))

    assert answer == "📝 Summary written (2 messages)."
    assert notice.get("decrypted") is True
    assert notice["content"]["body"] == "Vault code rotation: weekly, confirmed."
    assert notice["content"][SUMMARY_KEY]["message_count"] == 2
    requests = [r for r in e2e.model_server.requests if r.get("model") == "summary-model"]
    assert "how often is the vault code rotated?" in json.dumps(requests[0]["messages"])  # read decrypted
    bots = set(e2e.daemon.running.directory.bot_user_ids.values())
    sent = [e for e in await bob.raw_timeline(room_id) if e["sender"] in bots and "state_key" not in e]
    assert sent and {e["type"] for e in sent} == {"m.room.encrypted"}
    assert "rotation" not in json.dumps(sent)


async def test_thread_model_tool_switches_the_threads_model_for_the_next_answer_for_an_administrator(e2e: E2E):
    alice = await e2e.human("alice")
    agent, room = e2e.name("helper"), e2e.name("room")
    models = {**e2e.models(), "fast": {**e2e.models()["default"], "id": "fast-model"}}
    agents = {agent: {"display_name": "Helper", "model": "default", "rooms": [room], "tools": ["thread_model"]}}
    await e2e.start(e2e.basic_config([alice.user_id], agents, models=models, administrators=[alice.user_id]))
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    agent_id = e2e.user_id(agent)
    e2e.model_server.script(
        ToolCall("switch_thread_model", {"model_name": "fast"}), Text("Switched."), model="agent-model"
    )
    e2e.model_server.set_default(Text("Fast here."), model="fast-model")

    root = await alice.send(room_id, "use the fast model here", mentions=[agent_id])
    switched = await alice.wait_for(thread_replies(root, agent_id))
    live = e2e.daemon.running.cell
    await eventually(lambda: live.live.settings.get("thread", "model", room_id, root), "the thread's model set")
    follow_up = await alice.send(room_id, "which model now?", thread_root=root)
    answer = await alice.wait_for(
        lambda ev: (
            thread_replies(root, agent_id)(ev)
            and ev["content"].get("m.relates_to", {}).get("m.in_reply_to", {}).get("event_id") == follow_up
        )
    )

    assert switched["content"]["body"] == "Switched."
    assert answer["content"]["body"] == "Fast here."
    assert live.live.settings.get("thread", "model", room_id, root).value == "fast"


async def test_export_of_an_encrypted_thread_holds_its_decrypted_messages_in_private_files(e2e: E2E):
    alice = await e2e.human("alice", encrypted=True)
    agent, room = e2e.name("helper"), e2e.name("vault")
    config = summary_config(e2e, [alice.user_id], agent, room, encrypted=True)
    config["defaults"]["thread_summary_first_threshold"] = 50
    config["room_defaults"]["admins"] = [alice.user_id]
    daemon = await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    agent_id = e2e.user_id(agent)
    await alice.wait_for_member(room_id, agent_id)
    e2e.model_server.set_default(Text("Rotated weekly, on Mondays."), model="agent-model")
    e2e.model_server.script(Text("Vault code: rotated weekly."), model="summary-model")
    root = await alice.send(room_id, "when is the vault code rotated?", mentions=[agent_id])
    await alice.wait_for(thread_replies(root, agent_id))
    relation = {"rel_type": "m.thread", "event_id": root, "is_falling_back": True, "m.in_reply_to": {"event_id": root}}
    attachment = {"msgtype": "m.file", "body": "the rota", "filename": "rota.pdf", "url": "mxc://localhost/rota"}
    await alice.send_raw(room_id, "m.room.message", {**attachment, "m.relates_to": relation})
    await command(e2e, alice, room_id, "!tag bug", root)
    await command(e2e, alice, room_id, "!summary", root)
    ctx = ApiContext(DaemonApiView(daemon), api_settings({"MINDROOM_API_KEY": "threads-key"}, port=0))

    async with ApiServer(ctx, create_app(ctx)) as server:
        port = server.url.rsplit(":", 1)[1]
        env = {**os.environ, "MINDROOM_API_KEY": "threads-key", "MINDROOM_API_HOST": "127.0.0.1",
               "MINDROOM_API_PORT": port, "MINDROOM_STORAGE_PATH": str(e2e.storage)}  # fmt: skip
        cli = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "mindroom", "threads", "export", room, root,
             "--config", str(e2e.config_dir / "config.yaml")],
            capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip
        async with httpx.AsyncClient(base_url=server.url, headers={"Authorization": "Bearer threads-key"}) as rest:
            listed = (await rest.get("/api/threads", params={"room": room, "tag": "bug"})).json()["threads"]
            none = (await rest.get("/api/threads", params={"room": room, "resolved": True})).json()["threads"]
            refused = await rest.get("/api/threads", headers={"Authorization": "Bearer threads-keyx"})

    assert cli.returncode == 0, cli.stderr
    markdown_path, json_path = (Path(p) for p in cli.stdout.split(":", 1)[1].split())
    exported = json.loads(json_path.read_text())
    markdown = markdown_path.read_text()
    for path in (markdown_path, json_path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert path.is_relative_to(e2e.storage / "thread_exports")
    texts = [(m["author"], m["text"], m["attachments"]) for m in exported["messages"]]
    assert texts[:3] == [
        (alice.user_id, "when is the vault code rotated?", []),
        (agent_id, "Rotated weekly, on Mondays.", []),
        (alice.user_id, "the rota", ["rota.pdf"]),
    ]
    assert exported["encrypted"] is True and exported["summary"] == "Vault code: rotated weekly."
    assert list(exported["tags"]) == ["bug"] and exported["resolved"] is False
    assert "when is the vault code rotated?" in markdown and "Attachment: rota.pdf" in markdown
    assert [(t["thread_id"], t["summary"], list(t["tags"])) for t in listed] == [
        (root, "Vault code: rotated weekly.", ["bug"])
    ]
    assert none == [] and refused.status_code == 401
