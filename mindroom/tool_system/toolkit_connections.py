"""The constructor argument an agno toolkit acting with a person's OAuth connection gets, for one call.

A toolkit that acts for the requester (`ToolkitConnection`) is built afresh for each call, with the token
of the person the calling turn speaks for (`token_for`, refreshed when it ends soon), so no instance ever
holds one person's token while another person's call runs. A person without a connection gets the message
with the link to connect instead of a result. Until the first call, the toolkit is built with a placeholder
that opens nothing, only to list its functions.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from mindroom.tool_system.builtin.oauth_api import token_for
from mindroom.tool_system.builtin.parts import tool_caller
from mindroom.tool_system.spec import ToolError
from mindroom.tool_system.toolkit_table import ToolkitConnection

__all__ = ["PENDING_TOKEN", "connection_argument", "google_credentials", "placeholder_argument"]

PENDING_TOKEN = "connection-pending"
"""What a toolkit acting for people holds before any call: no provider accepts it."""


def google_credentials(token: str) -> Any:
    """google-auth's `Credentials` carrying only an access token (refreshing stays the daemon's job)."""
    if importlib.util.find_spec("google.oauth2") is None:
        raise ToolError("the google-auth package is not installed: `mindroom tools install gmail` brings it")
    from google.oauth2.credentials import Credentials

    return Credentials(token=token)


def _shaped(connection: ToolkitConnection, token: str) -> Any:
    return google_credentials(token) if connection.form == "google" else token


def placeholder_argument(connection: ToolkitConnection) -> dict[str, Any]:
    """The argument the listing instance is built with: a token no provider accepts, or no credentials."""
    return {connection.kwarg: None if connection.form == "google" else PENDING_TOKEN}


async def connection_argument(connection: ToolkitConnection) -> dict[str, Any]:
    """`{kwarg: the requester's token}` (as the toolkit takes it); `ConnectionNeededError` with the link
    when the person has no connection, `ToolError` when the provider is not set up here."""
    caller = tool_caller(room_needed=False)
    token = await token_for(caller.requester_id, connection.provider)
    return {connection.kwarg: _shaped(connection, token)}
