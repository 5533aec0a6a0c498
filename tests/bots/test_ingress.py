"""Ingress: what reaches the pipeline, as a pure decision and against a real journal."""

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from mindroom.bots.ingress import (
    CLOCK_SKEW_MS,
    HELD_MESSAGE_MS,
    MAX_BODY_CHARS,
    InboundMessage,
    InboundReaction,
    IngressDrop,
    classify_message,
)
from mindroom.bots.pipeline_capabilities import BOT_TURNS_PER_THREAD
from mindroom.bots.runtime import LiveState
from mindroom.config.main import Config
from mindroom.constants import (
    HOOK_DISPATCH_KEY,
    HOOK_ORIGIN_EVENT_KEY,
    HOOK_SOURCE_KEY,
    HOPS_KEY,
    ORIGINAL_SENDER_KEY,
    SCHEDULE_ID_KEY,
    SYNTHETIC_DEPTH_KEY,
    VOICE_PREFIX,
)
from mindroom.daemon.wiring import RunningDaemon
from mindroom.hooks.registry import HookRegistry
from mindroom.matrix import MatrixEvent
from tests.bots.support import close_stores, ingress_of, unit_daemon

ROUTER = "@mindroom_router:localhost"
HELPER = "@mindroom_helper:localhost"
CODER = "@mindroom_coder:localhost"
BOTS = {"router": ROUTER, "helper": HELPER, "coder": CODER}
ALICE = "@alice:localhost"
BOB = "@bob:localhost"
STRANGER = "@mallory:localhost"
LOBBY = "!lobby:localhost"
ELSEWHERE = "!elsewhere:localhost"
START_MS = 1_700_000_000_000


def classify(
    content: dict[str, Any],
    *,
    sender: str = ALICE,
    entity: str = "helper",
    mentioned: tuple[str, ...] = (),
    is_edit: bool = False,
    thread_root: str | None = None,
) -> InboundMessage | IngressDrop:
    return classify_message(
        entity=entity,
        event_id="$event",
        room_id=LOBBY,
        sender=sender,
        content=content,
        thread_root=thread_root,
        is_edit=is_edit,
        bot_user_ids=BOTS,
        mentioned=mentioned,
    )


def accepted(result: InboundMessage | IngressDrop) -> InboundMessage:
    assert isinstance(result, InboundMessage), result
    return result


def hook_post(depth: Any, *, dispatch: Any = True, body: str = "from a hook") -> dict[str, Any]:
    """Content of a message a hook sent."""
    return {"body": body, SYNTHETIC_DEPTH_KEY: depth, HOOK_DISPATCH_KEY: dispatch}


# -- classify_message: drops ------------------------------------------------------------------------

DROPS = [
    pytest.param(HELPER, {"body": "hi"}, {}, "own message", id="own-message"),
    pytest.param(HELPER, {"body": "hi"}, {"mentioned": ("helper",)}, "own message", id="own-message-mentioning-self"),
    pytest.param(HELPER, hook_post(1, dispatch=False), {}, "own message", id="own-hook-post-without-dispatch"),
    pytest.param(HELPER, hook_post(2), {}, "own message", id="own-dispatch-at-depth-2"),
    pytest.param(HELPER, hook_post(0), {}, "own message", id="own-dispatch-at-depth-0"),
    pytest.param(HELPER, hook_post("1"), {}, "own message", id="own-dispatch-with-string-depth"),
    pytest.param(ALICE, {"body": "hi"}, {"is_edit": True}, "edit", id="edit"),
    pytest.param(HELPER, hook_post(1), {"is_edit": True}, "edit", id="edit-of-own-dispatch"),
    pytest.param(ALICE, {"body": ""}, {}, "no text body", id="empty-body"),
    pytest.param(ALICE, {"body": "  \n\t"}, {}, "no text body", id="blank-body"),
    pytest.param(ALICE, {}, {}, "no text body", id="missing-body"),
    pytest.param(ALICE, {"body": None}, {}, "no text body", id="null-body"),
    pytest.param(ALICE, {"body": 42}, {}, "no text body", id="number-body"),
    pytest.param(ALICE, {"body": ["hi"]}, {}, "no text body", id="list-body"),
    pytest.param(CODER, {"body": "hi"}, {}, "other bot, not mentioning this entity", id="other-bot-no-mention"),
    pytest.param(
        CODER,
        {"body": "@router hi"},
        {"mentioned": ("router",)},
        "other bot, not mentioning this entity",
        id="other-bot-mentioning-someone-else",
    ),
    pytest.param(ROUTER, {"body": "hi"}, {}, "other bot, not mentioning this entity", id="router-no-mention"),
    pytest.param(
        CODER,
        hook_post(1, dispatch=False),
        {},
        "other bot, not mentioning this entity",
        id="hook-post-without-dispatch-no-mention",
    ),
    pytest.param(
        CODER,
        hook_post(1, dispatch="true"),
        {},
        "other bot, not mentioning this entity",
        id="dispatch-flag-not-boolean",
    ),
    pytest.param(CODER, hook_post(2), {}, "deep synthetic hop", id="deep-hop-dispatch"),
    pytest.param(
        CODER, hook_post(2, dispatch=False), {"mentioned": ("helper",)}, "deep synthetic hop", id="deep-hop-mentioning"
    ),
    pytest.param(CODER, hook_post(7), {"mentioned": ("helper",)}, "deep synthetic hop", id="deeper-hop"),
    pytest.param(ROUTER, hook_post(2), {}, "deep synthetic hop", id="deep-hop-from-router"),
]


@pytest.mark.parametrize(("sender", "content", "kwargs", "reason"), DROPS)
def test_classify_message_drops(sender: str, content: dict[str, Any], kwargs: dict[str, Any], reason: str) -> None:
    assert classify(content, sender=sender, **kwargs) == IngressDrop(reason)


MALFORMED_DEPTHS = [
    pytest.param(-1, id="negative"),
    pytest.param(True, id="bool-true"),
    pytest.param(False, id="bool-false"),
    pytest.param("1", id="string"),
    pytest.param("2", id="string-deep"),
    pytest.param(1.0, id="float"),
    pytest.param(None, id="null"),
    pytest.param([1], id="list"),
]


@pytest.mark.parametrize("depth", MALFORMED_DEPTHS)
def test_classify_message_malformed_depth_counts_as_zero(depth: Any) -> None:
    inbound = accepted(classify(hook_post(depth, dispatch=False), sender=CODER, mentioned=("helper",)))
    assert inbound.synthetic_depth == 0
    assert inbound.envelope.message_received_depth == 0
    assert inbound.envelope.source_kind == "message"


@pytest.mark.parametrize("depth", MALFORMED_DEPTHS)
def test_classify_message_malformed_depth_is_no_hook_dispatch(depth: Any) -> None:
    assert classify(hook_post(depth), sender=CODER) == IngressDrop("other bot, not mentioning this entity")


# -- classify_message: accepted ---------------------------------------------------------------------

ACCEPTED = [
    # (sender, content, mentioned, source_kind, depth, hook_dispatch)
    pytest.param(ALICE, {"body": "hi"}, (), "message", 0, False, id="human"),
    pytest.param(ALICE, {"body": "hi"}, ("coder",), "message", 0, False, id="human-mentioning-another-agent"),
    pytest.param(HELPER, hook_post(1), (), "hook_dispatch", 1, True, id="own-dispatch-at-depth-1"),
    pytest.param(CODER, hook_post(1), (), "hook_dispatch", 1, True, id="other-bot-dispatch-at-depth-1"),
    pytest.param(ROUTER, hook_post(1), (), "hook_dispatch", 1, True, id="router-dispatch-at-depth-1"),
    pytest.param(CODER, hook_post(1, dispatch=False), ("helper",), "hook", 1, False, id="hook-post-mentioning"),
    pytest.param(CODER, {"body": "@helper hi"}, ("helper",), "message", 0, False, id="other-bot-mentioning"),
    pytest.param(ALICE, hook_post(5), (), "message", 0, False, id="human-depth-and-dispatch-ignored"),
    pytest.param(ALICE, hook_post(1), (), "message", 0, False, id="human-claiming-dispatch"),
    pytest.param(ALICE, {"body": "x", "msgtype": "m.text"}, (), "message", 0, False, id="m-text"),
    pytest.param(ALICE, {"body": "x", "msgtype": "m.notice"}, (), "message", 0, False, id="m-notice"),
    pytest.param(ALICE, {"body": "x", "msgtype": "m.emote"}, (), "message", 0, False, id="m-emote"),
    pytest.param(ALICE, {"body": "x", "msgtype": "m.audio"}, (), "voice", 0, False, id="m-audio"),
    pytest.param(ALICE, {"body": "x", "msgtype": "m.image"}, (), "image", 0, False, id="m-image"),
    pytest.param(ALICE, {"body": "x", "msgtype": "m.file"}, (), "file", 0, False, id="m-file"),
    pytest.param(ALICE, {"body": "x", "msgtype": "m.video"}, (), "video", 0, False, id="m-video"),
    pytest.param(ALICE, {"body": "x", "msgtype": 3}, (), "message", 0, False, id="msgtype-not-a-string"),
    pytest.param(ALICE, {"body": f"{VOICE_PREFIX}hello"}, (), "voice", 0, False, id="voice-prefix"),
    pytest.param(
        ALICE, {"body": f"{VOICE_PREFIX}hello", "msgtype": "m.text"}, (), "voice", 0, False, id="voice-prefix-m-text"
    ),
    pytest.param(
        ALICE, {"body": f"{VOICE_PREFIX}x", "msgtype": "m.image"}, (), "image", 0, False, id="voice-prefix-on-image"
    ),
    pytest.param(ALICE, {"body": f"say {VOICE_PREFIX}x"}, (), "message", 0, False, id="voice-prefix-not-first"),
    pytest.param(
        ROUTER,
        {"body": "@helper standup", SCHEDULE_ID_KEY: "abc123"},
        ("helper",),
        "scheduled",
        0,
        False,
        id="scheduled-from-bot",
    ),
    pytest.param(ALICE, {"body": "x", SCHEDULE_ID_KEY: "abc123"}, (), "message", 0, False, id="schedule-id-from-human"),
    pytest.param(
        ROUTER,
        {"body": "@helper x", SCHEDULE_ID_KEY: 123},
        ("helper",),
        "message",
        0,
        False,
        id="schedule-id-not-a-string",
    ),
    pytest.param(
        CODER,
        {**hook_post(1), SCHEDULE_ID_KEY: "abc123"},
        (),
        "hook_dispatch",
        1,
        True,
        id="hook-depth-wins-over-schedule",
    ),
    pytest.param(
        CODER,
        {**hook_post(1), "msgtype": "m.audio"},
        (),
        "hook_dispatch",
        1,
        True,
        id="hook-depth-wins-over-msgtype",
    ),
]


@pytest.mark.parametrize(("sender", "content", "mentioned", "source_kind", "depth", "hook_dispatch"), ACCEPTED)
def test_classify_message_accepts(
    sender: str,
    content: dict[str, Any],
    mentioned: tuple[str, ...],
    source_kind: str,
    depth: int,
    hook_dispatch: bool,
) -> None:
    inbound = accepted(classify(content, sender=sender, mentioned=mentioned))
    assert inbound.envelope.source_kind == source_kind
    assert inbound.synthetic_depth == depth
    assert inbound.envelope.message_received_depth == depth
    assert inbound.hook_dispatch is hook_dispatch
    assert inbound.from_bot is (sender in BOTS.values())
    assert inbound.envelope.sender_id == sender


REQUESTERS = [
    pytest.param(CODER, ALICE, ALICE, id="bot-relaying-human"),
    pytest.param(ROUTER, BOB, BOB, id="router-relaying-human"),
    pytest.param(HELPER, ALICE, ALICE, id="own-dispatch-relaying-human"),
    pytest.param(ALICE, STRANGER, ALICE, id="human-cannot-claim-another-sender"),
    pytest.param(CODER, "alice", CODER, id="not-a-user-id"),
    pytest.param(CODER, "", CODER, id="empty"),
    pytest.param(CODER, 7, CODER, id="not-a-string"),
    pytest.param(CODER, None, CODER, id="absent"),
]


@pytest.mark.parametrize(("sender", "original", "requester"), REQUESTERS)
def test_classify_message_requester_from_original_sender(sender: str, original: Any, requester: str) -> None:
    content = {**hook_post(1), ORIGINAL_SENDER_KEY: original}
    inbound = accepted(classify(content, sender=sender))
    assert inbound.envelope.requester_id == requester
    assert inbound.envelope.sender_id == sender


@pytest.mark.parametrize(
    ("extra", "length"),
    [
        pytest.param(0, MAX_BODY_CHARS, id="exactly-the-limit"),
        pytest.param(1, MAX_BODY_CHARS, id="one-over"),
        pytest.param(10_000, MAX_BODY_CHARS, id="far-over"),
        pytest.param(-1, MAX_BODY_CHARS - 1, id="under"),
    ],
)
def test_classify_message_truncates_long_body(extra: int, length: int) -> None:
    body = "a" * (MAX_BODY_CHARS + extra)
    inbound = accepted(classify({"body": body}))
    assert len(inbound.envelope.body) == length
    assert body.startswith(inbound.envelope.body)


@pytest.mark.parametrize(
    ("thread_root", "thread_id", "resolved"),
    [
        pytest.param(None, None, "$event", id="room-message-starts-its-own-thread"),
        pytest.param("$root", "$root", "$root", id="in-thread"),
    ],
)
def test_classify_message_thread(thread_root: str | None, thread_id: str | None, resolved: str) -> None:
    envelope = accepted(classify({"body": "hi"}, thread_root=thread_root)).envelope
    assert envelope.thread_id == thread_id
    assert envelope.resolved_thread_id == resolved


def test_classify_message_envelope_fields() -> None:
    content = {
        **hook_post(1),
        HOOK_SOURCE_KEY: "audit:on_message",
        HOOK_ORIGIN_EVENT_KEY: "message:received",
    }
    inbound = accepted(classify(content, sender=CODER, entity="helper", mentioned=("helper", "coder")))
    envelope = inbound.envelope
    assert envelope.source_event_id == "$event"
    assert envelope.room_id == LOBBY
    assert envelope.body == "from a hook"
    assert envelope.attachment_ids == ()
    assert envelope.mentioned_agents == ("helper", "coder")
    assert envelope.agent_name == "helper"
    assert envelope.hook_source == "audit:on_message"
    assert inbound.hook_origin_event == "message:received"


@pytest.mark.parametrize(
    "content",
    [
        pytest.param({"body": "hi"}, id="absent"),
        pytest.param({"body": "hi", HOOK_SOURCE_KEY: 5, HOOK_ORIGIN_EVENT_KEY: ["x"]}, id="not-strings"),
    ],
)
def test_classify_message_hook_fields_absent_or_malformed(content: dict[str, Any]) -> None:
    inbound = accepted(classify(content))
    assert inbound.envelope.hook_source is None
    assert inbound.hook_origin_event is None


def test_classify_message_accepts_own_scheduled_post_mentioning_self() -> None:
    content = {"body": "@helper standup", SCHEDULE_ID_KEY: "abc123", ORIGINAL_SENDER_KEY: ALICE}
    inbound = accepted(classify(content, sender=HELPER, mentioned=("helper",)))
    assert inbound.envelope.source_kind == "scheduled"
    assert inbound.envelope.requester_id == ALICE


# -- Ingress.message and Ingress.reaction ------------------------------------------------------------


@dataclass(slots=True)
class StandInEntity:
    """What ingress reads of a bot: its name and whether it is the router (and, for the directory, its rooms)."""

    name: str
    is_router: bool
    joined_rooms: set[str] = field(default_factory=set)


def make_config(**authorization: Any) -> Config:
    return Config.model_validate(
        {
            "agents": {
                "helper": {"display_name": "Helper", "rooms": ["lobby"]},
                "coder": {"display_name": "Code Smith", "rooms": ["lobby"]},
            },
            "rooms": {"lobby": {}},
            "authorization": {"global_users": [ALICE], "room_permissions": {"lobby": [BOB]}, **authorization},
        }
    )


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[RunningDaemon]:
    live = LiveState(config=make_config(), registry=HookRegistry.from_plugins([]))
    entities = {name: StandInEntity(name, name == "router") for name in BOTS}
    daemon = unit_daemon(tmp_path, live, bots=BOTS, rooms={"lobby": LOBBY}, started_at_ms=START_MS, entities=entities)
    yield daemon
    close_stores(daemon)


def entity(daemon: RunningDaemon, name: str = "helper") -> Any:
    return daemon.directory.entities[name]


def with_config(daemon: RunningDaemon, config: Config) -> LiveState:
    daemon.cell.swap(LiveState(config=config, registry=daemon.live.registry))
    return daemon.live


def message(
    body: str = "hi",
    *,
    sender: str = ALICE,
    event_id: str = "$m1",
    room_id: str = LOBBY,
    ts: int = START_MS + 1000,
    **extra: Any,
) -> MatrixEvent:
    return MatrixEvent(room_id, event_id, sender, "m.room.message", {"body": body, **extra}, ts)


def reaction(
    relates_to: dict[str, Any] | None,
    *,
    sender: str = ALICE,
    room_id: str = LOBBY,
    ts: int = START_MS + 1000,
) -> MatrixEvent:
    content = {} if relates_to is None else {"m.relates_to": relates_to}
    return MatrixEvent(room_id, "$r1", sender, "m.reaction", content, ts)


def annotation(key: Any = "👍", target: Any = "$answer") -> dict[str, Any]:
    return {"rel_type": "m.annotation", "event_id": target, "key": key}


@pytest.mark.parametrize(
    ("ts", "fresh"),
    [
        pytest.param(START_MS - CLOCK_SKEW_MS - 1, False, id="just-outside-skew"),
        pytest.param(START_MS - 3_600_000, False, id="an-hour-before-start"),
        pytest.param(START_MS - CLOCK_SKEW_MS, True, id="at-skew-limit"),
        pytest.param(START_MS - 1, True, id="just-before-start"),
        pytest.param(START_MS + 60_000, True, id="after-start"),
    ],
)
def test_message_ingress_staleness(daemon: RunningDaemon, ts: int, fresh: bool) -> None:
    result = ingress_of(daemon).message(entity(daemon), daemon.live, message(ts=ts))
    if fresh:
        assert isinstance(result, InboundMessage)
    else:
        assert result == IngressDrop("older than this run")
        assert not daemon.stores.journal.seen("helper", "$m1")


@pytest.mark.parametrize(
    ("ts", "after_restore", "fresh"),
    [
        pytest.param(START_MS - CLOCK_SKEW_MS - HELD_MESSAGE_MS, True, True, id="restored-at-window-limit"),
        pytest.param(START_MS - CLOCK_SKEW_MS - HELD_MESSAGE_MS - 1, True, False, id="restored-just-outside-window"),
        pytest.param(START_MS - 60_000, True, True, id="restored-a-minute-before-start"),
        pytest.param(START_MS - 60_000, False, False, id="readable-a-minute-before-start"),
    ],
)
def test_message_ingress_counts_a_message_read_after_a_key_restore_as_new_for_a_while(
    daemon: RunningDaemon, ts: int, after_restore: bool, fresh: bool
) -> None:
    event = dataclasses.replace(message(ts=ts), encrypted=True, after_restore=after_restore)
    with capture_logs() as logs:
        result = ingress_of(daemon).message(entity(daemon), daemon.live, event)
    if fresh:
        assert isinstance(result, InboundMessage)
        return
    assert result == IngressDrop("older than this run")
    notable = [entry for entry in logs if entry["event"] == "event dropped at ingress" and entry["log_level"] == "info"]
    assert len(notable) == (1 if after_restore else 0)


def test_message_ingress_replay_accepts_an_old_claimed_event(daemon: RunningDaemon) -> None:
    old = message(ts=START_MS - 3_600_000)
    assert daemon.stores.journal.claim("helper", old.event_id, {"before": "restart"})
    result = ingress_of(daemon).message(entity(daemon), daemon.live, old, replay=True)
    assert isinstance(result, InboundMessage)
    assert result.envelope.source_event_id == old.event_id
    assert [pending.event for pending in daemon.stores.journal.pending("helper")] == [{"before": "restart"}]


def test_message_ingress_stores_nothing_of_an_accepted_message(daemon: RunningDaemon) -> None:
    event = message("@helper hi")
    assert isinstance(ingress_of(daemon).message(entity(daemon), daemon.live, event), InboundMessage)
    assert not daemon.stores.journal.seen("helper", event.event_id)  # the turn claims it (claimed_turn)


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        pytest.param(message(sender=HELPER), "own message", id="own-message"),
        pytest.param(message(sender=CODER), "other bot, not mentioning this entity", id="other-bot"),
        pytest.param(
            message(**{"m.relates_to": {"rel_type": "m.replace", "event_id": "$x"}, "m.new_content": {"body": "x"}}),
            "edit of a message this entity did not answer",
            id="edit-of-an-unanswered-message",
        ),
        pytest.param(
            message(**{"m.relates_to": {"rel_type": "m.replace", "event_id": "$x"}}),
            "edit without a target or new text",
            id="edit-without-new-content",
        ),
        pytest.param(message(""), "no text body", id="empty-body"),
    ],
)
def test_message_ingress_classification_drops_are_not_claimed(
    daemon: RunningDaemon, event: MatrixEvent, reason: str
) -> None:
    assert ingress_of(daemon).message(entity(daemon), daemon.live, event) == IngressDrop(reason)
    assert not daemon.stores.journal.seen("helper", event.event_id)


AUTHORIZATION = [
    pytest.param(ALICE, LOBBY, {}, True, id="global-user"),
    pytest.param(ALICE, ELSEWHERE, {}, True, id="global-user-unmanaged-room"),
    pytest.param(BOB, LOBBY, {}, True, id="room-user-by-config-key"),
    pytest.param(BOB, ELSEWHERE, {}, True, id="user-of-the-agents-room-in-a-room-config-does-not-name"),
    pytest.param(BOB, ELSEWHERE, {"room_permissions": {"!ops:localhost": [BOB]}}, False, id="user-of-another-room"),
    pytest.param(STRANGER, LOBBY, {}, False, id="stranger"),
    pytest.param(STRANGER, LOBBY, {"default_room_access": True}, True, id="stranger-default-access"),
    pytest.param(STRANGER, LOBBY, {"room_permissions": {LOBBY: [STRANGER]}}, True, id="room-user-by-room-id"),
]


@pytest.mark.parametrize(("sender", "room_id", "authorization", "allowed"), AUTHORIZATION)
def test_message_ingress_authorization(
    daemon: RunningDaemon, sender: str, room_id: str, authorization: dict[str, Any], allowed: bool
) -> None:
    live = with_config(daemon, make_config(**authorization))
    event = message(sender=sender, room_id=room_id)
    result = ingress_of(daemon).message(entity(daemon), live, event)
    if allowed:
        assert isinstance(result, InboundMessage)
    else:
        assert result == IngressDrop("unauthorized sender")
        assert not daemon.stores.journal.seen("helper", event.event_id)
        assert daemon.stores.journal.pending("helper") == []


@pytest.mark.parametrize(
    ("original", "allowed"),
    [
        pytest.param(ALICE, True, id="relaying-global-user"),
        pytest.param(STRANGER, False, id="relaying-stranger"),
        pytest.param(None, True, id="bot-itself"),
    ],
)
def test_message_ingress_authorizes_the_requester_of_a_bot_message(
    daemon: RunningDaemon, original: str | None, allowed: bool
) -> None:
    extra = {} if original is None else {ORIGINAL_SENDER_KEY: original}
    event = message("@helper look", sender=CODER, **extra)
    result = ingress_of(daemon).message(entity(daemon), daemon.live, event)
    if allowed:
        assert isinstance(result, InboundMessage)
    else:
        assert result == IngressDrop("unauthorized sender")
        assert not daemon.stores.journal.seen("helper", event.event_id)


def test_message_ingress_mentions_use_live_display_names(daemon: RunningDaemon) -> None:
    result = ingress_of(daemon).message(
        entity(daemon, "coder"), daemon.live, message("@Code Smith look", sender=HELPER)
    )
    assert isinstance(result, InboundMessage)
    assert result.envelope.mentioned_agents == ("coder",)


def test_message_ingress_thread_from_relation(daemon: RunningDaemon) -> None:
    event = message(**{"m.relates_to": {"rel_type": "m.thread", "event_id": "$root"}})
    result = ingress_of(daemon).message(entity(daemon), daemon.live, event)
    assert isinstance(result, InboundMessage)
    assert result.envelope.thread_id == "$root"


@pytest.mark.parametrize("root", ["", 7, None])
def test_message_ingress_thread_relation_without_a_usable_root_starts_one(daemon: RunningDaemon, root: Any) -> None:
    event = message(**{"m.relates_to": {"rel_type": "m.thread", "event_id": root}})
    result = ingress_of(daemon).message(entity(daemon), daemon.live, event)
    assert isinstance(result, InboundMessage)
    assert result.envelope.thread_id is None
    assert result.envelope.target.resolved_thread_id == event.event_id


def test_message_ingress_builds_the_canonical_envelope(daemon: RunningDaemon) -> None:
    event = message("@helper look", sender=CODER, **{ORIGINAL_SENDER_KEY: ALICE})
    result = ingress_of(daemon).message(entity(daemon), daemon.live, event)
    assert isinstance(result, InboundMessage)
    target, origin = result.envelope.target, result.envelope.origin
    assert (target.room_id, target.reply_to_event_id, target.session_id) == (
        event.room_id,
        event.event_id,
        f"{event.room_id}:{event.event_id}",
    )
    assert (origin.transport_sender_id, origin.requester_id, origin.source_kind) == (CODER, ALICE, "message")
    assert origin.sender_kind == "managed_entity" and origin.requester_kind == "user"


@pytest.mark.parametrize(
    ("name", "router_running", "level"),
    [
        pytest.param("router", True, "info", id="router-says-so"),
        pytest.param("helper", True, "debug", id="agent-leaves-it-to-router"),
        pytest.param("helper", False, "info", id="agent-without-router-says-so"),
    ],
)
def test_message_ingress_unauthorized_logged_once_per_room(
    daemon: RunningDaemon, name: str, router_running: bool, level: str
) -> None:
    if not router_running:
        daemon.directory.entities = {key: bot for key, bot in daemon.directory.entities.items() if key != "router"}
    with capture_logs() as logs:
        result = ingress_of(daemon).message(entity(daemon, name), daemon.live, message(sender=STRANGER))
    assert result == IngressDrop("unauthorized sender")
    assert [(log["event"], log["log_level"], log["reason"]) for log in logs] == [
        ("event dropped at ingress", level, "unauthorized sender")
    ]


def test_message_ingress_room_permission_by_alias(daemon: RunningDaemon) -> None:
    live = with_config(daemon, make_config(room_permissions={"#lobby:localhost": [STRANGER]}))
    assert isinstance(ingress_of(daemon).message(entity(daemon), live, message(sender=STRANGER)), InboundMessage)


def test_message_ingress_default_access_only_in_managed_rooms(daemon: RunningDaemon) -> None:
    live = with_config(daemon, make_config(default_room_access=True))
    result = ingress_of(daemon).message(entity(daemon), live, message(sender=STRANGER, room_id=ELSEWHERE))
    assert result == IngressDrop("unauthorized sender")


def test_reaction_ingress_accepts_an_authorized_annotation(daemon: RunningDaemon) -> None:
    event = reaction(annotation("🛑", "$answer"))
    result = ingress_of(daemon).reaction(entity(daemon), daemon.live, event)
    assert result == InboundReaction(event, "🛑", "$answer")
    assert not daemon.stores.journal.seen("helper", event.event_id)


REACTION_DROPS = [
    pytest.param(reaction(annotation(), ts=START_MS - CLOCK_SKEW_MS - 1), "older than this run", id="stale"),
    pytest.param(reaction(annotation(), sender=HELPER), "a bot's reaction", id="own-reaction"),
    pytest.param(reaction(annotation(), sender=ROUTER), "a bot's reaction", id="router-reaction"),
    pytest.param(reaction(annotation(), sender=CODER), "a bot's reaction", id="other-bot-reaction"),
    pytest.param(reaction(None), "no target or key", id="no-relation"),
    pytest.param(reaction(annotation(target=None)), "no target or key", id="no-target"),
    pytest.param(reaction(annotation(target="")), "no target or key", id="empty-target"),
    pytest.param(reaction(annotation(key=None)), "no target or key", id="no-key"),
    pytest.param(reaction(annotation(key="")), "no target or key", id="empty-key"),
    pytest.param(reaction(annotation(key=1)), "no target or key", id="key-not-a-string"),
    pytest.param(
        reaction({"rel_type": "m.reference", "event_id": "$answer", "key": "👍"}),
        "no target or key",
        id="not-an-annotation",
    ),
    pytest.param(reaction(annotation(), sender=STRANGER), "unauthorized sender", id="stranger"),
    pytest.param(reaction(annotation(), sender=STRANGER, room_id=ELSEWHERE), "unauthorized sender", id="elsewhere"),
]


@pytest.mark.parametrize(("event", "reason"), REACTION_DROPS)
def test_reaction_ingress_drops(daemon: RunningDaemon, event: MatrixEvent, reason: str) -> None:
    assert ingress_of(daemon).reaction(entity(daemon), daemon.live, event) == IngressDrop(reason)


def test_reaction_ingress_a_user_of_the_agents_room_reaches_that_agent_in_a_room_config_does_not_name(
    daemon: RunningDaemon,
) -> None:
    event = reaction(annotation(), sender=BOB, room_id=ELSEWHERE)
    ingress = ingress_of(daemon)

    assert isinstance(ingress.reaction(entity(daemon), daemon.live, event), InboundReaction)
    assert ingress.reaction(entity(daemon, "router"), daemon.live, event) == IngressDrop("unauthorized sender")


def test_reaction_ingress_skew_boundary_is_fresh(daemon: RunningDaemon) -> None:
    event = reaction(annotation(), ts=START_MS - CLOCK_SKEW_MS)
    assert isinstance(ingress_of(daemon).reaction(entity(daemon), daemon.live, event), InboundReaction)


# -- bot chains -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sender", "hops", "outcome"),
    [
        pytest.param(CODER, None, 0, id="bot-without-hops-is-a-first-hop"),
        pytest.param(CODER, 1, 1, id="bot-answer-to-a-person"),
        pytest.param(CODER, 2, "bot conversation too long", id="second-bot-answer-stops"),
        pytest.param(CODER, 7, "bot conversation too long", id="deeper-stops"),
        pytest.param(CODER, "2", 0, id="malformed-hops-count-as-none"),
        pytest.param(ALICE, 9, 0, id="people-carry-no-hops"),
    ],
)
def test_classify_message_bot_hops(sender: str, hops: Any, outcome: int | str) -> None:
    content: dict[str, Any] = {"body": "@helper over to you"}
    if hops is not None:
        content[HOPS_KEY] = hops

    result = classify(content, sender=sender, mentioned=("helper",))

    if isinstance(outcome, str):
        assert result == IngressDrop(outcome)
    else:
        assert accepted(result).hops == outcome


def test_message_ingress_limits_bot_messages_per_thread(daemon: RunningDaemon) -> None:
    live = daemon.live
    sent = [
        message("@helper go on", sender=CODER, event_id=f"$b{i}", **{HOPS_KEY: 1})
        for i in range(BOT_TURNS_PER_THREAD + 2)
    ]

    results = [ingress_of(daemon).message(entity(daemon), live, event) for event in sent]

    assert all(isinstance(result, InboundMessage) for result in results[:BOT_TURNS_PER_THREAD])
    assert results[BOT_TURNS_PER_THREAD:] == [IngressDrop("too many bot messages in this thread")] * 2
    assert isinstance(
        ingress_of(daemon).message(entity(daemon), live, message("person", event_id="$p")), InboundMessage
    )
