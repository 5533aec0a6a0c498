"""Credential and sync-token files: private modes, atomic replacement, name validation."""

from __future__ import annotations

import stat

import pytest

from mindroom.matrix import BotCredentials, CredentialStore, SyncTokenStore, bot_localpart, bot_user_id


def test_credentials_round_trip_with_private_modes(tmp_path):
    store = CredentialStore(tmp_path)
    credentials = BotCredentials("@mindroom_a:localhost", "DEV", "syt_token", "secret-password")
    store.save("a", credentials)
    assert store.load("a") == credentials
    path = tmp_path / "matrix" / "credentials" / "a.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["a.json"]  # no temp files left behind


def test_credentials_missing_or_corrupt_file_loads_as_none(tmp_path):
    store = CredentialStore(tmp_path)
    assert store.load("a") is None
    store.path("a").parent.mkdir(parents=True)
    store.path("a").write_text("{not json")
    assert store.load("a") is None


def test_credentials_repr_hides_secrets():
    credentials = BotCredentials("@a:b", "DEV", "syt_secret_token", "hunter2")
    assert "syt_secret_token" not in repr(credentials)
    assert "hunter2" not in repr(credentials)


def test_sync_token_store_overwrites_atomically_and_clears(tmp_path):
    tokens = SyncTokenStore(tmp_path)
    assert tokens.load("a") is None
    tokens.save("a", "s1_2_3")
    tokens.save("a", "s4_5_6")
    assert tokens.load("a") == "s4_5_6"
    path = tmp_path / "matrix" / "sync" / "a.token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    tokens.clear("a")
    assert tokens.load("a") is None


def test_bot_localpart_convention():
    assert bot_localpart("code") == "mindroom_code"
    assert bot_user_id("code", "example.org") == "@mindroom_code:example.org"


def test_bot_localpart_of_a_name_with_capitals_is_lowercase():
    assert bot_localpart("DevBot") == "mindroom_devbot"
    assert bot_user_id("DevBot", "example.org", "mr_") == "@mr_devbot:example.org"


@pytest.mark.parametrize("name", ["", "Dev Bot", "Ünicode", "../escape", "a/b", "with space", "-dash"])
def test_bot_localpart_rejects_names_that_are_not_localparts(name, tmp_path):
    with pytest.raises(ValueError, match="bot name"):
        bot_localpart(name)
    with pytest.raises(ValueError, match="bot name"):
        CredentialStore(tmp_path).path(name)
