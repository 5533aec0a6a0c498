"""The OAuth providers of one config: endpoints, scopes and OAuth app, resolved from `oauth_providers` and seeds.

Built-in ids carry their endpoints (MindRoom's ids: `github`); any other id needs `authorization_url` and
`token_url` in its entry. A provider is usable once its app has a `client_id` (and a `client_secret`, unless
its `token_endpoint_auth_method` is `none`). The callback is `<MINDROOM_PUBLIC_URL or MINDROOM_BASE_URL>
/api/oauth/<provider>/callback`, else on `http://localhost:<port>` (`MINDROOM_API_PORT`, else MindRoom's
`MINDROOM_PORT`, else 8765), unless the app names its own `redirect_uri`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from mindroom.config.oauth import OAuthProviderConfig, read_client_seeds
from mindroom.logging_config import register_secret_values
from mindroom.oauth.errors import OAuthError

__all__ = [
    "BUILTIN_ENDPOINTS",
    "CALLBACK_PATH",
    "EndpointPost",
    "ProviderState",
    "ResolvedProvider",
    "callback_base",
    "provider_states",
    "resolve_providers",
    "split_states",
]

CALLBACK_PATH = "/api/oauth/{provider}/callback"
_DEFAULT_PORT = "8765"

BUILTIN_ENDPOINTS: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {
        "github": MappingProxyType(
            {
                "display_name": "GitHub",
                "authorization_url": "https://github.com/login/oauth/authorize",
                "token_url": "https://github.com/login/oauth/access_token",
                "api_base_url": "https://api.github.com",
            }
        ),
    }
)
"""Endpoints of the providers MindRoom builds in, by its provider id (an entry's own values win)."""

EndpointPost = Callable[[str, Mapping[str, str], Mapping[str, str]], Awaitable[tuple[int, bytes]]]
"""Sends a form (`url`, form, headers) to a token or revocation endpoint: the HTTP status and body, never
following a redirect; `ConnectionError` (its message safe to show) when it cannot or may not be sent."""


@dataclass(frozen=True, slots=True)
class ResolvedProvider:
    """One provider, ready for a flow: where to authorize, exchange, refresh and revoke, and the app's client.

    Not MindRoom's plugin-facing `OAuthProvider` (providers from plugins are not offered here yet).
    """

    id: str
    display_name: str
    authorization_url: str
    token_url: str
    redirect_uri: str
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    revocation_url: str | None = None
    api_base_url: str | None = None
    scopes: tuple[str, ...] = ()
    extra_auth_params: Mapping[str, str] = field(default_factory=dict)
    auth_method: str = "client_secret_post"
    extra_token_params: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Sent with each token request (an MCP server's `auth.extra_token_params`); secret."""
    post: EndpointPost | None = field(default=None, repr=False, compare=False)
    """How token and revocation requests go, when not by a plain HTTP client: an MCP server's discovered
    endpoints are checked and connected to at the addresses checked (`tool_system.mcp.oauth_discovery`)."""


def callback_base(env: Mapping[str, str]) -> str:
    """Where the provider sends the browser back to: the public URL, else this machine's API port."""
    for name in ("MINDROOM_PUBLIC_URL", "MINDROOM_BASE_URL"):
        if value := env.get(name, "").strip():
            return value.rstrip("/")
    port = env.get("MINDROOM_API_PORT", "").strip() or env.get("MINDROOM_PORT", "").strip() or _DEFAULT_PORT
    return f"http://localhost:{port}"


def _one(
    provider_id: str, entry: OAuthProviderConfig | None, env: Mapping[str, str], seeds: Mapping[str, Any]
) -> ResolvedProvider | str:
    known = BUILTIN_ENDPOINTS.get(provider_id, {})
    values = {**known, **(entry.model_dump(exclude_none=True, exclude={"client_secret"}) if entry else {})}
    where = f"oauth_providers.{provider_id}"
    missing = [key for key in ("authorization_url", "token_url") if not values.get(key)]
    if missing:
        return f"{where}: needs {' and '.join(missing)} (it is not a built-in provider)"
    seed = seeds.get(provider_id)
    secret = entry.client_secret if entry else None
    client_id = values.get("client_id") or (seed.client_id if seed else None)
    client_secret = secret or (seed.client_secret if seed else None)
    method = values.get("token_endpoint_auth_method", "client_secret_post")
    if not client_id or (method != "none" and not client_secret):
        return (
            f"{where}: needs client_id and client_secret (in the entry, or the seed {provider_id}_oauth_client)"
            if method != "none"
            else f"{where}: needs client_id (in the entry, or the seed {provider_id}_oauth_client)"
        )
    register_secret_values([client_secret])
    redirect = values.get("redirect_uri") or (seed.redirect_uri if seed else None)
    return ResolvedProvider(
        id=provider_id,
        display_name=values.get("display_name") or provider_id,
        authorization_url=values["authorization_url"],
        token_url=values["token_url"],
        redirect_uri=redirect or callback_base(env) + CALLBACK_PATH.format(provider=provider_id),
        client_id=client_id,
        client_secret=client_secret,
        revocation_url=values.get("revocation_url"),
        api_base_url=values.get("api_base_url"),
        scopes=tuple(values.get("scopes", ())),
        extra_auth_params=MappingProxyType(dict(values.get("extra_auth_params", {}))),
        auth_method=method,
    )


@dataclass(frozen=True, slots=True)
class ProviderState:
    """One provider named by the config or a seed: its name, and either its resolved form or why it is not usable."""

    id: str
    display_name: str
    resolved: ResolvedProvider | None
    problem: str | None = None
    waiting: bool = False
    """Not usable yet, and nothing is wrong: it is found when first needed (an MCP server's, on `!connect`)."""


def provider_states(
    entries: Mapping[str, OAuthProviderConfig], env: Mapping[str, str], config_dir: Path
) -> dict[str, ProviderState]:
    """Every provider an `oauth_providers` entry or a `<provider>_oauth_client` seed names, by id (sorted).

    `OAuthError` when the seeds themselves cannot be read.
    """
    try:
        seeds = read_client_seeds(env, config_dir)
    except ValueError as error:
        raise OAuthError(str(error)) from None
    states: dict[str, ProviderState] = {}
    for provider_id in sorted({*entries, *seeds}):
        entry = entries.get(provider_id)
        resolved = _one(provider_id, entry, env, seeds)
        if isinstance(resolved, str):
            builtin = BUILTIN_ENDPOINTS.get(provider_id, {})
            named = (entry.display_name if entry else None) or builtin.get("display_name")
            states[provider_id] = ProviderState(provider_id, named or provider_id, None, resolved)
        else:
            states[provider_id] = ProviderState(provider_id, resolved.display_name, resolved)
    return states


def resolve_providers(
    entries: Mapping[str, OAuthProviderConfig], env: Mapping[str, str], config_dir: Path
) -> tuple[dict[str, ResolvedProvider], list[str]]:
    """The usable providers by id, and why each named one is not (each problem names its key or seed).

    `OAuthError` when the seeds themselves cannot be read.
    """
    return split_states(provider_states(entries, env, config_dir).values())


def split_states(states: Iterable[ProviderState]) -> tuple[dict[str, ResolvedProvider], list[str]]:
    """The usable providers of `states` by id, and the problems of the others."""
    states = list(states)
    providers = {state.id: state.resolved for state in states if state.resolved is not None}
    return providers, [state.problem for state in states if state.problem is not None]
