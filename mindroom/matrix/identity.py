"""MindRoom's names for the daemon's own Matrix accounts, for plugins written against MindRoom.

MindRoom keys an agent's account `agent_<name>` in its account list; here each bot's account is the
credentials file `<data>/matrix/credentials/<name>.json` the daemon signs in with (see `mindroom.matrix.state`).
"""

from __future__ import annotations

from mindroom.constants import RuntimePaths
from mindroom.matrix.credentials import CredentialStore, bot_localpart

__all__ = ["ACCOUNT_KEY_PREFIX", "bot_name_of_key", "managed_account_key", "managed_account_user_id"]

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
