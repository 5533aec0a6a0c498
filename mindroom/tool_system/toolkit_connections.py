"""The constructor argument an agno toolkit acting with a person's OAuth connection gets, for one call.

A toolkit that acts for the requester (`ToolkitConnection`) is built afresh for each call, with the token
of the person the calling turn speaks for (`token_for`, refreshed when it ends soon), so no instance ever
holds one person's token while another person's call runs. A person without a connection gets the message
with the link to connect instead of a result. Until the first call, the toolkit is built with a placeholder
that opens nothing, only to list its functions.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import Any

from mindroom.config.environment import secret_value
from mindroom.oauth.providers import ProviderState
from mindroom.tool_system.builtin.oauth_api import token_for
from mindroom.tool_system.builtin.parts import tool_caller
from mindroom.tool_system.spec import ToolError
from mindroom.tool_system.toolkit_table import AgnoToolkit, ToolkitConnection

__all__ = [
    "PENDING_TOKEN",
    "connection_argument",
    "connection_state",
    "fit_credentials",
    "google_credentials",
    "placeholder_argument",
]

PENDING_TOKEN = "connection-pending"
"""What a toolkit acting for people holds before any call: no provider accepts it."""


def google_credentials(token: str, scopes: list[str]) -> Any:
    """google-auth's `Credentials` carrying only an access token (refreshing stays the daemon's job)."""
    if importlib.util.find_spec("google.oauth2") is None:
        raise ToolError("the google-auth package is not installed: `mindroom tools install gmail` brings it")
    from google.oauth2.credentials import Credentials

    return Credentials(token=token, scopes=scopes)  # type: ignore[no-untyped-call, unused-ignore]


def _shaped(connection: ToolkitConnection, token: str) -> Any:
    return google_credentials(token, []) if connection.form == "google" else token


def fit_credentials(toolkit: Any, connection: ToolkitConnection) -> None:
    """Name the toolkit's own scopes on Google credentials: agno's Google toolkits otherwise set the token aside
    and look for another way in (a token file, a browser). Whether the token carries them is Google's to say."""
    creds = getattr(toolkit, connection.kwarg, None) if connection.form == "google" else None
    if creds is not None:
        setattr(toolkit, connection.kwarg, google_credentials(creds.token, list(getattr(toolkit, "scopes", ()) or ())))


def placeholder_argument(connection: ToolkitConnection) -> dict[str, Any]:
    """The argument the listing instance is built with: a token no provider accepts, or no credentials."""
    return {connection.kwarg: None if connection.form == "google" else PENDING_TOKEN}


async def connection_argument(connection: ToolkitConnection) -> dict[str, Any]:
    """`{kwarg: the requester's token}` (as the toolkit takes it); `ConnectionNeededError` with the link
    when the person has no connection, `ToolError` when the provider is not set up here."""
    caller = tool_caller(room_needed=False)
    token = await token_for(caller.requester_id, connection.provider)
    return {connection.kwarg: _shaped(connection, token)}


def connection_state(
    toolkit: AgnoToolkit, env: Mapping[str, str], states: Mapping[str, ProviderState]
) -> tuple[str, str]:
    """For `tools list`, of a toolkit that can act with people's connections and whose packages are installed:
    `available` or `missing credential`, and which provider id it needs, whether it is configured, and the fix."""
    connection = toolkit.connection
    assert connection is not None
    provider = connection.provider
    operator = next(credential.env for credential in toolkit.credentials if credential.kwarg == connection.operator)
    if secret_value(env, operator) is not None:
        return "available", f"{operator} is set: it is used for everyone, no person's {provider} connection"
    state = states.get(provider)
    if state is not None and state.resolved is not None:
        return "available", f"needs a connection: {provider} (provider configured; people send !connect {provider})"
    problem = state.problem if state is not None else f"oauth_providers.{provider}: not configured"
    return "missing credential", f"needs a connection: {provider} ({problem}); or set {operator} for everyone"
