"""`mindroom tools list` on the toolkits that act with a person's OAuth connection: which provider id each
needs, whether that provider is configured, and that the operator's own credential is used instead when set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mindroom.cli.app import app

CONFIG = """
agents:
  a:
    display_name: A
    tools: [spotify]
oauth_providers:
{providers}
"""
GITHUB = "  github: {client_id: app, client_secret: '${GH_SECRET}'}"
NEAR_MISS = (
    "  spotify_: {authorization_url: https://id.example/a, token_url: https://id.example/t, client_id: app, "
    "client_secret: '${GH_SECRET}'}"
)


def _rows(tmp_path: Path, providers: str) -> dict[str, dict]:
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG.format(providers=providers))
    result = CliRunner().invoke(app, ["tools", "list", "-c", str(config), "--json"])
    assert result.exit_code == 0, result.output
    return {row["name"]: row for row in json.loads(result.output)}


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GITHUB_ACCESS_TOKEN", "SPOTIFY_ACCESS_TOKEN", "MINDROOM_CREDENTIAL_SEEDS_JSON"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(f"{name}_FILE", raising=False)
    monkeypatch.setenv("GH_SECRET", "client-secret-of-the-app")


def test_tools_list_says_which_provider_a_toolkit_needs_and_whether_it_is_configured(tmp_path: Path):
    rows = _rows(tmp_path, f"{GITHUB}\n{NEAR_MISS}")

    spotify = rows["spotify"]
    assert spotify["status"] == "missing credential" and spotify["used_by"] == ["a"]
    assert "needs a connection: spotify" in spotify["detail"] and "oauth_providers.spotify" in spotify["detail"]
    assert "SPOTIFY_ACCESS_TOKEN" in spotify["detail"]
    if rows["github"]["status"] != "missing package":  # PyGithub installed
        assert rows["github"]["status"] == "available"
        configured = "needs a connection: github (provider configured; people send !connect github)"
        assert rows["github"]["detail"] == configured
    assert "client-secret-of-the-app" not in json.dumps(rows)


def test_tools_list_a_provider_without_its_client_is_not_configured(tmp_path: Path):
    rows = _rows(tmp_path, "  spotify: {authorization_url: https://id.example/a, token_url: https://id.example/t}")

    assert rows["spotify"]["status"] == "missing credential"
    assert "oauth_providers.spotify: needs client_id and client_secret" in rows["spotify"]["detail"]


def test_tools_list_the_operators_credential_is_used_instead_of_connections(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("SPOTIFY_ACCESS_TOKEN", "operator-spotify-token")

    rows = _rows(tmp_path, "  {}")

    assert rows["spotify"]["status"] == "available"
    operator = "SPOTIFY_ACCESS_TOKEN is set: it is used for everyone, no person's spotify connection"
    assert rows["spotify"]["detail"] == operator
