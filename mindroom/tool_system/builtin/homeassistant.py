"""The built-in `homeassistant` tool (MindRoom's name): entities' states and service calls through Home Assistant's
REST API (`GET /api/states`, `GET /api/states/<entity_id>`, `POST /api/services/<domain>/<service>`).

The instance is the operator's: its URL is `HOMEASSISTANT_URL`, in the agent's tool entry
(`- homeassistant: {HOMEASSISTANT_URL: http://homeassistant.local:8123}`) or the daemon's environment, and
its long-lived access token is `HOMEASSISTANT_TOKEN` (or the file `HOMEASSISTANT_TOKEN_FILE` names), from
the environment only; the token is scrubbed from logs and never part of a result or an error. Without both,
the agent runs without the tool (`mindroom tools list` says which variable is missing).

Home Assistant usually lives on the LAN, so the configured host may be private or loopback: the operator
wrote it. Only that host and port are reached: the model names entities and services, never URLs; the
host is resolved once and the connection pinned to its addresses (as `website` does); cloud metadata and
link-local addresses are never reached; a redirect is refused, not followed. `call_service` changes
things in the house: `tool_approval` rules can hold it (`match: call_service`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from mindroom.config.environment import secret_value
from mindroom.logging_config import register_secret_values
from mindroom.tool_system.builtin.groups import missing_needs
from mindroom.tool_system.builtin.parts import tool_caller, tool_payload
from mindroom.tool_system.mcp.address import check_remote_url
from mindroom.tool_system.runtime_context import get_runtime_context
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = [
    "HOMEASSISTANT_SETTINGS",
    "REQUEST_TIMEOUT_S",
    "TOKEN_VARIABLE",
    "URL_VARIABLE",
    "WRITE_FUNCTIONS",
    "call_service",
    "get_entity_state",
    "homeassistant_missing",
    "homeassistant_tools",
    "list_entities",
]

URL_VARIABLE = "HOMEASSISTANT_URL"
TOKEN_VARIABLE = "HOMEASSISTANT_TOKEN"
HOMEASSISTANT_SETTINGS = {URL_VARIABLE: "string"}
"""The settings an agent's `homeassistant` entry takes (the token is a credential: environment only)."""
WRITE_FUNCTIONS = frozenset({"call_service"})
"""The functions that change things in the house (the ones `tool_approval` rules usually hold)."""
REQUEST_TIMEOUT_S = 15.0
_MAX_BODY_BYTES = 4 * 1024 * 1024
_NAME = re.compile(r"^[a-z0-9_]+$")
_ENTITY = re.compile(r"^[a-z0-9_]+\.[a-z0-9_]+$")


def _overrides(config: Any, agent_name: str) -> Mapping[str, Any]:
    agent = config.agents.get(agent_name) if config is not None else None
    entry = next((e for e in agent.tool_entries() if e.name == "homeassistant"), None) if agent is not None else None
    return entry.overrides if entry is not None else {}


def _settings_problems(overrides: Mapping[str, Any]) -> list[str]:
    problems = []
    for key in overrides:
        if key == TOKEN_VARIABLE:
            problems.append(f"{key!r} is a credential: set it (or {key}_FILE) in the daemon's environment instead")
        elif key not in HOMEASSISTANT_SETTINGS:
            problems.append(f"setting {key!r} is not a setting of this tool (allowed: {URL_VARIABLE})")
    url = overrides.get(URL_VARIABLE)
    if url is not None and (not isinstance(url, str) or not url.strip()):
        problems.append(f"setting {URL_VARIABLE!r} must be the instance's http(s) URL")
    return problems


def homeassistant_missing(overrides: Mapping[str, Any], env: Mapping[str, str]) -> tuple[str, ...]:
    """The variables the tool still needs (empty when the URL and the token are set)."""
    return missing_needs("homeassistant", overrides, env)


def _instance() -> tuple[str, str]:
    """The calling agent's instance: (base URL, token); `ToolError` naming the key or variable at fault."""
    caller = tool_caller(room_needed=False)
    bound = get_runtime_context()
    env = bound.runtime_paths.env_values if bound is not None and bound.runtime_paths is not None else {}
    overrides = _overrides(caller.config, caller.agent_name)
    problems = _settings_problems(overrides)
    if problems:
        raise ToolError(f"agents.{caller.agent_name}.tools: 'homeassistant': {'; '.join(problems)}")
    missing = homeassistant_missing(overrides, env)
    if missing:
        raise ToolError(f"Home Assistant is not set up: {' and '.join(missing)} not set")
    token = secret_value(env, TOKEN_VARIABLE) or ""
    register_secret_values([token])
    url = overrides.get(URL_VARIABLE) or secret_value(env, URL_VARIABLE) or ""
    return str(url).strip().rstrip("/"), token


def _origin(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        port = 0
    return (parts.hostname or "").rstrip(".").lower(), port


async def _request(method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
    """One call of the REST API at the configured instance; its JSON answer."""
    try:
        import httpx2

        from mindroom.tool_system.mcp.http_client import pinned_http_client
    except ImportError:
        raise ToolError("Home Assistant needs the mcp extra's HTTP client (httpx2); it is not installed") from None
    base, token = _instance()
    url = base + path
    if _origin(url) != _origin(base):  # only the operator's host and port, whatever a name or path holds
        raise ToolError(f"{url!r} is not on the configured Home Assistant host")
    checked = await check_remote_url(base, allow_private_network=True)  # the host is the operator's own
    headers = {"Authorization": f"Bearer {token}", "Accept-Encoding": "identity", "User-Agent": "mindroom"}
    try:
        async with pinned_http_client(checked, headers=headers, timeout=httpx2.Timeout(REQUEST_TIMEOUT_S)) as client:
            response = await client.request(method, url, json=body)
    except Exception as exc:  # the network: refused, timed out, bad TLS, a broken reply
        raise ToolError(f"could not reach Home Assistant at {checked.host}: {type(exc).__name__}") from None
    if response.is_redirect:
        raise ToolError(f"Home Assistant at {checked.host} answered with a redirect; redirects are not followed")
    if response.status_code == 401:
        raise ToolError(f"Home Assistant at {checked.host} refused the access token ({TOKEN_VARIABLE}): HTTP 401")
    if response.status_code >= 400:
        raise ToolError(f"Home Assistant at {checked.host} answered HTTP {response.status_code}")
    if len(response.content) > _MAX_BODY_BYTES:
        raise ToolError(f"Home Assistant's answer is larger than {_MAX_BODY_BYTES} bytes")
    try:
        return response.json()
    except ValueError:
        raise ToolError(f"Home Assistant at {checked.host} did not answer JSON") from None


def _entity(entity_id: str) -> str:
    entity = entity_id.strip()
    if not _ENTITY.match(entity):
        raise ToolError(f"{entity_id!r} is not an entity id (domain.object_id, e.g. light.kitchen)")
    return entity


def _state(item: Mapping[str, Any]) -> dict[str, Any]:
    attributes = item.get("attributes") or {}
    return {
        "entity_id": item.get("entity_id"),
        "state": item.get("state"),
        "friendly_name": attributes.get("friendly_name"),
    }


async def get_entity_state(entity_id: str) -> str:
    """The current state and attributes of one Home Assistant entity.

    Args:
        entity_id: The entity, e.g. light.living_room or sensor.temperature.
    """
    item = await _request("GET", f"/api/states/{_entity(entity_id)}")
    return tool_payload("homeassistant", "ok", entity=item)


async def list_entities(domain: str = "") -> str:
    """The Home Assistant entities with their states, optionally only one domain's.

    Args:
        domain: Only entities of this domain (light, switch, sensor, climate...); empty for all.
    """
    wanted = domain.strip()
    if wanted and not _NAME.match(wanted):
        raise ToolError(f"{domain!r} is not a domain name (e.g. light)")
    items = await _request("GET", "/api/states")
    if not isinstance(items, list):
        raise ToolError("Home Assistant answered /api/states with something other than a list")
    entities = [
        _state(item)
        for item in items
        if isinstance(item, Mapping) and (not wanted or str(item.get("entity_id", "")).startswith(wanted + "."))
    ]
    return tool_payload("homeassistant", "ok", count=len(entities), entities=entities)


async def call_service(domain: str, service: str, entity_id: str = "", data: str = "") -> str:
    """Call a Home Assistant service, e.g. light.turn_on for light.kitchen with {"brightness": 128}.

    Args:
        domain: The service's domain (light, switch, climate, scene, script...).
        service: The service (turn_on, turn_off, toggle, set_temperature...).
        entity_id: The entity it acts on, if any.
        data: More service data as a JSON object, if any.
    """
    for label, value in (("domain", domain), ("service", service)):
        if not _NAME.match(value.strip()):
            raise ToolError(f"{value!r} is not a {label} name (lowercase letters, digits, _)")
    try:
        body = json.loads(data) if data.strip() else {}
    except json.JSONDecodeError as exc:
        raise ToolError(f"data is not JSON: {exc.msg}") from None
    if not isinstance(body, dict):
        raise ToolError("data must be a JSON object")
    if entity_id.strip():
        body["entity_id"] = _entity(entity_id)
    changed = await _request("POST", f"/api/services/{domain.strip()}/{service.strip()}", body)
    states = [_state(item) for item in changed if isinstance(item, Mapping)] if isinstance(changed, list) else []
    return tool_payload("homeassistant", "ok", service=f"{domain.strip()}.{service.strip()}", changed=states)


def homeassistant_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `homeassistant` group: `list_entities`, `get_entity_state`, `call_service`."""
    timeout = REQUEST_TIMEOUT_S + 5
    return tuple(
        ToolSpec(name=function.__name__, function=function, timeout_s=timeout)
        for function in (list_entities, get_entity_state, call_service)
    )
