"""`!connect`, `!disconnect`, `!connections`: a person connects their own accounts for the agents' tools.

- `!connect <provider>` answers with the scopes the provider is asked for and a link to connect the asker's
  account (one use, 10 minutes). The link
  is given only in a room where nobody but the asker and the daemon's accounts could open it first (a
  direct message): the daemon has no way of its own to answer someone privately elsewhere.
- `!disconnect <provider>` revokes the tokens at the provider (when it has a revocation endpoint) and
  forgets them; `!connections` lists the asker's own connections. `!connect` alone lists the providers.

Every command acts for the requester (`MessageEnvelope.requester_id`), never for a name in its text.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from mindroom.bots.commands.table import Command
from mindroom.bots.runtime import Entity, LiveState
from mindroom.hooks.context import MessageEnvelope
from mindroom.logging_config import get_logger
from mindroom.oauth.errors import OAuthError
from mindroom.oauth.service import OAuthConnections

__all__ = ["connection_commands"]

logger = get_logger(__name__)


def _providers_line(connections: OAuthConnections) -> str:
    providers, _ = connections.providers()
    return ", ".join(sorted(providers)) or "none is set up"


def connection_commands(connections: OAuthConnections, bot_user_ids: Callable[[], Collection[str]]) -> list[Command]:
    """The three commands on `connections`; `bot_user_ids` gives the daemon's accounts (they may see a link)."""

    async def private(entity: Entity, envelope: MessageEnvelope) -> bool:
        members = await entity.client.room_members(envelope.room_id)
        others = set(members) - {envelope.requester_id} - set(bot_user_ids())
        return not others

    async def connect(entity: Entity, live: LiveState, envelope: MessageEnvelope, args: str) -> str:
        provider = args.strip()
        if not provider:
            return f"Usage: !connect <provider> (providers: {_providers_line(connections)})"
        # Asked outside a direct message, nothing is contacted: no discovery, no client registered at a server.
        if not await private(entity, envelope):
            return f"Send `!connect {provider}` to me in a direct message: connect links are only given there."
        try:
            await connections.prepare(provider)  # an MCP server's endpoints are found (and a client registered) now
            scopes = connections.provider(provider).scopes
            link = connections.connect_link(envelope.requester_id, provider)
        except OAuthError as error:
            return str(error)
        logger.info("OAuth connect link given", requester=envelope.requester_id, provider=provider)
        # What the person grants, said before they open the provider's page.
        asked = f"it asks for: {', '.join(scopes)}" if scopes else "it asks for no scopes beyond the provider's own"
        return f"Open this link to connect your {provider} account ({asked}; it works once, for 10 minutes):\n{link}"

    async def disconnect(entity: Entity, live: LiveState, envelope: MessageEnvelope, args: str) -> str:
        provider = args.strip()
        if not provider:
            return "Usage: !disconnect <provider>"
        return await connections.disconnect(envelope.requester_id, provider)

    async def listing(entity: Entity, live: LiveState, envelope: MessageEnvelope, args: str) -> str:
        mine = connections.connections(envelope.requester_id)
        if not mine:
            return f"You have no connected accounts. Providers: {_providers_line(connections)}."
        return "Your connected accounts: " + ", ".join(mine)

    return [
        Command("connect", "connect your account at an OAuth provider (link in a direct message)", connect),
        Command("disconnect", "revoke and forget your connection to an OAuth provider", disconnect),
        Command("connections", "your connected accounts", listing),
    ]
