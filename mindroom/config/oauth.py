"""`oauth_providers:` and MindRoom's `<provider>_oauth_client` seeds: the OAuth apps people connect accounts with.

A provider is one of the built-in ids MindRoom uses (`github`; its endpoints are known) or any identifier with
its endpoints given here. Its OAuth app (`client_id`, `client_secret`, `redirect_uri`) comes from the
provider's entry, else from the credential seed MindRoom reads for it: the service `<provider>_oauth_client`
in `MINDROOM_CREDENTIAL_SEEDS_JSON` or the file `MINDROOM_CREDENTIAL_SEEDS_FILE` names. A seed field is a
literal, `{"value": ...}`, `{"env": "NAME"}` (else the file `NAME_FILE` names) or `{"file": "path"}`
(relative to the config's folder). A client secret never shows in a log, a `repr` or `/api` (its name marks it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from mindroom.config.strict import StrictModel

__all__ = [
    "BUILTIN_PROVIDER_IDS",
    "CLIENT_SERVICE_SUFFIX",
    "SEEDS_FILE_ENV",
    "SEEDS_JSON_ENV",
    "OAuthClientSeed",
    "OAuthProviderConfig",
    "check_provider_ids",
    "read_client_seeds",
    "read_service_seed",
]

SEEDS_JSON_ENV = "MINDROOM_CREDENTIAL_SEEDS_JSON"
SEEDS_FILE_ENV = "MINDROOM_CREDENTIAL_SEEDS_FILE"
CLIENT_SERVICE_SUFFIX = "_oauth_client"
BUILTIN_PROVIDER_IDS = frozenset({"github"})
"""MindRoom's provider ids whose endpoints are built in (`mindroom.oauth.providers.BUILTIN_ENDPOINTS`)."""
_PROVIDER_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_CLIENT_FIELDS = ("client_id", "client_secret", "redirect_uri")


class OAuthProviderConfig(StrictModel):
    """One OAuth provider: endpoints (built-in ids have them), scopes, the app's client, what its tool may call."""

    display_name: str | None = None
    authorization_url: str | None = None
    token_url: str | None = None
    revocation_url: str | None = None
    """RFC 7009 endpoint: `!disconnect` revokes the tokens there before forgetting them."""
    api_base_url: str | None = None
    """The API the `oauth_api` tool calls with the person's token (only paths under it)."""
    scopes: list[str] = Field(default_factory=list)
    extra_auth_params: dict[str, str] = Field(default_factory=dict)
    client_id: str | None = None
    client_secret: str | None = Field(default=None, repr=False)
    """Shown nowhere: blanked in `/api` and logs under its name, left out of `repr`."""
    redirect_uri: str | None = None
    token_endpoint_auth_method: Literal["none", "client_secret_post", "client_secret_basic"] = "client_secret_post"
    pkce_code_challenge_method: Literal["S256"] = "S256"

    @field_validator("scopes")
    @classmethod
    def _trimmed(cls, scopes: list[str]) -> list[str]:
        return [scope.strip() for scope in scopes if scope.strip()]


def check_provider_ids(providers: Mapping[str, OAuthProviderConfig]) -> list[str]:
    """Problems of the entries under `oauth_providers` (ids, endpoints), each naming its key."""
    problems = []
    for name, entry in providers.items():
        if not _PROVIDER_ID.match(name):
            problems.append(
                f"oauth_providers.{name}: a provider id is letters, digits and '_' (at most 64, no digit first)"
            )
        elif name not in BUILTIN_PROVIDER_IDS and not (entry.authorization_url and entry.token_url):
            problems.append(f"oauth_providers.{name}: needs authorization_url and token_url (not a built-in provider)")
    return problems


@dataclass(frozen=True, slots=True)
class OAuthClientSeed:
    """A provider's OAuth app as a credential seed gives it (`<provider>_oauth_client`)."""

    client_id: str | None
    client_secret: str | None
    redirect_uri: str | None

    def __repr__(self) -> str:
        return f"OAuthClientSeed(client_id={self.client_id!r}, client_secret=***, redirect_uri={self.redirect_uri!r})"


def _env_or_file(env: Mapping[str, str], name: str) -> str | None:
    if value := env.get(name):
        return value
    path = env.get(f"{name}_FILE")
    return Path(path).read_text(encoding="utf-8").strip() if path else None


def _field(raw: Any, env: Mapping[str, str], config_dir: Path, where: str) -> str | None:
    if isinstance(raw, dict):
        if set(raw) == {"env"}:
            return _env_or_file(env, str(raw["env"]))
        if set(raw) == {"file"}:
            return (config_dir / Path(str(raw["file"])).expanduser()).read_text(encoding="utf-8").strip() or None
        if set(raw) == {"value"}:
            raw = raw["value"]
        else:
            raise ValueError(f"{where}: a field is a value, {{'env': NAME}}, {{'file': path}} or {{'value': ...}}")
    return None if raw is None else str(raw).strip() or None


def _seed_source(env: Mapping[str, str], config_dir: Path) -> tuple[Any, str]:
    if text := env.get(SEEDS_JSON_ENV):
        return json.loads(text), SEEDS_JSON_ENV
    if path := env.get(SEEDS_FILE_ENV):
        full = config_dir / Path(path).expanduser()
        return json.loads(full.read_text(encoding="utf-8")), f"{SEEDS_FILE_ENV} ({full})"
    return [], ""


def _seed_entries(env: Mapping[str, str], config_dir: Path) -> tuple[list[Any], str]:
    """The seed entries and where they come from; `ValueError` naming the variable when they cannot be read."""
    try:
        entries, source = _seed_source(env, config_dir)
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{SEEDS_JSON_ENV}/{SEEDS_FILE_ENV}: not readable JSON ({type(error).__name__})") from None
    if not isinstance(entries, list):
        raise ValueError(f"{source}: the seeds are a list of {{service, credentials}} objects")
    return entries, source


def _fields(
    credentials: Mapping[str, Any], keys: Iterable[str], env: Mapping[str, str], config_dir: Path, where: str
) -> dict[str, str | None]:
    """The named fields of a seed, each resolved; `ValueError` naming the seed when a file it names is unreadable."""
    try:
        return {str(key): _field(credentials.get(key), env, config_dir, where) for key in keys}
    except OSError as error:
        raise ValueError(f"{where}: a file it names is not readable ({type(error).__name__})") from None


def read_client_seeds(env: Mapping[str, str], config_dir: Path) -> dict[str, OAuthClientSeed]:
    """The OAuth apps the credential seeds give, by provider id; `ValueError` naming the variable and service.

    Only `<provider>_oauth_client` services are read here; a seed missing a field it declares gives nothing
    (as MindRoom skips it), and token services (`*_oauth`) cannot be seeded.
    """
    entries, source = _seed_entries(env, config_dir)
    seeds: dict[str, OAuthClientSeed] = {}
    for entry in entries:
        service = entry.get("service") if isinstance(entry, dict) else None
        if not isinstance(service, str) or not service.endswith(CLIENT_SERVICE_SUFFIX):
            if isinstance(service, str) and service.endswith("_oauth"):
                raise ValueError(f"{source}: {service!r} holds OAuth tokens, which only a connection writes")
            continue
        credentials = entry.get("credentials")
        if not isinstance(credentials, dict):
            raise ValueError(f"{source}: {service!r}: credentials must be an object")
        where = f"{source}: {service!r}"
        values = _fields(credentials, _CLIENT_FIELDS, env, config_dir, where)
        if any(values[key] is None for key in credentials if key in _CLIENT_FIELDS):
            continue
        seeds[service.removesuffix(CLIENT_SERVICE_SUFFIX)] = OAuthClientSeed(**values)
    return seeds


def read_service_seed(env: Mapping[str, str], config_dir: Path, service: str) -> dict[str, str] | None:
    """The fields of the credential seed of `service` (each resolved as above; unset ones left out), None when
    no seed names it; `ValueError` naming the variable and service when the seeds cannot be read."""
    entries, source = _seed_entries(env, config_dir)
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("service") != service:
            continue
        where = f"{source}: {service!r}"
        credentials = entry.get("credentials")
        if not isinstance(credentials, dict):
            raise ValueError(f"{where}: credentials must be an object")
        values = _fields(credentials, credentials, env, config_dir, where)
        return {key: value for key, value in values.items() if value is not None}
    return None
