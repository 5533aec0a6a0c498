"""The embedded homeserver registers the daemon as an application service for the bots' accounts."""

from __future__ import annotations

import stat

import pytest
import yaml

from mindroom.homeserver.embedded import EmbeddedHomeserver
from mindroom.matrix.appservice.registration_file import AppserviceConfigError, AppserviceRegistration


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_embedded_appservice_registration_is_private_and_covers_only_the_bots(tmp_path):
    server = EmbeddedHomeserver(tmp_path, account_prefix="mr_", appservice=True)
    server.prepare()

    path = server.appservice_registration
    assert _mode(path) == 0o600
    raw = yaml.safe_load(path.read_text())
    registration = AppserviceRegistration.load(path)
    assert registration.covers("@mr_router:localhost")
    assert registration.covers("@mr_helper:localhost")
    assert not registration.covers("@user:localhost")
    assert not registration.covers("@mr_helper:elsewhere")
    assert raw["namespaces"]["users"][0]["exclusive"] is False  # the bots stay ordinary accounts
    assert raw["receive_ephemeral"] is True  # Synapse sends to-device messages only with it
    assert raw["org.matrix.msc3202"] is True  # device lists and one-time key counts
    host, port = registration.listen_address
    assert host == "127.0.0.1"
    assert port != server.port
    assert len({registration.as_token, registration.hs_token}) == 2


def test_embedded_appservice_is_loaded_by_synapse_with_the_encryption_extensions(tmp_path):
    server = EmbeddedHomeserver(tmp_path, appservice=True)
    server.prepare()

    config = yaml.safe_load((tmp_path / "homeserver" / "homeserver.yaml").read_text())

    assert config["app_service_config_files"] == [str(server.appservice_registration)]
    assert config["experimental_features"]["msc2409_to_device_messages_enabled"] is True
    assert config["experimental_features"]["msc3202_transaction_extensions"] is True


def test_embedded_appservice_keeps_its_tokens_and_port_across_runs_and_follows_the_prefix(tmp_path):
    first = EmbeddedHomeserver(tmp_path, account_prefix="one_", appservice=True)
    first.prepare()
    before = AppserviceRegistration.load(first.appservice_registration)

    second = EmbeddedHomeserver(tmp_path, account_prefix="two_", appservice=True)
    second.prepare()
    after = AppserviceRegistration.load(second.appservice_registration)

    assert (after.as_token, after.hs_token, after.url) == (before.as_token, before.hs_token, before.url)
    assert after.covers("@two_router:localhost")
    assert not after.covers("@one_router:localhost")


def test_embedded_appservice_registration_without_ephemeral_events_is_refused(tmp_path):
    path = tmp_path / "appservice.yaml"
    registration = AppserviceRegistration.create("http://127.0.0.1:9999", "mr_", "localhost")
    data = registration.as_dict()
    data["receive_ephemeral"] = False
    path.write_text(yaml.safe_dump(data))

    with pytest.raises(AppserviceConfigError, match="receive_ephemeral"):
        AppserviceRegistration.load(path)


def test_embedded_homeserver_without_appservice_mode_registers_no_application_service(tmp_path):
    EmbeddedHomeserver(tmp_path).prepare()

    config = yaml.safe_load((tmp_path / "homeserver" / "homeserver.yaml").read_text())

    assert "app_service_config_files" not in config
    assert "msc2409_to_device_messages_enabled" not in config.get("experimental_features", {})
