"""Ingress: the one stage every inbound message and reaction passes before any hook sees it.

It drops what no entity should act on (events older than this run, the bots' own events, other bots'
chatter, unauthorized senders), logs each drop once with its reason, and turns what is left into a
`MessageEnvelope`. `classify_message` is the pure part: event facts in, a decision out; `Ingress` applies
it with what it declares: who is where, the turn's stores, the run's clock, and the window on bot-to-bot
turns. Claiming an accepted message (and dropping one already handled) is the turn's next step
(`mindroom.bots.lifecycle.claimed_turn`).

Answers to a pending approval card (a reply, or a reaction) are an exception to "older than this run": a
person may answer while the daemon is down. A reply to a pending card, in the card's room, from a person
authorized there, is consumed here (it denies the call); it never becomes a turn. The other exception is an
event a bot read only with the room keys restored from the key backup after its crypto store was lost: it
counts as new for `HELD_MESSAGE_MS` more, as long as a message waits for a late key.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from mindroom.bots.approvals.desk import ApprovalDesk
from mindroom.bots.directory import Directory
from mindroom.bots.limits import SlidingWindow
from mindroom.bots.pipeline_capabilities import RunClock, TurnStores
from mindroom.bots.routing import mentioned_agents
from mindroom.bots.runtime import Entity, LiveState
from mindroom.bots.sharing import EventMemo
from mindroom.constants import (
    HANDOFF_KEY,
    HOOK_DISPATCH_KEY,
    HOOK_ORIGIN_EVENT_KEY,
    HOOK_SOURCE_KEY,
    HOPS_KEY,
    ORIGINAL_SENDER_KEY,
    SCHEDULE_ID_KEY,
    SYNTHETIC_DEPTH_KEY,
    VOICE_PREFIX,
)
from mindroom.hooks.origin import TurnOrigin
from mindroom.hooks.target import MessageTarget
from mindroom.hooks.transport import MessageEnvelope, SourceKind
from mindroom.logging_config import debug_enabled, get_logger
from mindroom.matrix import MatrixEvent
from mindroom.matrix.crypto.undecrypted import KEEP_PARKED_S
from mindroom.matrix.events import CLOCK_SKEW_MS
from mindroom.state.answers import AnswerRecord
from mindroom.state.approvals import ApprovalRecord

__all__ = [
    "CLOCK_SKEW_MS",
    "HELD_MESSAGE_MS",
    "MAX_BODY_CHARS",
    "MAX_BOT_HOPS",
    "EditRequest",
    "InboundMessage",
    "InboundReaction",
    "Ingress",
    "IngressDrop",
    "classify_edit",
    "classify_message",
    "inbound_origin",
    "older_than_run",
]

logger = get_logger(__name__)

MAX_BODY_CHARS = 64_000
MAX_BOT_HOPS = 2
"""A bot's answer that is already the second in a chain of bot answers starts no further turn."""
_SOURCE_KINDS: dict[str, SourceKind] = {"m.audio": "voice", "m.image": "image", "m.file": "file", "m.video": "video"}


HELD_MESSAGE_MS = int(KEEP_PARKED_S * 1000)
"""A message read with room keys restored from the key backup (the bot's store was lost meanwhile) still counts
as new when it is at most this much older than the run: as long as a message waits for a key that comes late."""


def older_than_run(origin_server_ts: int, started_at_ms: int, *, after_restore: bool = False) -> bool:
    """True for an event from before this run started (beyond `CLOCK_SKEW_MS`): history, not news.

    `after_restore`: the event came while the bot's crypto store was lost, and was read with the room keys
    restored from the key backup; it counts as new for `HELD_MESSAGE_MS` more.
    """
    allowance = CLOCK_SKEW_MS + (HELD_MESSAGE_MS if after_restore else 0)
    return origin_server_ts < started_at_ms - allowance


# The same few people and kinds recur message after message, and an origin is an immutable value.
_origins = functools.lru_cache(maxsize=256)(TurnOrigin.from_envelope_fields)


def inbound_origin(sender_id: str, requester_id: str, source_kind: str) -> TurnOrigin:
    """The origin of a message known by its Matrix sender, the person it acts for and its kind (no entity
    named): a bot relaying for a person, or a kind only the daemon's accounts send, marks a managed sender."""
    return _origins(sender_id, requester_id, source_kind)


@dataclass(frozen=True, slots=True)
class IngressDrop:
    """Why an event goes no further (logged at debug, or info for authorization)."""

    reason: str


@dataclass(frozen=True, slots=True)
class InboundMessage:
    """An accepted message: its envelope plus facts the pipeline needs that hooks do not see."""

    envelope: MessageEnvelope
    from_bot: bool
    synthetic_depth: int
    hook_dispatch: bool
    hook_origin_event: str | None
    hops: int = 0
    replaces: AnswerRecord | None = None
    """For an edit of a question: the answer the new answer takes the place of."""
    image_ids: tuple[str, ...] = ()
    """Attachments of the message that are images (filled in by the media stage)."""


@dataclass(frozen=True, slots=True)
class EditRequest:
    """An edit of a message: which message, and its new text."""

    target_event_id: str
    body: str


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def classify_message(
    *,
    entity: str,
    event_id: str,
    room_id: str,
    sender: str,
    content: Mapping[str, Any],
    thread_root: str | None,
    is_edit: bool,
    bot_user_ids: Mapping[str, str],
    mentioned: tuple[str, ...],
    room_mode: bool = False,
    person: str | None = None,
    other_bots: Collection[str] = (),
) -> InboundMessage | IngressDrop:
    """Accept or drop one message for `entity` (authorization and dedup are the caller's next steps).

    In `room_mode` a message of the main timeline is answered there (no thread); one in a thread still is.
    `person`: whom a bridged sender speaks for (`authorization.aliases`), the requester of its messages.
    `other_bots` (`bot_accounts`) are answered as the daemon's bots are, only when they mention `entity`; what
    their content says of hooks and of whom they speak for is not believed (only the daemon's bots set it).
    """
    own_user_id = bot_user_ids.get(entity)
    ours = sender in bot_user_ids.values()
    from_bot = ours or sender in other_bots
    depth = _int(content.get(SYNTHETIC_DEPTH_KEY)) if ours else 0
    hook_dispatch = ours and content.get(HOOK_DISPATCH_KEY) is True
    # A schedule posted by the agent itself (in a room without the router) addresses that agent.
    own_schedule = isinstance(content.get(SCHEDULE_ID_KEY), str) and entity in mentioned
    if sender == own_user_id and not (hook_dispatch and depth == 1) and not own_schedule:
        return IngressDrop("own message")
    if is_edit:
        return IngressDrop("edit")
    body = content.get("body")
    if not isinstance(body, str) or not body.strip():
        return IngressDrop("no text body")
    if len(body) > MAX_BODY_CHARS:
        body = body[:MAX_BODY_CHARS]
    hops = _int(content.get(HOPS_KEY)) if from_bot else 0
    if from_bot:
        if depth >= 2:
            return IngressDrop("deep synthetic hop")
        if hops >= MAX_BOT_HOPS:
            return IngressDrop("bot conversation too long")
        if HANDOFF_KEY in content:
            return IngressDrop("a hand-off's question (answered within the turn that asked)")
        if not (hook_dispatch and depth == 1) and entity not in mentioned:
            return IngressDrop("other bot, not mentioning this entity")
    original = content.get(ORIGINAL_SENDER_KEY)
    requester = original if ours and isinstance(original, str) and original.startswith("@") else person or sender
    msgtype = content.get("msgtype")
    if depth >= 1:
        source_kind: SourceKind = "hook_dispatch" if hook_dispatch else "hook"
    elif ours and isinstance(content.get(SCHEDULE_ID_KEY), str):
        source_kind = "scheduled"
    else:
        source_kind = _SOURCE_KINDS.get(msgtype, "message") if isinstance(msgtype, str) else "message"
        if source_kind == "message" and body.startswith(VOICE_PREFIX):
            source_kind = "voice"
    hook_source = content.get(HOOK_SOURCE_KEY) if isinstance(content.get(HOOK_SOURCE_KEY), str) else None
    origin_event = content.get(HOOK_ORIGIN_EVENT_KEY) if isinstance(content.get(HOOK_ORIGIN_EVENT_KEY), str) else None
    envelope = MessageEnvelope(
        source_event_id=event_id,
        target=MessageTarget(room_id, thread_root, thread_root if room_mode else thread_root or event_id, event_id),
        body=body,
        attachment_ids=(),
        mentioned_agents=mentioned,
        agent_name=entity,
        hook_source=hook_source,
        message_received_depth=depth,
        origin=inbound_origin(sender, requester, source_kind),
    )
    return InboundMessage(envelope, from_bot, depth, hook_dispatch, origin_event, hops)


@dataclass(frozen=True, slots=True)
class InboundReaction:
    """An accepted reaction: who reacted with what, to which event."""

    event: MatrixEvent
    key: str
    target_event_id: str


def _person(live: LiveState, sender: str) -> str | None:
    """The person a bridged account speaks for (`authorization.aliases`); None for everyone else."""
    config = live.config
    if not config.authorization.aliases or sender in config.bot_accounts:
        return None
    person = config.authorization.person(sender)
    return person if person != sender else None


def _drop(entity: Entity, event: MatrixEvent, reason: str, *, notable: bool = False) -> IngressDrop:
    if notable or debug_enabled():  # every entity drops most events: no debug line is built for nothing
        log = logger.info if notable else logger.debug
        log("event dropped at ingress", agent=entity.name, event_id=event.event_id, sender=event.sender, reason=reason)
    return IngressDrop(reason)


def classify_edit(
    *, sender: str, content: Mapping[str, Any], bot_user_ids: Mapping[str, str]
) -> EditRequest | IngressDrop:
    """Read an `m.replace` edit: the message it changes and the new text (bots' edits are streaming, not questions)."""
    if sender in bot_user_ids.values():
        return IngressDrop("a bot's edit")
    relation = content.get("m.relates_to")
    target = relation.get("event_id") if isinstance(relation, dict) else None
    new_content = content.get("m.new_content")
    body = new_content.get("body") if isinstance(new_content, dict) else None
    if not isinstance(target, str) or not isinstance(body, str) or not body.strip():
        return IngressDrop("edit without a target or new text")
    return EditRequest(target, body[:MAX_BODY_CHARS])


async def _deny(desk: ApprovalDesk, entity: Entity, event: MatrixEvent, card: ApprovalRecord) -> None:
    await desk.decide(entity.client, card, "denied", event.sender, at_ms=event.origin_server_ts, reason=event.body)


@dataclass(frozen=True, slots=True)
class Ingress:
    """The stage every inbound message and reaction passes: it reads who is where, the answers and approvals
    on record (and the journal, to take a card's answer once), the run's start and the bot-turn window.
    `readings` is shared by the entities of one run: each message's mentions are read once, not per entity."""

    directory: Directory
    stores: TurnStores
    clock: RunClock
    bot_turns: SlidingWindow
    readings: EventMemo = field(default_factory=EventMemo)

    def _authorized(self, entity: Entity, live: LiveState, event: MatrixEvent, user_id: str) -> bool:
        return self.directory.may_reach(live.config, user_id, event.room_id, entity.name)

    def _older(self, event: MatrixEvent) -> bool:
        return older_than_run(event.origin_server_ts, self.clock.started_at_ms, after_restore=event.after_restore)

    def message(
        self, entity: Entity, live: LiveState, event: MatrixEvent, *, replay: bool = False
    ) -> InboundMessage | IngressDrop:
        """Accept one message for `entity`, or say why not (the turn then claims it in the journal).

        Authorization comes first, so nothing of a message that will not be answered is stored.
        `replay` re-runs a turn a crash cut short: it is older than this run.
        """
        directory = self.directory
        thread_root = event.thread_root or None  # a thread relation with an empty id names no thread
        from_person = event.sender not in directory.bot_user_ids.values()
        card = self._replied_card(event) if from_person else None
        if card is not None and self._authorized(entity, live, event, event.sender):
            return self._approval_reply(entity, event, card)
        if not replay and self._older(event):
            # One the bot read only once its lost store's keys came back is worth a line: someone waited for it.
            return _drop(entity, event, "older than this run", notable=event.after_restore)
        if event.relation_type == "m.replace":
            edited = self._edit(entity, event)
            if isinstance(edited, IngressDrop):
                return edited
            return self._admitted(entity, live, event, edited, replay=replay)
        accepted = classify_message(
            entity=entity.name,
            event_id=event.event_id,
            room_id=event.room_id,
            sender=event.sender,
            content=event.content,
            thread_root=thread_root,
            is_edit=False,
            bot_user_ids=directory.bot_user_ids,
            mentioned=self.readings.once(event.event_id, live, lambda: self._mentions(live, event)),
            # Only a message of the main timeline is answered differently in a room in `room` mode.
            room_mode=thread_root is None
            and live.thread_mode(entity.name, event.room_id, directory.room_keys(event.room_id)) == "room",
            person=_person(live, event.sender),
            other_bots=live.config.bot_accounts,
        )
        if isinstance(accepted, IngressDrop):
            return _drop(entity, event, accepted.reason)
        return self._admitted(entity, live, event, accepted, replay=replay)

    def _mentions(self, live: LiveState, event: MatrixEvent) -> tuple[str, ...]:
        return mentioned_agents(event.content, self.directory.agent_user_ids, live.display_names)

    def _edit(self, entity: Entity, event: MatrixEvent) -> InboundMessage | IngressDrop:
        """An edit is a new question only for the agent that answered the edited message, and only if that was
        its latest answer in the conversation (editing an older question would rewrite history mid-way)."""
        edit = classify_edit(sender=event.sender, content=event.content, bot_user_ids=self.directory.bot_user_ids)
        if isinstance(edit, IngressDrop):
            return _drop(entity, event, edit.reason)
        answers = self.stores.answers
        answer = answers.for_question(entity.name, edit.target_event_id)
        if answer is None or answer.requester_id != event.sender:
            return _drop(entity, event, "edit of a message this entity did not answer")
        latest = answers.latest(entity.name, answer.conversation)
        if latest is None or latest.source_event_id != answer.source_event_id:
            return _drop(
                entity, event, "edit of an older message; only the latest question can be asked again", notable=True
            )
        envelope = MessageEnvelope(
            source_event_id=event.event_id,
            target=MessageTarget(event.room_id, answer.thread_root, answer.thread_root, event.event_id),
            body=edit.body,
            attachment_ids=(),
            mentioned_agents=(),
            agent_name=entity.name,
            origin=inbound_origin(event.sender, event.sender, "edit"),
        )
        return InboundMessage(envelope, False, 0, False, None, replaces=answer)

    def _replied_card(self, event: MatrixEvent) -> ApprovalRecord | None:
        """The pending approval card this message replies to, if it is a reply (not a thread's fallback) to one
        in the same room: a card is answered only where it was asked."""
        desk = self.stores.approvals
        target = event.reply_to
        if desk is None or target is None or event.relation.get("is_falling_back") is True:
            return None
        if event.relation_type == "m.replace":
            return None
        card = desk.pending_card(target)
        return card if card is not None and card.room_id == event.room_id else None

    def _approval_reply(self, entity: Entity, event: MatrixEvent, card: ApprovalRecord) -> IngressDrop:
        """A person replied to a pending card: that denies the call (the card's agent records it, once)."""
        desk = self.stores.approvals
        owner = entity.name == card.agent
        if desk is not None and owner and self.stores.journal.claim(entity.name, event.event_id):
            entity.spawn(_deny(desk, entity, event, card), "approval reply")
        return _drop(entity, event, "a reply to an approval card", notable=owner)

    def _admitted(
        self, entity: Entity, live: LiveState, event: MatrixEvent, accepted: InboundMessage, *, replay: bool
    ) -> InboundMessage | IngressDrop:
        """Authorize the requester and limit bot chatter (both before the claim: nothing is stored of a message
        that will not be answered)."""
        if not self._authorized(entity, live, event, accepted.envelope.requester_id):
            # Every entity in the room sees the message; one of them says so.
            responsible = entity.is_router or not self.directory.router_in_room(event.room_id)
            return _drop(entity, event, "unauthorized sender", notable=responsible)
        if accepted.from_bot and not replay:
            # The main timeline counts as one thread: every message there would otherwise start its own.
            thread = accepted.envelope.thread_id
            if not self.bot_turns.allow((entity.name, event.room_id, thread)):
                return _drop(entity, event, "too many bot messages in this thread", notable=True)
        return accepted

    def _answers_pending_card(self, event: MatrixEvent) -> bool:
        """True for a reaction to a pending approval card (given while the daemon was down, it still counts)."""
        desk = self.stores.approvals
        target = event.related_event_id
        card = desk.pending_card(target) if desk is not None and target is not None else None
        return card is not None and card.room_id == event.room_id

    def reaction(self, entity: Entity, live: LiveState, event: MatrixEvent) -> InboundReaction | IngressDrop:
        """Accept one reaction for `entity`, or say why not (which entity acts on it is the caller's decision)."""
        if self._older(event) and not self._answers_pending_card(event):
            return _drop(entity, event, "older than this run")
        if event.sender in self.directory.bot_user_ids.values():
            return _drop(entity, event, "a bot's reaction")
        target_event_id = event.related_event_id
        key = event.reaction_key
        if not target_event_id or not key:
            return _drop(entity, event, "no target or key")
        if not self._authorized(entity, live, event, event.sender):
            return _drop(entity, event, "unauthorized sender")
        return InboundReaction(event, key, target_event_id)
