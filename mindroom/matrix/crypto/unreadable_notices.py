"""The notice for an encrypted message a bot cannot read: once per sender session, from one bot of the daemon.

Every bot of the daemon in the room fails to read the same message, so they agree without talking: the
router answers when it is a member, else the daemon account with the lowest user id. Messages from the
daemon's own accounts, and messages older than the bot's start (which the pipeline would not answer
either), get no notice.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from mindroom.constants import ROUTER_AGENT_NAME
from mindroom.logging_config import get_logger
from mindroom.matrix.credentials import bot_user_id
from mindroom.matrix.crypto.undecrypted import UNDECRYPTABLE_NOTICE
from mindroom.matrix.delivery import stable_txn_id
from mindroom.matrix.events import CLOCK_SKEW_MS, MatrixEvent

__all__ = ["NoticeSender", "UnreadableNotices", "is_daemon_account", "notice_sender"]

logger = get_logger(__name__)


class NoticeSender(Protocol):
    """What the notices need of a bot's client."""

    @property
    def bot_name(self) -> str:
        """The bot's name in the config."""
        ...

    @property
    def user_id(self) -> str:
        """The bot's Matrix user id."""
        ...

    @property
    def server_name(self) -> str:
        """The Matrix server name."""
        ...

    @property
    def started_ms(self) -> int:
        """When the client was made."""
        ...

    async def room_members(self, room_id: str) -> list[str]:
        """The joined members of a room."""
        ...

    async def send_message(
        self,
        room_id: str,
        body: str,
        *,
        thread_root: str | None = None,
        reply_to: str | None = None,
        msgtype: str = "m.text",
        txn_id: str | None = None,
    ) -> str:
        """Send a message."""
        ...


def is_daemon_account(user_id: str, server_name: str, account_prefix: str) -> bool:
    """True for a user id of this daemon's bot accounts (`@<prefix>…:<server_name>`)."""
    localpart, _, server = user_id.removeprefix("@").partition(":")
    return server == server_name and localpart.startswith(account_prefix)


def notice_sender(members: Iterable[str], server_name: str, account_prefix: str) -> str | None:
    """The one daemon account among `members` that answers: the router, else the lowest user id."""
    ours = sorted(m for m in members if is_daemon_account(m, server_name, account_prefix))
    router = bot_user_id(ROUTER_AGENT_NAME, server_name, account_prefix)
    if router in ours:
        return router
    return ours[0] if ours else None


class UnreadableNotices:
    """Answers the unreadable messages a bot's sync hands over, when this bot is the one that answers."""

    def __init__(self, client: NoticeSender, account_prefix: str) -> None:
        self._client = client
        self._prefix = account_prefix

    async def answer(self, event: MatrixEvent) -> None:
        """Post the notice in the message's thread, unless another bot answers or no answer is due."""
        client = self._client
        if event.origin_server_ts < client.started_ms - CLOCK_SKEW_MS:
            return
        if is_daemon_account(event.sender, client.server_name, self._prefix):
            return
        members = await client.room_members(event.room_id)
        if notice_sender(members, client.server_name, self._prefix) != client.user_id:
            return
        logger.info(
            "unreadable message answered with a notice",
            agent=client.bot_name,
            room_id=event.room_id,
            event_id=event.event_id,
            sender=event.sender,
        )
        await client.send_message(
            event.room_id,
            UNDECRYPTABLE_NOTICE,
            thread_root=event.thread_root or event.event_id,
            reply_to=event.event_id,
            msgtype="m.notice",
            txn_id=stable_txn_id(client.bot_name, event.event_id, "undecryptable"),
        )
