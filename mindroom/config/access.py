"""Who may talk to a responder and whose invites it takes: `access`, `accept_invites`, `authorization`.

MindRoom's responders (agents, teams, the router) each say who may converse with them (`access`: members of
the current room, members of managed rooms, listed users or globs), and whose room invites they accept
(`accept_invites`: true, false, or inviter ids and globs). This daemon's own `authorization` keys
(`global_users`, `room_permissions`, `default_room_access`) sit beside them; `mindroom.bots.access` decides.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator

from mindroom.config.strict import StrictModel

__all__ = [
    "OWNER_PLACEHOLDER",
    "AuthorizationConfig",
    "InvitePolicy",
    "ResponderAccessConfig",
    "concrete_user_ids",
    "distinct",
]

OWNER_PLACEHOLDER = "__MINDROOM_OWNER_USER_ID_FROM_PAIRING__"
_CONCRETE_USER = re.compile(r"^@[^:*?\[\]\s]+:[^*?\[\]\s]+$")


def distinct(values: list[str], what: str) -> list[str]:
    """`values` unchanged; `ValueError` naming the repeated ones."""
    repeated = sorted({value for value in values if values.count(value) > 1})
    if repeated:
        msg = f"{what} lists {', '.join(repeated)} more than once"
        raise ValueError(msg)
    return values


def concrete_user_ids(values: list[str], what: str) -> list[str]:
    """`values` unchanged when each is a distinct, concrete Matrix user id (no globs); else `ValueError`."""
    odd = [value for value in values if value != OWNER_PLACEHOLDER and not _CONCRETE_USER.match(value)]
    if odd:
        msg = f"{what} must be concrete Matrix user ids (not {odd})"
        raise ValueError(msg)
    return distinct(values, what)


def _invite_policy(value: Any) -> Any:
    # MindRoom writes true / false / [globs]; this daemon's own words are `authorized` and `never`.
    if value is False or value == []:
        return "never"
    if value is True:
        return "all"
    if isinstance(value, list):
        return tuple(distinct(value, "accept_invites"))
    return value


InvitePolicy = Annotated[Literal["authorized", "never", "all"] | tuple[str, ...], BeforeValidator(_invite_policy)]
"""Whose invites a responder accepts: `authorized` (people who may talk to it: the default here), `all`
(MindRoom's `true`), `never` (`false` or `[]`), or inviters matching one of these ids or globs."""


class ResponderAccessConfig(StrictModel):
    """Who may converse with one responder; any clause admits a person (administrators always may)."""

    current_room_members: bool | None = None
    """Members of the room the message is in (unset: the router yes, agents and teams no)."""
    members_of_rooms: list[str] | None = None
    """Members of these managed rooms (unset: the responder's own `rooms`; `[]`: none)."""
    users: list[str] = Field(default_factory=list)
    """Matrix ids or globs (`@*:example.org`)."""

    @field_validator("members_of_rooms", "users")
    @classmethod
    def _distinct(cls, values: list[str] | None) -> list[str] | None:
        return None if values is None else distinct(values, "access")


class AuthorizationConfig(StrictModel):
    """Who may reach agents (this daemon's keys), bridged accounts (`aliases`), and the `!config` switch."""

    global_users: list[str] = Field(default_factory=list)
    room_permissions: dict[str, list[str]] = Field(default_factory=dict)
    default_room_access: bool = False
    config_command_enabled: bool = False
    """Whether `!config` (for `administrators` only) reads and changes config keys from chat."""
    aliases: dict[str, list[str]] = Field(default_factory=dict)
    """Person -> the bridged accounts that speak as them (a message from one counts as the person's)."""

    @field_validator("aliases")
    @classmethod
    def _one_person_each(cls, aliases: dict[str, list[str]]) -> dict[str, list[str]]:
        every = [alias for values in aliases.values() for alias in values]
        distinct(every, "authorization.aliases")
        chained = sorted(person for person in aliases if person in every)
        if chained:
            msg = f"authorization.aliases: {', '.join(chained)} is a person and an alias at once"
            raise ValueError(msg)
        return aliases

    @property
    def agent_reply_permissions(self) -> dict[str, list[str]]:
        """MindRoom's older per-agent reply lists: none here (`agents.<name>.access` says who may talk to one)."""
        return {}

    def person(self, user_id: str) -> str:
        """The person `user_id` speaks as: the one it is an alias of, else itself."""
        for person, aliases in self.aliases.items():
            if user_id in aliases:
                return person
        return user_id
