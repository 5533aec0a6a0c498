"""`TurnOrigin`: who a turn came from, for whom, how far to trust it, and what it is meant to do.

Also the source kinds that dispatch policy names (`mindroom.dispatch_source` publishes them) and the
rule that picks a turn's intent. Published under `mindroom.turn_origin` too.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from mindroom.constants import ROUTER_AGENT_NAME

__all__ = [
    "ACTIVE_THREAD_FOLLOW_UP_SOURCE_KIND",
    "EXTERNAL_TRIGGER_SOURCE_KIND",
    "HOOK_DISPATCH_SOURCE_KIND",
    "HOOK_SOURCE_KIND",
    "MANAGED_SOURCE_KINDS",
    "SCHEDULED_SOURCE_KIND",
    "SILENT_SCHEDULED_SOURCE_KIND",
    "TRUSTED_INTERNAL_RELAY_SOURCE_KIND",
    "SenderKind",
    "TurnIntent",
    "TurnOrigin",
    "TurnTrust",
    "select_intent",
]

ACTIVE_THREAD_FOLLOW_UP_SOURCE_KIND: Final = "active_thread_follow_up"
TRUSTED_INTERNAL_RELAY_SOURCE_KIND: Final = "trusted_internal_relay"
SCHEDULED_SOURCE_KIND: Final = "scheduled"
SILENT_SCHEDULED_SOURCE_KIND: Final = "silent_scheduled"
EXTERNAL_TRIGGER_SOURCE_KIND: Final = "external_trigger"
HOOK_SOURCE_KIND: Final = "hook"
HOOK_DISPATCH_SOURCE_KIND: Final = "hook_dispatch"
MANAGED_SOURCE_KINDS: Final = frozenset(
    {
        SCHEDULED_SOURCE_KIND,
        SILENT_SCHEDULED_SOURCE_KIND,
        HOOK_SOURCE_KIND,
        HOOK_DISPATCH_SOURCE_KIND,
        TRUSTED_INTERNAL_RELAY_SOURCE_KIND,
    }
)
"""Source kinds only the daemon's own accounts produce: a turn of one of these kinds was sent by a bot."""

_SCHEDULED_KINDS = frozenset({SCHEDULED_SOURCE_KIND, SILENT_SCHEDULED_SOURCE_KIND})


class SenderKind(StrEnum):
    """Whether an account is a person's or one the daemon manages (an agent, a team, the router)."""

    USER = "user"
    MANAGED_ENTITY = "managed_entity"


class TurnTrust(StrEnum):
    """How far dispatch may trust the daemon's own metadata on a turn."""

    EXTERNAL = "external"
    TRUSTED_INTERNAL = "trusted_internal"
    TRUSTED_USER_RELAY = "trusted_user_relay"


class TurnIntent(StrEnum):
    """What a turn is for, once its metadata has been judged."""

    USER_MESSAGE = "user_message"
    MANAGED_MESSAGE = "managed_message"
    ROUTER_HANDOFF = "router_handoff"
    ROUTER_NOTICE = "router_notice"
    SCHEDULED_FIRE = "scheduled_fire"
    EXTERNAL_TRIGGER = "external_trigger"
    HOOK_MESSAGE = "hook_message"
    HOOK_DISPATCH = "hook_dispatch"
    TRUSTED_INTERNAL_RELAY = "trusted_internal_relay"
    JOB_FOLLOW_UP = "job_follow_up"


_BY_SOURCE_KIND = {
    SCHEDULED_SOURCE_KIND: TurnIntent.SCHEDULED_FIRE,
    SILENT_SCHEDULED_SOURCE_KIND: TurnIntent.SCHEDULED_FIRE,
    EXTERNAL_TRIGGER_SOURCE_KIND: TurnIntent.EXTERNAL_TRIGGER,
    HOOK_DISPATCH_SOURCE_KIND: TurnIntent.HOOK_DISPATCH,
    HOOK_SOURCE_KIND: TurnIntent.HOOK_MESSAGE,
}
_WITHOUT_MENTION = frozenset(
    {TurnIntent.HOOK_DISPATCH, TurnIntent.EXTERNAL_TRIGGER, TurnIntent.ROUTER_HANDOFF, TurnIntent.SCHEDULED_FIRE}
)
_INTERACTIVE = frozenset({TurnIntent.USER_MESSAGE, TurnIntent.ROUTER_HANDOFF, TurnIntent.TRUSTED_INTERNAL_RELAY})
_SUPERSEDABLE = frozenset({TurnIntent.USER_MESSAGE, TurnIntent.ROUTER_HANDOFF})


def select_intent(
    *, source_kind: str, sender_kind: SenderKind, trust: TurnTrust, sender_entity_name: str | None = None
) -> TurnIntent:
    """The intent of a turn, by the documented rule, first match wins.

    A trusted user relay is a router handoff (sent by the router) or a trusted internal relay; then the
    source kind decides (scheduled, external trigger, hook dispatch, hook message); then the router as
    sender gives a router notice, a `trusted_internal_relay` source a trusted internal relay, any other
    managed sender a managed message; everything else is a user message.
    """
    if trust is TurnTrust.TRUSTED_USER_RELAY:
        if sender_entity_name == ROUTER_AGENT_NAME:
            return TurnIntent.ROUTER_HANDOFF
        return TurnIntent.TRUSTED_INTERNAL_RELAY
    by_kind = _BY_SOURCE_KIND.get(source_kind)
    if by_kind is not None:
        return by_kind
    if sender_entity_name == ROUTER_AGENT_NAME:
        return TurnIntent.ROUTER_NOTICE
    if source_kind == TRUSTED_INTERNAL_RELAY_SOURCE_KIND:
        return TurnIntent.TRUSTED_INTERNAL_RELAY
    if sender_kind is SenderKind.MANAGED_ENTITY:
        return TurnIntent.MANAGED_MESSAGE
    return TurnIntent.USER_MESSAGE


@dataclass(frozen=True, slots=True)
class TurnOrigin:
    """Where one turn came from: the Matrix sender, the requester it acts for, their kinds, trust and intent."""

    transport_sender_id: str
    requester_id: str
    sender_entity_name: str | None
    requester_entity_name: str | None
    sender_kind: SenderKind
    requester_kind: SenderKind
    intent: TurnIntent
    source_kind: str
    trust: TurnTrust

    @classmethod
    def classify(
        cls,
        *,
        transport_sender_id: str,
        requester_id: str,
        source_kind: str,
        sender_entity_name: str | None = None,
        requester_entity_name: str | None = None,
        trusted_user_relay: bool = False,
    ) -> TurnOrigin:
        """The origin of a turn, its kinds from the entity names and its intent from `select_intent`.

        `trusted_user_relay` says the daemon checked that a managed sender relays for `requester_id`.
        """
        sender_kind = SenderKind.USER if sender_entity_name is None else SenderKind.MANAGED_ENTITY
        requester_kind = SenderKind.USER if requester_entity_name is None else SenderKind.MANAGED_ENTITY
        if trusted_user_relay and requester_id != transport_sender_id:
            trust = TurnTrust.TRUSTED_USER_RELAY
        elif sender_kind is SenderKind.MANAGED_ENTITY:
            trust = TurnTrust.TRUSTED_INTERNAL
        else:
            trust = TurnTrust.EXTERNAL
        intent = select_intent(
            source_kind=source_kind, sender_kind=sender_kind, trust=trust, sender_entity_name=sender_entity_name
        )
        return cls(
            transport_sender_id,
            requester_id,
            sender_entity_name,
            requester_entity_name,
            sender_kind,
            requester_kind,
            intent,
            source_kind,
            trust,
        )

    @classmethod
    def from_envelope_fields(cls, sender_id: str, requester_id: str, source_kind: str) -> TurnOrigin:
        """The origin an envelope of the hooks spec's shape implies, which names no entity.

        A managed source kind, or a requester other than the sender (a bot relaying for a person),
        marks the sender as managed; the requester of a relay is a person.
        """
        relayed = requester_id != sender_id
        managed = relayed or source_kind in MANAGED_SOURCE_KINDS
        sender_kind = SenderKind.MANAGED_ENTITY if managed else SenderKind.USER
        trust = TurnTrust.TRUSTED_INTERNAL if managed else TurnTrust.EXTERNAL
        return cls(
            sender_id,
            requester_id,
            None,
            None,
            sender_kind,
            SenderKind.USER if relayed else sender_kind,
            select_intent(source_kind=source_kind, sender_kind=sender_kind, trust=trust),
            source_kind,
            trust,
        )

    @property
    def may_dispatch_without_mention(self) -> bool:
        """True for hook dispatches, external triggers, router handoffs and scheduled fires."""
        return self.intent in _WITHOUT_MENTION

    @property
    def may_answer_interactive_prompt(self) -> bool:
        """True when a person asks directly, through a router handoff, or through a trusted relay."""
        return self.requester_kind is SenderKind.USER and self.intent in _INTERACTIVE

    @property
    def acting_sender_id(self) -> str:
        """Who acts: the relayed person for a trusted user relay, else the Matrix sender."""
        return self.requester_id if self.trust is TurnTrust.TRUSTED_USER_RELAY else self.transport_sender_id

    @property
    def blocks_unmentioned_managed_sender(self) -> bool:
        """True when a managed requester must mention an entity to be answered (bots do not chat unasked)."""
        return self.requester_kind is SenderKind.MANAGED_ENTITY and not self.may_dispatch_without_mention

    @property
    def may_be_superseded_by_newer_requester_turn(self) -> bool:
        """True when a newer message from the same person may replace this turn before it is answered."""
        return self.requester_kind is SenderKind.USER and self.intent in _SUPERSEDABLE
