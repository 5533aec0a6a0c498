"""MindRoom's access rules: who may talk to a responder (`access`), and whose invites it takes (`accept_invites`).

A responder admits a person when any clause of its `access` does: members of the room the message is in
(`current_room_members`), members of managed rooms (`members_of_rooms`), or listed ids and globs (`users`).
Administrators always pass. The rules apply to a responder that sets `access`, and to every responder of a
config that sets none of this daemon's own `authorization` keys (`global_users`, `room_permissions`,
`default_room_access`): there MindRoom's defaults hold (an agent or team admits the members of its own
rooms, the router the members of the room). Either way, whoever `authorization` admits stays admitted.
Bridged accounts (`authorization.aliases`) are judged as the person they speak for.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping

from mindroom.bots.room_members import RoomMembers
from mindroom.config.access import ResponderAccessConfig
from mindroom.config.main import Config
from mindroom.constants import ROUTER_AGENT_NAME

__all__ = ["access_rules", "invite_accepted", "matches_any", "membership_in_use", "responder_admits"]

_OWN_AUTHORIZATION_KEYS = frozenset({"global_users", "room_permissions", "default_room_access"})


def matches_any(user_id: str, patterns: Iterable[str]) -> bool:
    """True when `user_id` is one of `patterns` or matches one as a glob (`@*:example.org`)."""
    return any(user_id == pattern or fnmatch.fnmatchcase(user_id, pattern) for pattern in patterns)


def _mindroom_defaults(config: Config) -> bool:
    return not (_OWN_AUTHORIZATION_KEYS & config.authorization.model_fields_set)


def access_rules(config: Config, entity: str) -> ResponderAccessConfig | None:
    """The access rules `entity` follows: its own, MindRoom's default for it, or None (this daemon's
    `authorization` alone decides)."""
    if entity == ROUTER_AGENT_NAME:
        own = config.router.access
    else:
        responder = config.responders().get(entity)
        own = responder.access if responder is not None else None
    if own is not None:
        return own
    return ResponderAccessConfig() if _mindroom_defaults(config) else None


def membership_in_use(config: Config) -> bool:
    """Whether any responder admits people by room membership (so members must be read and kept)."""
    names = [ROUTER_AGENT_NAME, *config.responders()]
    rules = [access_rules(config, name) for name in names]
    return any(
        rule is not None and (rule.current_room_members is not False or rule.members_of_rooms != []) for rule in rules
    )


def responder_admits(
    config: Config,
    entity: str,
    user_id: str,
    room_id: str,
    *,
    members: RoomMembers,
    room_ids: Mapping[str, str],
) -> bool:
    """True when `entity`'s access rules admit `user_id` (a person, aliases resolved) in `room_id`.

    `room_ids` maps managed room keys to their ids (the rooms `members_of_rooms` names).
    """
    rules = access_rules(config, entity)
    if rules is None:
        return False
    if user_id in config.administrators or matches_any(user_id, rules.users):
        return True
    here = rules.current_room_members
    if (here if here is not None else entity == ROUTER_AGENT_NAME) and members.is_member(user_id, (room_id,)):
        return True
    keys = rules.members_of_rooms
    if keys is None:
        responder = config.responders().get(entity)
        keys = list(responder.rooms) if responder is not None else []
    rooms = [room_ids.get(key, key) for key in keys if key in room_ids or key.startswith("!")]
    return members.is_member(user_id, rooms)


def invite_accepted(config: Config, entity: str, inviter: str, *, authorized: bool, admitted: bool) -> bool:
    """Whether `entity` joins on `inviter`'s invite: `accept_invites` says (`authorized`: whom `authorization`
    or the access rules admit, which the caller found: `authorized`, `admitted`)."""
    if entity == ROUTER_AGENT_NAME:
        policy = config.router.accept_invites
    else:
        responder = config.responders().get(entity)
        policy = responder.accept_invites if responder is not None else "authorized"
    if policy == "all":
        return True
    if policy == "never":
        return False
    if isinstance(policy, tuple):
        return matches_any(inviter, policy)
    return authorized or admitted
