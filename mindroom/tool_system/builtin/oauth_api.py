"""The built-in `oauth_api` tool: a connected provider's API, called with the account of the person asking.

`oauth_api_request` sends one request to a path under the provider's `api_base_url` (the operator's, in
`oauth_providers`), with the bearer token of the person the turn speaks for (`token_for`): never another
person's, never the model's choice of host, and no redirect followed. A person without a connection gets
a message with the link to connect, which the model passes on.
"""

from __future__ import annotations

import json
from typing import Any

from mindroom.oauth.errors import OAuthConnectionRequiredError, OAuthError
from mindroom.oauth.exchange import http_client, httpx_module
from mindroom.oauth.service import OAuthConnections, connections_for
from mindroom.tool_system.builtin.parts import daemon_parts, tool_caller, tool_payload
from mindroom.tool_system.runtime_context import get_runtime_context
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = ["MAX_BODY_CHARS", "ConnectionNeededError", "oauth_api_request", "oauth_api_tools", "token_for"]

_TOOL = "oauth_api"
_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})
MAX_BODY_CHARS = 20_000
"""The most of an API's answer handed to the model."""


class ConnectionNeededError(ToolError):
    """The person has no usable connection to the provider; the message tells them how to connect."""


def _connections() -> OAuthConnections:
    bound = get_runtime_context()
    paths = bound.runtime_paths if bound is not None else None
    found = connections_for(paths.storage_root) if paths is not None else None
    if found is None:
        raise ToolError("OAuth connections work in a conversation with the running daemon only")
    return found


async def _in_private_room(person: str) -> bool:
    """Whether the calling turn's room holds nobody but `person` and the daemon's accounts."""
    bound = get_runtime_context()
    room_id, agent = (bound.room_id, bound.agent_name) if bound is not None else (None, None)
    try:
        rooms = daemon_parts().rooms
    except ToolError:
        return False
    account = rooms.client(agent) if rooms is not None and agent and room_id else None
    if rooms is None or account is None or room_id is None:
        return False
    members = set(await account.room_members(room_id))
    return not members - {person} - set(rooms.user_ids().values())


async def token_for(person: str, provider: str) -> str:
    """A fresh access token of `person` at `provider`; `ConnectionNeededError` if there is none, with the
    connect link when the turn is in a direct message."""
    if not person:
        raise ToolError("there is no person this turn speaks for, so no account to use")
    try:
        return await _connections().token_for(person, provider)
    except OAuthConnectionRequiredError as error:
        if await _in_private_room(person):
            raise ConnectionNeededError(str(error)) from None
        message = f"Your {provider} account is not connected: send !connect {provider} to me in a direct message."
        raise ConnectionNeededError(message) from None
    except OAuthError as error:
        raise ToolError(str(error)) from None


def _url(base: str, path: str) -> str:
    if not path.startswith("/") or path.startswith("//") or "\\" in path:
        raise ToolError("path must be a path on the provider's API, starting with a single '/'")
    if any(segment in ("..", ".") for segment in path.split("?", 1)[0].split("/")):
        raise ToolError("path may not contain '.' or '..' segments")
    return base.rstrip("/") + path


async def oauth_api_request(provider: str, path: str, method: str = "GET", body: str | None = None) -> str:
    """Call a connected provider's API as the user you are working for, with their own account.

    Args:
        provider: The OAuth provider id (as in `!connections`).
        path: The path on the provider's API, starting with '/', with any query string.
        method: GET, POST, PUT, PATCH or DELETE.
        body: A JSON document to send (POST, PUT, PATCH).
    """
    caller = tool_caller(room_needed=False)
    verb = method.upper()
    if verb not in _METHODS:
        raise ToolError(f"method must be one of {', '.join(sorted(_METHODS))}")
    try:
        base = _connections().provider(provider).api_base_url
    except OAuthError as error:
        raise ToolError(str(error)) from None
    if not base:
        raise ToolError(f"oauth_providers.{provider} has no api_base_url: there is no API to call")
    url = _url(base, path)
    payload: Any = None
    if body:
        try:
            payload = json.loads(body)
        except ValueError:
            raise ToolError("body must be a JSON document") from None
    token = await token_for(caller.requester_id, provider)
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    try:
        async with http_client(30.0) as client:
            response = await client.request(verb, url, headers=headers, json=payload)
    except httpx_module().HTTPError as error:
        raise ToolError(f"{provider}: the request failed ({type(error).__name__})") from None
    return tool_payload(
        _TOOL, "ok", provider=provider, http_status=response.status_code, body=response.text[:MAX_BODY_CHARS]
    )


def oauth_api_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `oauth_api` group: `oauth_api_request`."""
    return (ToolSpec(name="oauth_api_request", function=oauth_api_request),)
