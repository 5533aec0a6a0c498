"""Reading rooms' hook policy (`com.mindroom.hooks.policy`) from their state: once per room at start, and when a
policy arrives in a room never read; every later change comes with the state events the bots receive."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from mindroom.bots.bot_client import BotClient
from mindroom.hooks.room_policy import RoomHookPolicies
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixError, MatrixEvent
from mindroom.matrix.transport import quote_path

__all__ = ["note_state_event", "read_room_policies", "read_room_policy"]

logger = get_logger(__name__)


async def read_room_policies(client: BotClient, policies: RoomHookPolicies, room_ids: Iterable[str]) -> None:
    """Read the state of each room no bot has read yet into `policies`."""
    for room_id in room_ids:
        if policies.claim(room_id):
            await read_room_policy(client, policies, room_id)


async def read_room_policy(client: BotClient, policies: RoomHookPolicies, room_id: str) -> None:
    """Read one room's state into `policies` (a failure is logged; the room keeps what its events said)."""
    try:
        reply = await client.api("GET", f"/_matrix/client/v3/rooms/{quote_path(room_id)}/state")
    except MatrixError as exc:
        logger.warning("room state unreadable; its hook policy is not known", room_id=room_id, error=str(exc))
        policies.forget(room_id)
        return
    if not reply.ok or not isinstance(reply.body, list):
        logger.warning("room state unreadable; its hook policy is not known", room_id=room_id, error=reply.errcode)
        policies.forget(room_id)
        return
    policies.load(room_id, reply.body)


def note_state_event(
    client: BotClient,
    policies: RoomHookPolicies,
    event: MatrixEvent,
    own_user_id: str | None,
    spawn: Callable[[Awaitable[None], str], None],
) -> None:
    """Keep the rooms' hook policy current with a state event a bot received; a room the bot has just joined,
    or where a policy came before its state was read, is read once (in a task `spawn` owns)."""
    if policies.note(event):
        spawn(read_room_policy(client, policies, event.room_id), "room hook policy")
    elif event.membership == "join" and event.state_key == own_user_id and not policies.known(event.room_id):
        spawn(read_room_policies(client, policies, [event.room_id]), "room hook policy")
