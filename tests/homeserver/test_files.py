"""Synapse's files: one limiter key list at two levels, and secrets written private."""

from __future__ import annotations

import stat

import pytest
import yaml

from mindroom.homeserver.files import (
    LIMITER_KEYS,
    LOG_FILENAME,
    LimiterLevel,
    LimiterRate,
    rate_limits,
    write_synapse_files,
)

# Every limiter the embedded server (8 keys) and the test server (18 keys) set before they shared one list.
KEYS_BEFORE_THE_MERGE = {
    "rc_3pid_validation": (),
    "rc_admin_redaction": (),
    "rc_delayed_event_mgmt": (),
    "rc_invites": ("per_issuer", "per_room", "per_user"),
    "rc_joins": ("local", "remote"),
    "rc_joins_per_room": (),
    "rc_key_requests": (),
    "rc_login": ("account", "address", "failed_attempts"),
    "rc_media_create": (),
    "rc_message": (),
    "rc_presence": ("per_user",),
    "rc_profile": (),
    "rc_registration": (),
    "rc_registration_token_validity": (),
    "rc_reports": (),
    "rc_room_creation": (),
    "rc_third_party_invite": (),
    "rc_user_directory": (),
}

STATE = {
    "server_name": "localhost",
    "registration_shared_secret": "shared-secret",
    "macaroon_secret_key": "macaroon-secret",
    "form_secret": "form-secret",
}


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _limiters(settings):
    """(key, sub-limiter or None, setting) for every limiter in a config mapping."""
    for key, parts in LIMITER_KEYS.items():
        if parts:
            for part in parts:
                yield key, part, settings[key][part]
        else:
            yield key, None, settings[key]


def test_limiter_keys_keep_every_key_either_list_had():
    assert dict(LIMITER_KEYS) == KEYS_BEFORE_THE_MERGE


@pytest.mark.parametrize("level", list(LimiterLevel))
def test_rate_limits_set_every_key_at_the_level(level):
    settings = rate_limits(level)

    assert set(settings) == set(LIMITER_KEYS)
    for key, part, setting in _limiters(settings):
        assert setting == level.rate_for(key, part).as_config(), (key, part)


def test_limiter_levels_throttle_failed_logins_only_for_people():
    generous, unlimited = LimiterLevel.GENEROUS, LimiterLevel.UNLIMITED
    every_limiter = [(key, part) for key, parts in LIMITER_KEYS.items() for part in parts or (None,)]

    assert generous.rate_for("rc_login", "failed_attempts") == LimiterRate(1, 10)
    assert {generous.rate_for(*limiter) for limiter in every_limiter} == {LimiterRate(100, 1000), LimiterRate(1, 10)}
    assert {unlimited.rate_for(*limiter) for limiter in every_limiter} == {LimiterRate(10_000, 100_000)}


@pytest.mark.parametrize("level", list(LimiterLevel))
def test_write_synapse_files_writes_every_limiter_at_the_level(tmp_path, level):
    path = write_synapse_files(tmp_path, port=18008, state=STATE, limiter=level)

    config = yaml.safe_load(path.read_text())
    for key, part, setting in _limiters(config):
        assert setting == level.rate_for(key, part).as_config(), (key, part)


def test_write_synapse_files_defaults_to_the_generous_level(tmp_path):
    config = yaml.safe_load(write_synapse_files(tmp_path, port=18008, state=STATE).read_text())

    assert config["rc_message"] == LimiterLevel.GENEROUS.rate.as_config()


def test_write_synapse_files_keeps_secrets_private(tmp_path):
    base = tmp_path / "synapse"
    path = write_synapse_files(base, port=18008, state=STATE)

    assert path == base / "homeserver.yaml"
    assert _mode(path) == 0o600
    assert _mode(base / "signing.key") == 0o600
    assert _mode(base) == 0o700
    config = yaml.safe_load(path.read_text())
    assert (config["registration_shared_secret"], config["macaroon_secret_key"], config["form_secret"]) == (
        "shared-secret",
        "macaroon-secret",
        "form-secret",
    )


def test_write_synapse_files_listens_on_loopback_only(tmp_path):
    config = yaml.safe_load(write_synapse_files(tmp_path, port=18008, state=STATE).read_text())

    [listener] = config["listeners"]
    assert (listener["port"], listener["bind_addresses"]) == (18008, ["127.0.0.1"])
    assert [name for resource in listener["resources"] for name in resource["names"]] == ["client"]
    assert config["public_baseurl"] == "http://127.0.0.1:18008/"
    assert config["enable_registration"] is False
    assert config["federation_domain_whitelist"] == []
    assert config["database"]["args"]["database"] == str(tmp_path / "homeserver.db")
    log_config = yaml.safe_load((tmp_path / "log.config").read_text())
    assert log_config["handlers"]["file"]["filename"] == str(tmp_path / LOG_FILENAME)


def test_write_synapse_files_keeps_the_signing_key_and_refreshes_the_port(tmp_path):
    write_synapse_files(tmp_path, port=18008, state=STATE)
    key = (tmp_path / "signing.key").read_text()

    config = yaml.safe_load(write_synapse_files(tmp_path, port=18009, state=STATE).read_text())

    assert (tmp_path / "signing.key").read_text() == key
    assert key.startswith("ed25519 a_")
    assert config["listeners"][0]["port"] == 18009


def test_write_synapse_files_adds_extra_settings_last(tmp_path):
    extra = {"bcrypt_rounds": 4, "rc_message": {"per_second": 1, "burst_count": 1}}

    config = yaml.safe_load(write_synapse_files(tmp_path, port=18008, state=STATE, extra=extra).read_text())

    assert config["bcrypt_rounds"] == 4
    assert config["rc_message"] == {"per_second": 1, "burst_count": 1}
