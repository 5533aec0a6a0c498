"""`mcp_servers:` in MindRoom's keys, and how stdio servers are confined here (`tools.mcp`).

```yaml
mcp_servers:
  time:                       # the agents' tool name is mcp_time; the model sees time_get_current_time
    transport: stdio
    command: mcp-server-time
    env: {TZ: Europe/Berlin}
  docs:
    transport: streamable-http
    url: https://mcp.example.org/mcp
    headers: {Authorization: "Bearer ${DOCS_TOKEN}"}
agents:
  helper:
    tools: [mcp_time, {mcp_docs: {include_tools: [search], call_timeout_seconds: 30}}]
```
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from mindroom.config.strict import StrictModel

__all__ = [
    "MCP_AGENT_OVERRIDE_KEYS",
    "MCP_TOOL_PREFIX",
    "MCPOAuthConfig",
    "MCPSandboxConfig",
    "MCPServerConfig",
    "ReadonlyPaths",
    "SandboxNetworkSetting",
    "check_mcp_agent_overrides",
    "mcp_oauth_provider_id",
    "mcp_tool_name",
    "oauth_provider_clashes",
]


def _absolute(paths: list[str]) -> list[str]:
    relative = [path for path in paths if not path.startswith("/")]
    if relative:
        msg = f"readonly_paths must be absolute paths, not {relative}"
        raise ValueError(msg)
    return paths


ReadonlyPaths = Annotated[list[str], AfterValidator(_absolute)]
"""Host folders shown read-only inside a sandbox: absolute paths only."""

SandboxNetworkSetting = bool | Literal["host"]
"""A sandbox's network: `false` none, `true` its own (through slirp4netns, without the host's loopback),
`host` the host's own network, loopback services included (weaker)."""

MCP_TOOL_PREFIX = "mcp_"
MCP_AGENT_OVERRIDE_KEYS = frozenset({"include_tools", "exclude_tools", "call_timeout_seconds"})
_IDENTIFIER = re.compile(r"^[A-Za-z0-9_]+$")


def mcp_tool_name(server_id: str) -> str:
    """The tool name agents list for a server: `mcp_<server_id>`."""
    return f"{MCP_TOOL_PREFIX}{server_id}"


class MCPOAuthConfig(StrictModel):
    """A remote server's `auth:` block: each person connects their own account (OAuth), its tools use that token.

    Endpoints come from the server (`discovery: auto`: RFC 9728, then RFC 8414) unless given here; the app's
    client comes from `client_config_services` (default the seed `<provider_id>_oauth_client`), else from the
    server's dynamic client registration (RFC 7591).
    """

    type: Literal["oauth"]
    provider_id: str | None = None
    display_name: str | None = None
    resource: str | None = None
    discovery: Literal["auto", "manual"] = "auto"
    authorization_server: str | None = None
    authorization_url: str | None = None
    token_url: str | None = None
    registration_url: str | None = None
    dynamic_client_registration: bool = True
    token_endpoint_auth_method: Literal["none", "client_secret_post", "client_secret_basic"] = "none"
    pkce_code_challenge_method: Literal["S256"] | None = "S256"
    scopes: list[str] = Field(default_factory=list)
    extra_auth_params: dict[str, Any] = Field(default_factory=dict)
    extra_token_params: dict[str, Any] = Field(default_factory=dict)
    client_config_services: list[str] = Field(default_factory=list)
    shared_client_config_services: list[str] = Field(default_factory=list)

    @field_validator("provider_id")
    @classmethod
    def _provider_id(cls, value: str | None) -> str | None:
        if value is not None and not _IDENTIFIER.match(value):
            msg = "provider_id must be letters, digits and underscores"
            raise ValueError(msg)
        return value

    @field_validator("display_name")
    @classmethod
    def _display_name(cls, value: str | None) -> str | None:
        return (value or "").strip() or None

    @field_validator("scopes")
    @classmethod
    def _scopes(cls, scopes: list[str]) -> list[str]:
        return [scope.strip() for scope in scopes if scope.strip()]

    @model_validator(mode="after")
    def _manual_endpoints(self) -> MCPOAuthConfig:
        missing = [key for key in ("authorization_url", "token_url") if not (getattr(self, key) or "").strip()]
        if self.discovery == "manual" and missing:
            msg = f"discovery: manual needs {' and '.join(missing)}"
            raise ValueError(msg)
        return self


def oauth_provider_clashes(servers: Mapping[str, MCPServerConfig], providers: Iterable[str]) -> list[str]:
    """Servers with `auth` whose OAuth provider id another such server, or an `oauth_providers` entry, has too:
    a person's token for one would be sent to the other, which the operator did not name for it."""
    taken = dict.fromkeys(providers, "oauth_providers")
    problems = []
    for server_id, server in servers.items():
        if server.auth is None:
            continue
        provider_id = mcp_oauth_provider_id(server_id, server.auth)
        if provider_id in taken:
            problems.append(f"mcp_servers.{server_id}.auth: provider id {provider_id!r} is {taken[provider_id]}'s too")
        else:
            taken[provider_id] = f"mcp_servers.{server_id}"
    return problems


def mcp_oauth_provider_id(server_id: str, auth: MCPOAuthConfig) -> str:
    """The OAuth provider id of a server's `auth` (`mcp_<server_id>` unless set; always starting `mcp_`)."""
    provider_id = auth.provider_id or server_id
    return provider_id if provider_id.startswith(MCP_TOOL_PREFIX) else f"{MCP_TOOL_PREFIX}{provider_id}"


def _tool_names(values: Any) -> list[str]:
    if values is None:
        return []
    if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        msg = "must be a list of tool names"
        raise ValueError(msg)
    return [value.strip() for value in values if value.strip()]


class MCPServerConfig(StrictModel):
    """One MCP server: how to reach it, which of its tools agents get, and its limits."""

    enabled: bool = True
    transport: Literal["stdio", "sse", "streamable-http"]
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    allow_private_network: bool = False
    auth: MCPOAuthConfig | None = None
    tool_prefix: str | None = None
    include_tools: list[str] = Field(default_factory=list)
    exclude_tools: list[str] = Field(default_factory=list)
    display_name: str | None = None
    summary: str | None = None
    icon: str | None = None
    description: str | None = None
    required: bool = False
    startup_timeout_seconds: float = Field(default=20.0, gt=0)
    call_timeout_seconds: float = Field(default=120.0, gt=0)
    max_concurrent_calls: int = Field(default=1, ge=1)
    auto_reconnect: bool = True

    @field_validator("include_tools", "exclude_tools", mode="before")
    @classmethod
    def _names(cls, values: Any) -> list[str]:
        return _tool_names(values)

    @field_validator("tool_prefix")
    @classmethod
    def _prefix(cls, value: str | None) -> str | None:
        if value is not None and not _IDENTIFIER.match(value):
            msg = "tool_prefix must be letters, digits and underscores"
            raise ValueError(msg)
        return value

    @model_validator(mode="after")
    def _transport_fields(self) -> MCPServerConfig:
        problems: list[str] = []
        if self.transport == "stdio":
            if not (self.command or "").strip():
                problems.append("a stdio server needs command")
            if self.url or self.headers or self.allow_private_network:
                problems.append("url, headers and allow_private_network are for remote servers, not stdio")
            if self.auth is not None:
                problems.append("auth (OAuth) is for remote servers (sse, streamable-http), not stdio")
        else:
            if not (self.url or "").strip():
                problems.append(f"a {self.transport} server needs url")
            if self.command or self.args or self.cwd or self.env:
                problems.append("command, args, cwd and env are for stdio servers")
        if self.description is not None and self.auth is None:
            problems.append("description needs auth")
        if self.auth is not None and any(name.lower() == "authorization" for name in self.headers):
            problems.append("headers.Authorization and auth both give the server's credentials: keep one")
        shared = sorted(set(self.include_tools) & set(self.exclude_tools))
        if shared:
            problems.append(f"include_tools and exclude_tools both name {shared}")
        if problems:
            raise ValueError("; ".join(problems))
        return self


def check_mcp_agent_overrides(overrides: dict[str, Any] | Any) -> list[str]:
    """What is wrong with an agent's settings for an `mcp_<id>` tool (include/exclude lists, call timeout)."""
    problems: list[str] = []
    for key, value in overrides.items():
        if key not in MCP_AGENT_OVERRIDE_KEYS:
            problems.append(
                f"setting {key!r} is not a setting of an MCP tool (allowed: {sorted(MCP_AGENT_OVERRIDE_KEYS)})"
            )
        elif key == "call_timeout_seconds":
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not number or not math.isfinite(value) or value <= 0:
                problems.append("setting 'call_timeout_seconds' must be a number above 0")
        else:
            try:
                _tool_names(value)
            except ValueError as exc:
                problems.append(f"setting {key!r} {exc}")
    include, exclude = overrides.get("include_tools") or [], overrides.get("exclude_tools") or []
    if isinstance(include, list) and isinstance(exclude, list) and set(include) & set(exclude):
        problems.append("include_tools and exclude_tools must not overlap")
    return problems


class MCPSandboxConfig(StrictModel):
    """How stdio MCP servers are confined: the shell tool's bubblewrap sandbox, with these differences.

    `network` is on by default (most servers call an API), as for `tools.shell`: `true`, `false` or `host`;
    `readonly_paths` are extra host folders a server sees read-only (a server installed in a Python virtual
    environment sees that environment without being listed). `sandbox` as for `tools.shell`: `auto`,
    `bwrap` or `none`.
    """

    sandbox: Literal["auto", "bwrap", "none"] = "auto"
    network: SandboxNetworkSetting = True
    readonly_paths: ReadonlyPaths = Field(default_factory=list)
