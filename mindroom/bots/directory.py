"""`Directory`: who is where — the running entities and their Matrix ids, the rooms config names, the rooms kept.

The orchestrator fills it (entities, rooms it set up) and each bot adds its own user id at login and the
rooms it was invited into. The pipeline only reads it: who may speak where, which agents a room has,
whether the router is there.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from mindroom.bots.access import responder_admits
from mindroom.bots.authorization import is_authorized, room_keys_for
from mindroom.bots.room_members import RoomMembers
from mindroom.bots.runtime import Entity
from mindroom.config.main import Config
from mindroom.constants import ROUTER_AGENT_NAME
from mindroom.state.rooms import RoomMemory, RoomOrigin

__all__ = ["Directory"]


class Directory:
    """The daemon's accounts and rooms; `entities` is the orchestrator's own map of running bots."""

    def __init__(
        self,
        server_name: str,
        memory: RoomMemory,
        *,
        entities: Mapping[str, Entity] | None = None,
        bot_user_ids: Mapping[str, str] | None = None,
        room_ids: Mapping[str, str] | None = None,
    ) -> None:
        self.server_name = server_name
        self.memory = memory
        """Rooms kept across restarts: made, verified, retained by a plugin, or joined on an invite."""
        self.entities: Mapping[str, Entity] = {} if entities is None else entities
        self._user_ids = dict(bot_user_ids or {})
        self._room_ids = dict(room_ids or {})
        self._keys: dict[str, frozenset[str]] = {}
        """`room_keys` per room id (every message asks, once per entity; cleared when a room is set up)."""
        self.members = RoomMembers()
        """Who has joined which room, for access by membership (filled only when a config uses it)."""

    # -- accounts --------------------------------------------------------------------------------------
    @property
    def bot_user_ids(self) -> Mapping[str, str]:
        """Entity name -> Matrix user id, for every account signed in."""
        return self._user_ids

    @property
    def agent_user_ids(self) -> dict[str, str]:
        """Agent or team name -> Matrix user id (the router excluded)."""
        return {name: user for name, user in self._user_ids.items() if name != ROUTER_AGENT_NAME}

    def signed_in(self, name: str, user_id: str) -> None:
        """Entity `name` is logged in as `user_id`."""
        self._user_ids[name] = user_id

    def signed_out(self, name: str) -> None:
        """Entity `name` is gone (removed from config)."""
        self._user_ids.pop(name, None)

    @property
    def router(self) -> Entity | None:
        """The router, when it runs."""
        return self.entities.get(ROUTER_AGENT_NAME)

    # -- rooms -----------------------------------------------------------------------------------------
    @property
    def room_ids(self) -> Mapping[str, str]:
        """Config room key -> room id, for the rooms the daemon set up (read-only: `room_set_up` changes it)."""
        return MappingProxyType(self._room_ids)

    def room_set_up(self, key: str, room_id: str) -> None:
        """The room config names `key` is `room_id`."""
        self._room_ids[key] = room_id
        self._keys.clear()

    def keep_room(self, entity: str, room_id: str, origin: RoomOrigin, key: str | None = None) -> None:
        """Remember a room of `entity` across restarts (and how it became one of the daemon's)."""
        self.memory.remember(entity, room_id, origin, key)

    def forget_room(self, entity: str, room_id: str) -> None:
        """`entity` left the room: forget it, if it was one it was invited into."""
        self.memory.forget(entity, room_id)

    def room_keys(self, room_id: str) -> frozenset[str]:
        """Every name config may give this room: its id, the config keys naming it, and their aliases."""
        known = self._keys.get(room_id)
        if known is None:
            keys = [key for key, rid in self._room_ids.items() if rid == room_id]
            aliases = [key if key.startswith("#") else f"#{key}:{self.server_name}" for key in keys]
            known = self._keys[room_id] = frozenset(room_keys_for(room_id, aliases, self.server_name) | set(keys))
        return known

    def is_managed(self, room_id: str) -> bool:
        """True for a room the daemon manages (named in config), not one an agent was only invited into."""
        return room_id in self._room_ids.values()

    def is_kept(self, room_id: str) -> bool:
        """True for a room of the daemon: managed, or kept (made, retained, or joined on an invite)."""
        return self.is_managed(room_id) or self.memory.known(room_id)

    def agents_in_room(self, room_id: str, config: Config) -> tuple[str, ...]:
        """Agents and teams of this room in config order: configured for it, or invited into it (running bots only)."""
        keys = self.room_keys(room_id)
        entities = self.entities
        return tuple(
            name
            for name, agent in config.responders().items()
            if name in entities
            and (any(room in keys for room in agent.rooms) or room_id in entities[name].joined_rooms)
        )

    def home_keys(self, entity: str, config: Config) -> set[str]:
        """Every name of the rooms config gives agent or team `entity` (none for the router)."""
        agent = config.responders().get(entity)
        if agent is None:
            return set()
        keys = set(agent.rooms)
        for room_id in set(self._room_ids.values()):
            names = self.room_keys(room_id)
            if any(room in names for room in agent.rooms):
                keys |= names
        return keys

    def may_reach(self, config: Config, user_id: str, room_id: str, entity: str | None = None) -> bool:
        """True if `user_id` may reach the daemon's bots in `room_id` (the `authorization:` rules, and
        `entity`'s `access`); in a room config does not name, a user of one of `entity`'s own rooms may reach
        that entity too. A bridged account (`authorization.aliases`) is judged as its person."""
        person = user_id if user_id in config.bot_accounts else config.authorization.person(user_id)
        managed = self.is_managed(room_id)
        if is_authorized(
            config,
            person,
            self.room_keys(room_id),
            bot_user_ids=self._user_ids.values(),
            managed=managed,
            home_keys=() if managed or entity is None else self.home_keys(entity, config),
        ):
            return True
        if entity is None or user_id in self._user_ids.values():
            return False
        return responder_admits(config, entity, person, room_id, members=self.members, room_ids=self._room_ids)

    def router_in_room(self, room_id: str) -> bool:
        """True when the router manages this room (it joins every configured room)."""
        return self.is_managed(room_id) and ROUTER_AGENT_NAME in self.entities
