"""`ReplyChannel`: where and how an answer is sent, edited and continued, on a recording client."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from mindroom.bots.formatting import MAX_BODY_BYTES
from mindroom.bots.reply import CONTINUED_NOTE, ReplyChannel
from mindroom.constants import HOPS_KEY
from mindroom.hooks.context import MessageEnvelope
from mindroom.matrix import MatrixConnectionError
from mindroom.state.errors import StateFencedError
from mindroom.testing.recorded import TypingNotice
from mindroom.testing.recording_client import RecordingClient, RecordingHomeserver

pytestmark = pytest.mark.asyncio

ROOM = "!lobby:localhost"
LONG = ("word " * (MAX_BODY_BYTES // 5 + 100)).strip()


@dataclass
class Speaker:
    """What a reply channel reads of an entity: its name and its client."""

    name: str
    client: RecordingClient


def envelope(*, thread: str | None = "$question") -> MessageEnvelope:
    return MessageEnvelope(
        source_event_id="$question",
        room_id=ROOM,
        thread_id=thread,
        resolved_thread_id=thread,
        requester_id="@alice:localhost",
        sender_id="@alice:localhost",
        body="hi",
        attachment_ids=(),
        mentioned_agents=(),
        agent_name="helper",
        source_kind="message",
    )


def channel(*, thread: str | None = "$question", hops: int = 1, markdown: bool = True) -> ReplyChannel:
    client = RecordingHomeserver().client("helper")
    return ReplyChannel(Speaker("helper", client), envelope(thread=thread), hops=hops, markdown=markdown)  # type: ignore[arg-type]


def client_of(reply: ReplyChannel) -> RecordingClient:
    return reply.entity.client  # type: ignore[return-value]


async def test_reply_answers_in_the_thread_of_the_message_with_its_hop_count_and_html():
    reply = channel(hops=2)

    event_id = await reply.reply("**bold** answer")

    [sent] = client_of(reply).messages
    assert sent.event_id == event_id
    assert (sent.room_id, sent.thread_root, sent.reply_to) == (ROOM, "$question", "$question")
    assert sent.content[HOPS_KEY] == 2
    assert "<strong>bold</strong>" in sent.content["formatted_body"]


async def test_reply_in_room_mode_goes_to_the_main_timeline_as_a_reply():
    reply = channel(thread=None, markdown=False)

    await reply.reply("plain")

    [sent] = client_of(reply).messages
    assert (sent.thread_root, sent.reply_to) == (None, "$question")
    assert "formatted_body" not in sent.content


async def test_reply_a_long_answer_continues_in_further_messages_of_the_thread():
    reply = channel()

    first = await reply.reply(LONG)

    messages = client_of(reply).messages
    assert len(messages) == 2 and messages[0].event_id == first
    assert messages[1].reply_to is None and messages[1].thread_root == "$question"
    assert " ".join(m.body for m in messages).split() == LONG.split()


async def test_reply_sent_again_after_a_restart_is_the_same_message():
    reply = channel()
    first = await reply.reply("the answer")
    again = ReplyChannel(reply.entity, reply.envelope)

    assert await again.reply("the answer") == first
    assert len(client_of(reply).messages) == 1  # the homeserver took the transaction once


async def test_reply_sends_nothing_once_the_fence_closes_not_even_the_final_edit():
    holds = [True]
    reply = channel()
    fenced = ReplyChannel(reply.entity, reply.envelope, fence=lambda: holds[0])
    first = await fenced.reply("the first words", kind="stream")
    holds[0] = False

    with pytest.raises(StateFencedError):
        await fenced.edit_now(first, "the first words and more")
    with pytest.raises(StateFencedError):
        await fenced.edit(first, "the whole answer")
    with pytest.raises(StateFencedError):
        await fenced.error("the model failed", edit_event_id=first)
    with pytest.raises(StateFencedError):
        await fenced.reply("another answer")

    assert [m.body for m in client_of(reply).messages] == ["the first words"]
    assert client_of(reply).edits == []


async def test_reply_waits_out_a_homeserver_outage_with_one_transaction_id(monkeypatch):
    reply = channel()
    client = client_of(reply)
    send = client.send_message
    calls: list[str | None] = []

    async def flaky(*args, **kwargs):
        calls.append(kwargs.get("txn_id"))
        if len(calls) == 1:
            raise MatrixConnectionError("connection refused", refused=True)
        return await send(*args, **kwargs)

    monkeypatch.setattr(client, "send_message", flaky)
    monkeypatch.setattr("mindroom.matrix.delivery.REFUSED_RETRY_S", 0.01)

    await reply.reply("the answer")

    assert len(calls) == 2 and calls[0] == calls[1] is not None
    assert [m.body for m in client.messages] == ["the answer"]


async def test_reply_edit_replaces_the_text_and_continues_a_long_one():
    reply = channel()
    answer = await reply.reply("short")

    await reply.edit(answer, LONG)

    client = client_of(reply)
    [edit] = client.edits
    assert edit.target_event_id == answer and edit.thread_root == "$question"
    assert len(client.messages) == 2  # the answer, and the continuation of the edit


async def test_reply_edit_now_shows_only_what_fits_while_streaming():
    reply = channel()
    answer = await reply.reply("start")

    await reply.edit_now(answer, LONG)

    [edit] = client_of(reply).edits
    assert edit.body.endswith(CONTINUED_NOTE)
    assert len(client_of(reply).messages) == 1


async def test_reply_error_takes_the_place_of_a_streamed_answer_or_is_a_new_reply():
    reply = channel()
    streamed = await reply.reply("half an answ")

    await reply.error("the model failed", edit_event_id=streamed)
    await reply.error("the model failed again")

    client = client_of(reply)
    assert [(e.target_event_id, e.body) for e in client.edits] == [(streamed, "⚠️ the model failed")]
    assert client.messages[-1].body == "⚠️ the model failed again"


async def test_reply_typing_and_redaction_reach_the_room():
    reply = channel()
    answer = await reply.reply("to be removed")

    await reply.typing(True)
    await reply.redact(answer, "response suppressed")

    client = client_of(reply)
    assert TypingNotice(ROOM, True) in client.records
    assert [(r.target_event_id, r.reason) for r in client.redactions] == [(answer, "response suppressed")]
