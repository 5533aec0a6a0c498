"""`oauth_providers:` and the `<provider>_oauth_client` credential seeds: what they accept and resolve to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from mindroom.config.loading import parse_config_text
from mindroom.config.oauth import BUILTIN_PROVIDER_IDS, OAuthProviderConfig, read_client_seeds
from mindroom.errors import ConfigError
from mindroom.oauth.errors import OAuthError
from mindroom.oauth.providers import BUILTIN_ENDPOINTS, resolve_providers

_CUSTOM = (
    "oauth_providers:\n  acme:\n    authorization_url: https://id.acme.example/authorize\n"
    "    token_url: https://id.acme.example/token\n    revocation_url: https://id.acme.example/revoke\n"
    "    scopes: [' read ', '', write]\n"
)


def test_oauth_providers_entry_keeps_endpoints_and_hides_the_secret():
    config = parse_config_text(_CUSTOM + "    client_id: app\n    client_secret: s3cret-value\n", "config.yaml", {})

    entry = config.oauth_providers["acme"]

    assert entry.scopes == ["read", "write"]
    assert "s3cret-value" not in repr(entry) and "s3cret-value" not in repr(config)
    assert entry.client_secret == "s3cret-value"


def test_oauth_providers_unknown_key_and_bad_id_are_errors_naming_them():
    with pytest.raises(ConfigError, match="client_secrett"):
        parse_config_text(_CUSTOM + "    client_secrett: x\n", "config.yaml", {})
    with pytest.raises(ConfigError, match=r"oauth_providers\.acme-corp"):
        parse_config_text("oauth_providers:\n  acme-corp: {client_id: a}\n", "config.yaml", {})


def test_oauth_providers_secret_from_the_environment_in_config(tmp_path: Path):
    text = _CUSTOM + "    client_id: app\n    client_secret: ${ACME_SECRET}\n"
    config = parse_config_text(text, "config.yaml", {"ACME_SECRET": "from-env-secret"})

    providers, problems = resolve_providers(config.oauth_providers, {}, tmp_path)

    assert problems == []
    assert providers["acme"].client_secret == "from-env-secret"
    assert providers["acme"].redirect_uri == "http://localhost:8765/api/oauth/acme/callback"
    assert "from-env-secret" not in repr(providers["acme"])


def test_oauth_seeds_give_the_client_from_env_file_and_value(tmp_path: Path):
    (tmp_path / "secret.txt").write_text("file-secret\n")
    seeds = [
        {
            "service": "github_oauth_client",
            "credentials": {"client_id": {"env": "GH_ID"}, "client_secret": {"env": "GH_SECRET"}},
        },
        {
            "service": "acme_oauth_client",
            "credentials": {
                "client_id": {"value": "acme-app"},
                "client_secret": {"file": "secret.txt"},
                "redirect_uri": "https://bot.example/cb",
            },
        },
        {"service": "openai", "credentials": {"api_key": "ignored"}},
    ]
    (tmp_path / "gh_secret").write_text("gh-file-secret")
    env = {
        "MINDROOM_CREDENTIAL_SEEDS_JSON": json.dumps(seeds),
        "GH_ID": "gh-app",
        "GH_SECRET_FILE": str(tmp_path / "gh_secret"),
    }

    got = read_client_seeds(env, tmp_path)

    assert (got["github"].client_id, got["github"].client_secret) == ("gh-app", "gh-file-secret")
    assert (got["acme"].client_secret, got["acme"].redirect_uri) == ("file-secret", "https://bot.example/cb")
    assert set(got) == {"github", "acme"}
    assert "gh-file-secret" not in repr(got)


def test_oauth_seed_missing_a_declared_field_gives_nothing(tmp_path: Path):
    seeds = [{"service": "github_oauth_client", "credentials": {"client_id": "a", "client_secret": {"env": "UNSET"}}}]

    assert read_client_seeds({"MINDROOM_CREDENTIAL_SEEDS_JSON": json.dumps(seeds)}, tmp_path) == {}


def test_oauth_seeds_refuse_a_token_service_and_name_the_variable(tmp_path: Path):
    seeds = [{"service": "github_oauth", "credentials": {"access_token": "x"}}]
    (tmp_path / "seeds.json").write_text(json.dumps(seeds))

    with pytest.raises(ValueError, match=r"MINDROOM_CREDENTIAL_SEEDS_FILE .*'github_oauth'"):
        read_client_seeds({"MINDROOM_CREDENTIAL_SEEDS_FILE": "seeds.json"}, tmp_path)
    with pytest.raises(OAuthError, match="MINDROOM_CREDENTIAL_SEEDS_JSON"):
        resolve_providers({}, {"MINDROOM_CREDENTIAL_SEEDS_JSON": "{not json"}, tmp_path)


def test_oauth_builtin_github_needs_only_its_client_and_public_url_sets_the_callback(tmp_path: Path):
    seeds = [{"service": "github_oauth_client", "credentials": {"client_id": "gh", "client_secret": "gh-secret-1"}}]
    env = {"MINDROOM_CREDENTIAL_SEEDS_JSON": json.dumps(seeds), "MINDROOM_PUBLIC_URL": "https://bot.example/"}

    with capture_logs() as logs:
        providers, problems = resolve_providers({}, env, tmp_path)

    github = providers["github"]
    assert problems == []
    assert github.token_url == "https://github.com/login/oauth/access_token"
    assert github.redirect_uri == "https://bot.example/api/oauth/github/callback"
    assert "gh-secret-1" not in repr(logs)


def test_oauth_provider_problems_name_the_key(tmp_path: Path):
    config = parse_config_text(
        _CUSTOM + "  nosecret:\n    authorization_url: https://a.example/a\n    token_url: https://a.example/t\n"
        "    client_id: x\n"
        "  public:\n    authorization_url: https://p.example/a\n    token_url: https://p.example/t\n"
        "    client_id: p\n    token_endpoint_auth_method: none\n",
        "config.yaml",
        {},
    )

    providers, problems = resolve_providers(config.oauth_providers, {}, tmp_path)

    assert set(providers) == {"public"}
    assert any(p.startswith("oauth_providers.acme: needs client_id and client_secret") for p in problems)
    assert any(p.startswith("oauth_providers.nosecret: needs client_id and client_secret") for p in problems)
    unchecked = {"ghe": OAuthProviderConfig(client_id="x", client_secret="y")}  # built past config's checks
    assert resolve_providers(unchecked, {}, tmp_path)[1] == [
        "oauth_providers.ghe: needs authorization_url and token_url (it is not a built-in provider)"
    ]


def test_oauth_providers_a_provider_without_endpoints_is_a_config_error_unless_built_in():
    with pytest.raises(ConfigError, match=r"oauth_providers\.github_enterprise: needs authorization_url and token_url"):
        parse_config_text("oauth_providers:\n  github_enterprise: {client_id: x}\n", "config.yaml", {})
    with pytest.raises(ConfigError, match=r"oauth_providers\.acme: needs authorization_url and token_url"):
        parse_config_text("oauth_providers:\n  acme: {authorization_url: https://a.example/a}\n", "config.yaml", {})

    assert parse_config_text("oauth_providers:\n  github: {client_id: x}\n", "config.yaml", {}).oauth_providers


def test_oauth_callback_without_a_public_url_is_on_the_api_port(tmp_path: Path):
    from mindroom.oauth.providers import callback_base

    assert callback_base({}) == "http://localhost:8765"
    assert callback_base({"MINDROOM_PORT": "9000"}) == "http://localhost:9000"
    assert callback_base({"MINDROOM_PORT": "9000", "MINDROOM_API_PORT": "8800"}) == "http://localhost:8800"
    assert callback_base({"MINDROOM_BASE_URL": "https://b.example", "MINDROOM_API_PORT": "8800"}) == "https://b.example"


def test_oauth_builtin_ids_of_config_are_those_with_endpoints():
    assert set(BUILTIN_ENDPOINTS) == BUILTIN_PROVIDER_IDS
