"""The hooks spec's flat `MessageEnvelope` shape, as an adapter onto the 2026 API's canonical one.

The hooks spec built an envelope from flat names: `MessageEnvelope(source_event_id, room_id, thread_id,
resolved_thread_id, requester_id, sender_id, body, attachment_ids, mentioned_agents, agent_name,
source_kind, hook_source=None, message_received_depth=0)`. The 2026 API holds the same facts in a
`MessageTarget` and a `TurnOrigin`, and only those are stored. `accepts_older_shape` lets the envelope's
constructor take the flat names too: it turns them into `target=` and `origin=` and hands every other
keyword on unchanged, so a field added to the envelope needs nothing here.

The daemon builds every envelope in the 2026 shape (each door of `mindroom.bots.turn`): a call in that shape
only passes the check of which shape it is. The conversion serves plugins written for the hooks spec (and
the testing kit that builds contexts from flat keywords).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from mindroom.hooks.origin import TurnOrigin
from mindroom.hooks.target import MessageTarget, session_id_for

__all__ = ["FLAT_NAMES", "ORIGIN_NAMES", "TARGET_NAMES", "accepts_older_shape"]

TARGET_NAMES = ("room_id", "thread_id", "resolved_thread_id")
"""The flat names `envelope.target` holds (`thread_id` is its `source_thread_id`)."""
ORIGIN_NAMES = ("requester_id", "sender_id", "source_kind")
"""The flat names `envelope.origin` holds (`sender_id` is its `transport_sender_id`)."""
FLAT_NAMES = frozenset(TARGET_NAMES + ORIGIN_NAMES)
"""Every flat name: given one, the constructor builds `target` and `origin` from the flat values."""

# The hooks spec's positional order (the 2026 API's dispatch policy kind may follow it).
_POSITIONAL = (
    "source_event_id",
    *TARGET_NAMES,
    "requester_id",
    "sender_id",
    "body",
    "attachment_ids",
    "mentioned_agents",
    "agent_name",
    "source_kind",
    "hook_source",
    "message_received_depth",
    "dispatch_policy_source_kind",
)

_T = TypeVar("_T")


def accepts_older_shape(cls: type[_T]) -> type[_T]:
    """Let the envelope class also take the flat shape: as the hooks spec's constructor, or as flat names
    `dataclasses.replace` adds to the canonical fields (a changed flat name re-derives what it contradicts)."""
    canonical: Callable[..., None] = cls.__init__  # type: ignore[misc]

    @functools.wraps(canonical)
    def either_shape(self: Any, *args: Any, **kwargs: Any) -> None:
        """The canonical constructor, given a call with flat names as `_canonical_keywords` turns it."""
        # Flat: a room id where the target goes, no target at all, or flat names beside the target.
        flat = not isinstance(args[1], MessageTarget) if len(args) > 1 else "target" not in kwargs
        if flat or not FLAT_NAMES.isdisjoint(kwargs):
            canonical(self, **_canonical_keywords(args, kwargs))
        else:
            canonical(self, *args, **kwargs)

    cls.__init__ = either_shape  # type: ignore[method-assign]
    return cls


def _canonical_keywords(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The 2026 API's keywords for a call with flat names (`kwargs` is the call's own dict, reused).

    A `target` or `origin` given beside them is kept when the flat names agree with it, else derived from
    them, as the hooks spec's envelope implied it.
    """
    if args:
        kwargs = _with_positional(args, kwargs)
    if "target" not in kwargs and "origin" not in kwargs:
        # The flat shape in full: how a plugin of the hooks spec builds a message.
        pop = kwargs.pop
        try:
            room_id, thread_id, resolved_thread_id = pop("room_id"), pop("thread_id"), pop("resolved_thread_id")
            requester_id, sender_id, source_kind = pop("requester_id"), pop("sender_id"), pop("source_kind")
        except KeyError as missing:
            msg = f"MessageEnvelope() missing required argument: {missing}"
            raise TypeError(msg) from None
        kwargs["target"] = _target(room_id, thread_id, resolved_thread_id, kwargs.get("source_event_id"))
        kwargs["origin"] = _origin(requester_id, sender_id, source_kind)
        return kwargs
    target, origin = kwargs.pop("target", None), kwargs.pop("origin", None)
    carried_target = _target_names(target) if isinstance(target, MessageTarget) else None
    carried_origin = _origin_names(origin) if isinstance(origin, TurnOrigin) else None
    where = _take(kwargs, TARGET_NAMES, carried_target)
    who = _take(kwargs, ORIGIN_NAMES, carried_origin)
    if where != carried_target:
        target = _target(where[0], where[1], where[2], kwargs.get("source_event_id"))
    if who != carried_origin:
        origin = _origin(who[0], who[1], who[2])
    kwargs["target"] = target
    kwargs["origin"] = origin
    return kwargs


def _with_positional(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments by name, positional ones in the hooks spec's order."""
    if len(args) > len(_POSITIONAL):
        msg = f"MessageEnvelope() takes at most {len(_POSITIONAL)} positional arguments ({len(args)} given)"
        raise TypeError(msg)
    named = dict(zip(_POSITIONAL, args, strict=False))
    for name in kwargs:
        if name in named:
            msg = f"MessageEnvelope() got multiple values for argument {name!r}"
            raise TypeError(msg)
    named.update(kwargs)
    return named


def _target_names(target: MessageTarget) -> tuple[Any, ...]:
    return (target.room_id, target.source_thread_id, target.resolved_thread_id)


def _origin_names(origin: TurnOrigin) -> tuple[Any, ...]:
    return (origin.requester_id, origin.transport_sender_id, origin.source_kind)


def _take(values: dict[str, Any], names: tuple[str, ...], carried: tuple[Any, ...] | None) -> tuple[Any, ...]:
    """The flat values of `names`, each from the call, else from the carried target or origin."""
    taken = []
    for index, name in enumerate(names):
        if name in values:
            taken.append(values.pop(name))
        elif carried is not None:
            taken.append(carried[index])
        else:
            msg = f"MessageEnvelope() missing required argument: {name!r}"
            raise TypeError(msg)
    return tuple(taken)


# The same few people and kinds recur message after message, and an origin is an immutable value.
_cached_origin = functools.lru_cache(maxsize=256)(TurnOrigin.from_envelope_fields)


def _origin(requester_id: Any, sender_id: Any, source_kind: Any) -> TurnOrigin:
    """The origin flat names imply (`TurnOrigin.from_envelope_fields`)."""
    try:
        return _cached_origin(sender_id, requester_id, source_kind)
    except TypeError:  # an unhashable id from a plugin's own envelope: nothing to cache it by
        return TurnOrigin.from_envelope_fields(sender_id, requester_id, source_kind)


_set = object.__setattr__


def _target(room_id: Any, thread_id: Any, resolved_thread_id: Any, source_event_id: Any) -> MessageTarget:
    """The target flat names imply (the answer replies to the message itself), holding the ids as given.

    The hooks spec never checked these ids, and a context built without a message has an empty room: the
    target is filled in without `MessageTarget`'s checks, which the flat shape's envelope never had.
    """
    target = object.__new__(MessageTarget)
    _set(target, "room_id", room_id)
    _set(target, "source_thread_id", thread_id)
    _set(target, "resolved_thread_id", resolved_thread_id)
    _set(target, "reply_to_event_id", source_event_id or None)
    _set(target, "session_id", session_id_for(room_id, resolved_thread_id))
    return target
