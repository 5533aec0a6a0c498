"""An answer's files: listed in the draft hooks transform, and only those still listed are sent."""

from __future__ import annotations

from mindroom.bots.outbox import ATTACHMENTS_KEY, draft_listing, take_files
from mindroom.hooks.context import MessageEnvelope, ResponseDraft
from mindroom.tool_system.spec import OutboundFile

FILES = (OutboundFile("a.png", b"png", "image/png"), OutboundFile("b.txt", b"text", "text/plain"))


def draft(extra) -> ResponseDraft:
    envelope = MessageEnvelope(
        source_event_id="$e", room_id="!r", thread_id=None, resolved_thread_id="$e", requester_id="@u:x",
        sender_id="@u:x", body="hi", attachment_ids=(), mentioned_agents=(), agent_name="a", source_kind="message",
    )  # fmt: skip
    return ResponseDraft("answer", "ai", None, extra, envelope)


def test_outbox_lists_files_for_hooks_and_sends_what_they_leave():
    listed = draft(draft_listing(FILES))
    assert listed.extra_content == {
        ATTACHMENTS_KEY: [
            {"name": "a.png", "mimetype": "image/png", "size": 3},
            {"name": "b.txt", "mimetype": "text/plain", "size": 4},
        ]
    }

    listed.extra_content[ATTACHMENTS_KEY].pop(0)  # a hook takes the image out
    final, files = take_files(listed, FILES)

    assert [f.name for f in files] == ["b.txt"]
    assert final.extra_content is None  # the listing is not part of the answer's event


def test_outbox_without_files_leaves_the_draft_alone():
    plain = draft({"com.example": 1})
    assert draft_listing(()) is None
    assert take_files(plain, FILES) == (plain, ())
