"""`rooms:`, `room_defaults:`, `router:` and `matrix_space:`: the rooms the daemon manages and who runs them.

A room's Matrix state comes from its entry over `room_defaults` (MindRoom's keys): its name (`display_name`),
topic, who may join (`join_policy`), whether it is in the server's directory (`listed`), encryption, who is
invited and who gets administrator power.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from mindroom.config.access import InvitePolicy, ResponderAccessConfig, concrete_user_ids
from mindroom.config.strict import StrictModel

__all__ = [
    "JoinPolicy",
    "MatrixSpaceConfig",
    "RoomConfig",
    "RoomDefaultsConfig",
    "RoomState",
    "RouterConfig",
    "ThreadMode",
]

ThreadMode = Literal["thread", "room"]
"""`thread`: answers go into a thread under the message; `room`: into the main timeline as replies."""
JoinPolicy = Literal["invite", "knock", "public"]
"""Who may join a managed room: the invited, those who knock and are let in, or anyone."""


class RoomDefaultsConfig(StrictModel):
    """Applied to every room the daemon manages (each room may set its own)."""

    join_policy: JoinPolicy = "invite"
    listed: bool = False
    encrypted: bool = False
    """End-to-end encryption for managed rooms (turned on, never off)."""
    invite_users: list[str] = Field(default_factory=list)
    admins: list[str] = Field(default_factory=list)
    """Accounts given administrator power (100) in every managed room."""

    @field_validator("admins")
    @classmethod
    def _concrete(cls, values: list[str]) -> list[str]:
        return concrete_user_ids(values, "room_defaults.admins")


class RoomConfig(StrictModel):
    """A room the daemon creates or joins; unset keys take `room_defaults`'."""

    display_name: str | None = None
    """The room's name (MindRoom's key); `name` is this daemon's own spelling of it."""
    name: str | None = None
    description: str = ""
    topic: str | None = None
    thread_mode: ThreadMode | None = None
    join_policy: JoinPolicy | None = None
    listed: bool | None = None
    encrypted: bool | None = None
    invite_users: list[str] | None = None
    admins: list[str] | None = None

    @field_validator("display_name", "name")
    @classmethod
    def _blank_is_unset(cls, value: str | None) -> str | None:
        return (value.strip() or None) if value is not None else None

    @field_validator("admins")
    @classmethod
    def _concrete(cls, values: list[str] | None) -> list[str] | None:
        return None if values is None else concrete_user_ids(values, "admins")

    def state(self, defaults: RoomDefaultsConfig) -> RoomState:
        """This room's Matrix state: its own keys over `defaults`."""
        return RoomState(
            name=self.display_name or self.name,
            topic=self.topic if self.topic is not None else (self.description or None),
            join_policy=self.join_policy or defaults.join_policy,
            listed=defaults.listed if self.listed is None else self.listed,
            encrypted=defaults.encrypted if self.encrypted is None else self.encrypted,
            invite_users=tuple(defaults.invite_users if self.invite_users is None else self.invite_users),
            admins=tuple(defaults.admins if self.admins is None else self.admins),
        )


class RoomState(StrictModel):
    """What a managed room should look like in Matrix (a room without an entry has `room_defaults` alone)."""

    name: str | None = None
    topic: str | None = None
    join_policy: JoinPolicy = "invite"
    listed: bool = False
    encrypted: bool = False
    invite_users: tuple[str, ...] = ()
    admins: tuple[str, ...] = ()


class RouterConfig(StrictModel):
    """The router picks which agent answers in rooms with several agents."""

    model: str = "default"
    display_name: str = "Router"
    password: str | None = None
    plugins: list[str] | None = None
    accept_invites: InvitePolicy = "authorized"
    access: ResponderAccessConfig | None = None


class MatrixSpaceConfig(StrictModel):
    """A Matrix space holding every managed room (MindRoom's `matrix_space`)."""

    enabled: bool = True
    name: str = "MindRoom"

    @field_validator("name")
    @classmethod
    def _named(cls, value: str) -> str:
        if not value.strip():
            msg = "matrix_space.name must not be empty"
            raise ValueError(msg)
        return value.strip()
