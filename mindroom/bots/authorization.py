"""Who may reach agents: pure decisions from config, room and user."""

from __future__ import annotations

from collections.abc import Iterable

from mindroom.config.main import Config

__all__ = ["is_authorized", "may_invite", "room_keys_for"]


def room_keys_for(room_id: str, aliases: Iterable[str], server_name: str) -> set[str]:
    """Every name a room can be listed under in config: its id, its aliases, and bare alias keys."""
    keys = {room_id}
    for alias in aliases:
        keys.add(alias)
        if alias.startswith("#") and alias.endswith(f":{server_name}"):
            keys.add(alias[1 : -(len(server_name) + 1)])
    return keys


def _listed(config: Config, user_id: str, room_keys: Iterable[str]) -> bool:
    """True if `room_permissions` lists `user_id` for a room known by one of `room_keys`."""
    keys = set(room_keys)
    return any(key in keys and user_id in users for key, users in config.authorization.room_permissions.items())


def is_authorized(
    config: Config,
    user_id: str,
    room_keys: Iterable[str],
    *,
    bot_user_ids: Iterable[str] = (),
    managed: bool = True,
    home_keys: Iterable[str] = (),
) -> bool:
    """True if `user_id` may reach agents in the room known by `room_keys` (its id, aliases, config keys).

    Global users may everywhere; room permissions list users per room; with `default_room_access`
    anyone in a `managed` room (one the config names) may. In a room the config does not name (a DM,
    a room an agent was invited into), a user listed for one of the agent's own rooms (`home_keys`)
    may reach that agent too. Room membership alone never authorizes.
    """
    if user_id in set(bot_user_ids):
        return True
    auth = config.authorization
    if user_id in auth.global_users or _listed(config, user_id, room_keys):
        return True
    if managed:
        return auth.default_room_access
    return _listed(config, user_id, home_keys)


def may_invite(
    config: Config,
    inviter: str,
    room_keys: Iterable[str],
    *,
    bot_user_ids: Iterable[str] = (),
    home_keys: Iterable[str] = (),
) -> bool:
    """True if a bot should accept an invite from `inviter`: our bots, global users, users of that room, or
    users listed for one of the agent's own rooms (`home_keys`); `default_room_access` lets nobody in."""
    if inviter in set(bot_user_ids) or inviter in config.authorization.global_users:
        return True
    return _listed(config, inviter, room_keys) or _listed(config, inviter, home_keys)
