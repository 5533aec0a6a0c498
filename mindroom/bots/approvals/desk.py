"""Approvals: a `tool:before_call` gate asks a person whether a tool call may run (`ctx.request_approval`).

The agent posts a card in the conversation. A ✅ reaction from an authorized person allows the call;
❌ or a reply to the card denies it; the clock denies it when nobody answers. The card is then edited
to say how it ended. Approvals are stored (`mindroom.state.approvals`) under an id derived from the
turn, the asking hook, the tool and its arguments, so a turn replayed after a restart finds its card
and waits on it instead of asking again; `expire_overdue` marks the cards whose time ran out while the
daemon was down. Which events count (authorized people, known cards) is for ingress and the reaction
handler to decide; this module records and announces the outcome.

Timed approvals (`mindroom.bots.approvals.timed_approvals`, kept in the state's `GrantStore`): a call the person's
grant or `!auto_approve` window covers runs without a card.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mindroom.bots.approvals.timed_approvals import TimedApprovals, grant_note, grant_wire, offer_text
from mindroom.bots.bot_client import BotClient
from mindroom.constants import STREAM_STATUS_APPROVAL_PENDING, STREAM_STATUS_KEY
from mindroom.hooks.context import MessageEnvelope
from mindroom.hooks.tool_contexts import ApprovalRequest, ApprovalRequester
from mindroom.logging_config import get_logger
from mindroom.matrix.delivery import send_until_accepted, stable_txn_id
from mindroom.state.approvals import ApprovalRecord, ApprovalStatus, ApprovalStore
from mindroom.state.grants import ApprovalGrant
from mindroom.tool_system.approval_grants import AUTO_APPROVE_OPTIONS, valid_auto_approve_seconds
from mindroom.tool_system.approval_rules import APPROVAL_RULES_PLUGIN

__all__ = [
    "ALLOW_KEYS",
    "APPROVAL_CONTENT_KEY",
    "DENY_KEYS",
    "ApprovalDesk",
    "ApprovalSeat",
    "answering_approvals",
    "approval_id",
    "card_text",
    "outcome_text",
    "question_text",
]

logger = get_logger(__name__)

ALLOW_KEYS = frozenset({"✅", "✔️", "✔"})
DENY_KEYS = frozenset({"❌", "✖️", "✖"})
APPROVAL_CONTENT_KEY = "com.mindroom.approval"
"""In a card's content: the approval id and its state, for clients and tests."""
_REASON_CHARS = 200


def approval_id(correlation_id: str, plugin: str, hook: str, tool: str, arguments: Mapping[str, Any]) -> str:
    """The stable id of one question: the same for a turn replayed after a crash (same turn, hook, call)."""
    key = json.dumps([correlation_id, plugin, hook, tool, arguments], sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{round(seconds / 3600)} h"


def question_text(agent: str, tool: str, prompt: str) -> str:
    """What a card asks: who wants to run what, and why the gate asks."""
    return f"🔐 {agent} wants to run {tool}: {prompt}"


def card_text(question: str, timeout_s: float) -> str:
    """The card as first posted."""
    return f"{question} — react ✅ to allow or ❌ to deny (expires in {_duration(timeout_s)})."


def outcome_text(record: ApprovalRecord) -> str:
    """The card once decided: who allowed or denied it, or that it expired."""
    question = record.question
    if record.status == "approved":
        return f"{question} — ✅ approved by {record.decided_by}."
    if record.status == "denied":
        said = f': "{record.reason}"' if record.reason else ""
        return f"{question} — ❌ denied by {record.decided_by}{said}."
    return f"{question} — ⌛ expired without an answer."


@dataclass(frozen=True, slots=True)
class ApprovalSeat:
    """Where one turn asks: the agent (its account and shown name), the room and thread, and the turn."""

    agent: str
    display_name: str
    client: BotClient
    room_id: str
    thread_root: str | None
    reply_to: str | None
    correlation_id: str

    @classmethod
    def answering(
        cls, agent: str, display_name: str, client: BotClient, envelope: MessageEnvelope, correlation_id: str
    ) -> ApprovalSeat:
        """The seat of a turn answering `envelope`: its conversation, replying to its message."""
        thread, source = envelope.resolved_thread_id, envelope.source_event_id
        return cls(agent, display_name, client, envelope.room_id, thread, source, correlation_id)


def answering_approvals(desk: ApprovalDesk | None, in_room: bool, seat: ApprovalSeat) -> ApprovalRequester | None:
    """How a turn's tool gates ask a person: on a card its agent posts in the conversation (None: nobody is asked)."""
    if desk is None or not in_room:
        return None
    return desk.requester(seat)


@dataclass(frozen=True, slots=True)
class _Waiting:
    """A turn waiting on a card in this process: where, for whom, whether only that person may answer
    (the rules' cards), and the operation a timed approval of it would be bound to (None: none offered)."""

    seat: ApprovalSeat
    requester: str | None
    answerer: str | None
    offer: str | None


class ApprovalDesk:
    """The daemon's approvals: asks on cards, waits for the answer, records and announces how each ended.

    With `timed`, a call the person's grant or `!auto_approve` window covers runs without a card, and the
    rules' cards in a thread offer a timed approval.
    """

    def __init__(self, store: ApprovalStore, timed: TimedApprovals | None = None) -> None:
        self.store = store
        self.timed = timed
        # Set when an approval is decided, for the turns waiting on it in this process.
        self._decided: dict[str, asyncio.Event] = {}
        self._waiting: dict[str, _Waiting] = {}

    def requester(self, seat: ApprovalSeat) -> ApprovalRequester:
        """What a turn's tool gates call to ask a person (bound into the turn's tool runtime context)."""

        async def ask(request: ApprovalRequest) -> bool:
            return await self.request(seat, request)

        return ask

    def pending_card(self, event_id: str) -> ApprovalRecord | None:
        """The pending approval asked on this event, if it is such a card."""
        record = self.store.by_card(event_id)
        return record if record is not None and record.pending else None

    def card(self, event_id: str) -> ApprovalRecord | None:
        """The approval asked on this event (in any state), if it is a card."""
        return self.store.by_card(event_id)

    def _covered(self, seat: ApprovalSeat, request: ApprovalRequest) -> str | None:
        timed = self.timed
        return timed.covered(seat.room_id, seat.thread_root, seat.agent, request) if timed is not None else None

    async def request(self, seat: ApprovalSeat, request: ApprovalRequest) -> bool:
        """Ask (or, for a replayed turn, find the earlier question) and wait for the answer; True when allowed.

        A call the person's grant or window covers runs without a card."""
        key = approval_id(
            seat.correlation_id, request.plugin_name, request.hook_name, request.tool_name, request.arguments
        )
        covered = self._covered(seat, request) if self.store.get(key) is None else None
        if covered is not None:
            logger.info("approval covered", agent=seat.agent, tool=request.tool_name, by=covered)
            return True
        now = time.time()
        record = self.store.open(
            ApprovalRecord(
                approval_id=key,
                agent=seat.agent,
                room_id=seat.room_id,
                thread_root=seat.thread_root,
                tool_name=request.tool_name,
                prompt=request.prompt,
                question=question_text(seat.display_name, request.tool_name, request.prompt),
                card_event_id=None,
                status="pending",
                decided_by=None,
                reason=None,
                created_at=now,
                expires_at=now + request.timeout_s,
                decided_at=None,
            )
        )
        fields = {"agent": seat.agent, "approval": key, "tool": request.tool_name, "plugin": request.plugin_name}
        if not record.pending:
            logger.info("approval already decided", **fields, status=record.status)
            return record.status == "approved"
        answerer = request.requester_id if request.plugin_name == APPROVAL_RULES_PLUGIN else None
        offer = self.timed.offer(seat.thread_root, request) if self.timed is not None else None
        self._waiting[key] = _Waiting(seat, request.requester_id, answerer, offer)
        decided = self._decided.setdefault(key, asyncio.Event())  # before any await: no decision can slip past
        try:
            covered = self._covered(seat, request)
            if covered is not None and request.requester_id:  # a grant or window came since (a replayed turn)
                await self.decide(seat.client, record, "approved", request.requester_id)
            elif record.card_event_id is None:
                card_event_id = await self._post(seat, record, request.timeout_s, offer)
                self.store.set_card(key, card_event_id)
                logger.info("approval asked", **fields, card=card_event_id, timeout_s=request.timeout_s)
            else:
                logger.info("waiting on an earlier approval card", **fields, card=record.card_event_id)
            remaining = record.expires_at - time.time()
            if remaining > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(decided.wait(), remaining)
            current = self.store.get(key)
            assert current is not None
            if current.pending:
                await self.expire(seat.client, current)
                current = self.store.get(key)
                assert current is not None
        finally:
            if self._decided.get(key) is decided:
                del self._decided[key]
                self._waiting.pop(key, None)
        logger.info("approval ended", **fields, status=current.status, by=current.decided_by)
        return current.status == "approved"

    async def _post(self, seat: ApprovalSeat, record: ApprovalRecord, timeout_s: float, offer: str | None) -> str:
        # One transaction id per approval: a card half-posted before a crash comes back, not a second one.
        fields: dict[str, Any] = {"id": record.approval_id, "tool": record.tool_name, "status": "pending"}
        text = card_text(record.question, timeout_s)
        if offer is not None:
            fields["auto_approve_options"] = list(AUTO_APPROVE_OPTIONS)
            text += offer_text(record.tool_name)
        # While it waits, the card is the newest message of the agent's turn: like MindRoom's reply held for an
        # approval, it says so. Its outcome edit replaces the content without the key: the card is then a notice.
        content = {APPROVAL_CONTENT_KEY: fields, STREAM_STATUS_KEY: STREAM_STATUS_APPROVAL_PENDING}
        return await send_until_accepted(
            lambda txn_id: seat.client.send_message(
                seat.room_id,
                text,
                thread_root=seat.thread_root,
                reply_to=seat.reply_to,
                extra_content=content,
                txn_id=txn_id,
            ),
            "approval card",
            stable_txn_id(seat.agent, record.approval_id, "approval"),
        )

    async def decide(
        self,
        client: BotClient,
        record: ApprovalRecord,
        status: ApprovalStatus,
        by: str,
        *,
        at_ms: int | None = None,
        reason: str | None = None,
        auto_approve_s: int | None = None,
    ) -> bool:
        """A person's answer (at `at_ms`, their event's time): record it, wake the waiting turn, edit the card.

        An answer given after the card expired expires it instead. False when it was already decided.
        `auto_approve_s` approves for that long, where the card offers it to `by`: their later calls of the
        tool by this agent in this thread run without a card, and their other cards for it here are approved.
        """
        waiting = self._waiting.get(record.approval_id)
        if waiting is not None and waiting.answerer is not None and by != waiting.answerer:
            logger.info("approval answer ignored: not the requester's", approval=record.approval_id, by=by)
            return False
        offered = waiting is not None and waiting.offer is not None and by == waiting.requester
        if auto_approve_s is not None and not (
            offered and status == "approved" and valid_auto_approve_seconds(auto_approve_s)
        ):
            logger.info("timed approval ignored: not offered to this person", approval=record.approval_id, by=by)
            return False
        if at_ms is not None and at_ms / 1000 > record.expires_at:
            return await self.expire(client, record)
        text = reason.strip()[:_REASON_CHARS] if reason else None
        if not self.store.resolve(record.approval_id, status, by=by, reason=text):
            return False
        logger.info("approval decided", agent=record.agent, approval=record.approval_id, status=status, by=by)
        grant = None
        if auto_approve_s is not None and waiting is not None and self.timed is not None:
            offer, thread = waiting.offer, waiting.seat.thread_root
            grant = self.timed.give(record, thread, by, auto_approve_s, offer) if offer and thread else None
        await self._announce(client, record.approval_id, grant)
        if grant is not None:
            await self._approve_waiting(
                lambda w, r: (
                    w.answerer == grant.requester_id
                    and (w.seat.room_id, w.seat.thread_root, w.seat.agent)
                    == (grant.room_id, grant.thread_id, grant.agent)
                    and r.tool_name == grant.tool_name
                ),
                grant.requester_id,
            )
        return True

    async def _approve_waiting(self, match: Callable[[_Waiting, ApprovalRecord], bool], by: str) -> int:
        """Approve, as `by`, the cards waiting in this process that `match` picks; returns how many."""
        count = 0
        for key, waiting in list(self._waiting.items()):
            record = self.store.get(key)
            if record is not None and record.pending and match(waiting, record):
                count += await self.decide(waiting.seat.client, record, "approved", by)
        return count

    async def stop_grant(self, client: BotClient, card: ApprovalRecord, by: str) -> bool:
        """❌ on a card whose grant still runs, from the person it was given to: end it and say so on the card."""
        stopped = self.timed.stop(card, by) if self.timed is not None else None
        if stopped is not None:
            await self._announce(client, card.approval_id, stopped)
        return stopped is not None

    async def approve_waiting(self, room_id: str, thread_id: str | None, requester_id: str) -> int:
        """Approve the person's cards waiting in the conversation (None: anywhere in the room); returns how many."""
        return await self._approve_waiting(
            lambda w, _r: (
                w.requester == requester_id
                and w.seat.room_id == room_id
                and (thread_id is None or w.seat.thread_root == thread_id)
            ),
            requester_id,
        )

    async def expire(self, client: BotClient | None, record: ApprovalRecord) -> bool:
        """Nobody answered in time: record that and say so on the card (False when it was decided meanwhile)."""
        if not self.store.resolve(record.approval_id, "expired"):
            return False
        logger.info("approval expired", agent=record.agent, approval=record.approval_id)
        await self._announce(client, record.approval_id)
        return True

    async def expire_overdue(self, clients: Mapping[str, BotClient]) -> int:
        """At start: expire the approvals whose time ran out while the daemon was down; returns how many.

        Called before the bots sync, so an answer that arrived meanwhile finds its card already expired.
        """
        count = 0
        for record in self.store.overdue():
            count += await self.expire(clients.get(record.agent), record)
        if count:
            logger.info("approvals expired while the daemon was down", count=count)
        return count

    async def _announce(self, client: BotClient | None, key: str, grant: ApprovalGrant | None = None) -> None:
        """Wake the turn waiting on the approval, then edit its card to say how it ended (and of its grant)."""
        decided = self._decided.get(key)
        if decided is not None:
            decided.set()
        record = self.store.get(key)
        if client is None or record is None or record.card_event_id is None:
            return
        fields: dict[str, Any] = {"id": key, "tool": record.tool_name, "status": record.status}
        text = outcome_text(record)
        if grant is not None:
            fields["auto_approval"] = grant_wire(grant)
            text += grant_note(grant)
        content = {APPROVAL_CONTENT_KEY: fields}
        try:
            await client.edit_message(
                record.room_id, record.card_event_id, text, thread_root=record.thread_root, extra_content=content
            )
        except Exception as exc:  # the outcome is recorded and the turn goes on; the card is only its notice
            logger.warning("approval card could not be edited", agent=record.agent, approval=key, error=str(exc))
