"""Setting up the rooms a config names: the router creates or joins them, invites their agents and users.

A room found under a configured alias is used only when the daemon made it before, or one of its
accounts created it or holds its top power level: anyone can create `#alerts` first, and the bots
must not follow the operator's config into a stranger's room.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping

from mindroom.bots.access import membership_in_use
from mindroom.bots.bot import EntityBot
from mindroom.bots.directory import Directory
from mindroom.config.main import Config, RoomConfig
from mindroom.constants import ROUTER_AGENT_NAME
from mindroom.errors import MindroomError
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixBotClient, MatrixRequestError
from mindroom.matrix.room_policy import apply_room_state
from mindroom.matrix.rooms import RoomEntry

__all__ = ["set_up_rooms"]

logger = get_logger(__name__)

_Bot = EntityBot[MatrixBotClient]


async def set_up_rooms(
    router: _Bot, directory: Directory, config: Config, keys: Iterable[str], joiners: Mapping[str, _Bot]
) -> None:
    """The router creates or joins these rooms and invites their agents and users; `joiners` among them join."""
    defaults = config.room_defaults
    for key in keys:
        room_config = config.rooms.get(key) or RoomConfig()
        state = room_config.state(defaults)
        try:
            entry = await router.client.open_room(
                key, name=state.name or key, topic=state.topic, encrypted=state.encrypted
            )
        except MatrixRequestError as exc:
            logger.error("room cannot be joined; not using it", room=key, error=str(exc))
            continue
        room_id = entry.room_id
        if not await _room_is_ours(directory, router, key, entry):
            with contextlib.suppress(MindroomError):
                await router.client.leave(room_id)
            continue
        directory.keep_room(ROUTER_AGENT_NAME, room_id, "created" if entry.created else "verified", key)
        if state.encrypted and not entry.created:
            await router.client.enable_encryption(room_id)
        explicit = room_config.model_fields_set | defaults.model_fields_set
        await apply_room_state(
            router.client,
            room_id,
            state,
            name=not entry.created and bool({"display_name", "name"} & room_config.model_fields_set),
            join=state.join_policy != "invite" or (not entry.created and "join_policy" in explicit),
            listed="listed" in explicit,
            admins=bool(state.admins),
        )
        members = [name for name, entity in config.responders().items() if key in entity.rooms]
        invite = [directory.bot_user_ids[name] for name in members if name in directory.bot_user_ids]
        await router.client.invite_missing(room_id, [*invite, *state.invite_users])
        router.joined_rooms.add(room_id)
        directory.room_set_up(key, room_id)
        if membership_in_use(config) and not directory.members.known(room_id):
            await directory.members.read(router.client, room_id)
        await asyncio.gather(*(joiners[name].join(room_id) for name in members if name in joiners))
    await _set_up_space(router, directory, config)


async def _set_up_space(router: _Bot, directory: Directory, config: Config) -> None:
    """MindRoom's `matrix_space`: a space the router keeps, named as config says, with every configured room in it
    (and none the config no longer has) and the rooms' invited users invited (each part written only when it
    differs)."""
    space = config.matrix_space
    if space is None or not space.enabled or not directory.room_ids:
        return
    client = router.client
    key = f"{client.account_prefix}space"  # one per installation, as the accounts are
    try:
        entry = await client.open_room(key, name=space.name, space=True)
    except MatrixRequestError as exc:
        logger.error("space cannot be joined; rooms are not grouped", space=key, error=str(exc))
        return
    if not await _room_is_ours(directory, router, key, entry):
        with contextlib.suppress(MindroomError):
            await client.leave(entry.room_id)
        return
    space_id = entry.room_id
    if ((await client.get_room_state(space_id, "m.room.name", "")) or {}).get("name") != space.name:
        await client.put_room_state(space_id, "m.room.name", "", {"name": space.name})
    configured = set(config.managed_room_keys())
    wanted = {room_id for key, room_id in directory.room_ids.items() if key in configured}
    children = await client.get_room_state(space_id, "m.space.child") or {}
    for room_id in sorted(wanted):
        if not (children.get(room_id) or {}).get("via"):
            await client.put_room_state(space_id, "m.space.child", room_id, {"via": [client.server_name]})
    # A room taken out of the config leaves the space (an empty child event removes it); rooms someone else put
    # in the space, or the daemon keeps without a config key, stay.
    removed = {
        room.room_id
        for room in directory.memory.rooms(ROUTER_AGENT_NAME)
        if room.origin in ("created", "verified") and room.room_key and room.room_key not in configured
    }
    for room_id in sorted(removed - wanted):
        if (children.get(room_id) or {}).get("via"):
            await client.put_room_state(space_id, "m.space.child", room_id, {})
            logger.info("room left the space: no longer in the config", room_id=room_id)
    await client.invite_missing(space_id, list(config.room_defaults.invite_users))


async def _room_is_ours(directory: Directory, router: _Bot, key: str, entry: RoomEntry) -> bool:
    if entry.created or key.startswith("!") or directory.memory.known(entry.room_id):
        return True
    if await router.client.room_is_ours(entry.room_id, directory.bot_user_ids.values()):
        return True
    logger.error(
        "room alias belongs to an account outside this daemon; not using it",
        room=key,
        room_id=entry.room_id,
        fix="remove the alias from that room, or name another room in config.yaml",
    )
    return False
