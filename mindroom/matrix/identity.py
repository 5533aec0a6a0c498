"""MindRoom's names for the daemon's own Matrix accounts and for Matrix user ids, for plugins written against MindRoom.

MindRoom keys an agent's account `agent_<name>` in its account list; here each bot's account is the
credentials file `<data>/matrix/credentials/<name>.json` the daemon signs in with (see `mindroom.matrix.state`).
"""

from __future__ import annotations

from dataclasses import dataclass

from mindroom.constants import DEFAULT_ACCOUNT_PREFIX, RuntimePaths
from mindroom.matrix.credentials import CredentialStore, bot_localpart

__all__ = ["ACCOUNT_KEY_PREFIX", "MatrixID", "bot_name_of_key", "managed_account_key", "managed_account_user_id"]

ACCOUNT_KEY_PREFIX = "agent_"
"""What MindRoom puts before an entity's name to key its account."""


def managed_account_key(entity_name: str) -> str:
    """The account key of an agent, team or the router: `agent_<name>`."""
    return f"{ACCOUNT_KEY_PREFIX}{entity_name}"


def bot_name_of_key(account_key: str) -> str:
    """The bot an account key names; `ValueError` naming the key when it names none of the daemon's bots."""
    name = account_key.removeprefix(ACCOUNT_KEY_PREFIX)
    if name == account_key or not name:
        msg = f"account key {account_key!r} names no bot of the daemon (expected agent_<name>)"
        raise ValueError(msg)
    bot_localpart(name)  # the bot-name rule, before the name becomes part of a path
    return name


def managed_account_user_id(account_key: str, domain: str, runtime_paths: RuntimePaths) -> str | None:
    """The Matrix user id of a bot whose account the daemon keeps, None while it keeps none for it.

    The stored account carries its full user id, so `domain` (MindRoom's fallback server name) is not needed.
    """
    del domain
    try:
        name = bot_name_of_key(account_key)
    except ValueError:
        return None
    credentials = CredentialStore(runtime_paths.storage_root).load(name)
    return credentials.user_id if credentials is not None else None


@dataclass(frozen=True, slots=True)
class MatrixID:
    """A Matrix user id, `@<username>:<domain>`."""

    username: str
    domain: str

    @classmethod
    def parse(cls, matrix_id: str) -> MatrixID:
        """The parts of `@user:server`; `ValueError` naming the id when it has no `@`, no `:` or an empty part."""
        username, colon, domain = matrix_id.removeprefix("@").partition(":")
        if not matrix_id.startswith("@") or not colon or not username or not domain:
            msg = f"{matrix_id!r} is not a Matrix user id (@user:server)"
            raise ValueError(msg)
        return cls(username, domain)

    @classmethod
    def from_username(cls, username: str, domain: str) -> MatrixID:
        """The id of `username` (without `@`) on `domain`."""
        return cls(username, domain)

    @classmethod
    def from_agent(cls, agent_name: str, domain: str, runtime_paths: RuntimePaths | None = None) -> MatrixID:
        """The account of an agent, team or the router: the user id its credentials file holds, else the one the
        daemon would register, `@<prefix><name>:<domain>` (`MINDROOM_ACCOUNT_PREFIX`, default `mindroom_`);
        `ValueError` for a name no bot can have."""
        if runtime_paths is None:
            return cls(bot_localpart(agent_name), domain)
        stored = managed_account_user_id(managed_account_key(agent_name), domain, runtime_paths)
        if stored is not None:
            return cls.parse(stored)
        prefix = runtime_paths.env_value("MINDROOM_ACCOUNT_PREFIX") or DEFAULT_ACCOUNT_PREFIX
        return cls(bot_localpart(agent_name, prefix), domain)

    @property
    def full_id(self) -> str:
        """`@<username>:<domain>`."""
        return f"@{self.username}:{self.domain}"

    def __str__(self) -> str:
        """The full id."""
        return self.full_id
