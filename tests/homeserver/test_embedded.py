"""The embedded homeserver's preparation: private files, stable secrets, a stable port with a fallback."""

from __future__ import annotations

import json
import socket
import stat

import pytest
import yaml

from mindroom.homeserver.embedded import (
    DEFAULT_EMBEDDED_PORT,
    EmbeddedHomeserver,
    EmbeddedHomeserverError,
    embedded_connection,
)


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _listening() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


def test_prepare_writes_private_config_and_keeps_secrets_across_runs(tmp_path):
    first = EmbeddedHomeserver(tmp_path)
    first.prepare()
    secret = first.registration_shared_secret
    base = tmp_path / "homeserver"

    assert first.created is True
    assert _mode(base) == 0o700
    for name in ("embedded.json", "homeserver.yaml", "signing.key"):
        assert _mode(base / name) == 0o600, name
    config = yaml.safe_load((base / "homeserver.yaml").read_text())
    assert config["listeners"][0]["bind_addresses"] == ["127.0.0.1"]
    assert config["registration_shared_secret"] == secret
    assert config["enable_registration"] is False
    assert config["database"]["args"]["database"] == str(base / "homeserver.db")

    second = EmbeddedHomeserver(tmp_path)
    second.prepare()
    assert second.created is False
    assert second.registration_shared_secret == secret
    assert second.port == first.port


def test_prepare_falls_back_to_a_free_port_when_the_remembered_one_is_taken(tmp_path):
    taken = _listening()
    try:
        base = tmp_path / "homeserver"
        base.mkdir(mode=0o700)
        (base / "embedded.json").write_text(json.dumps({"port": taken.getsockname()[1]}))
        server = EmbeddedHomeserver(tmp_path)
        server.prepare()
        assert server.port != taken.getsockname()[1]
        assert json.loads((base / "embedded.json").read_text())["port"] == server.port
    finally:
        taken.close()


def test_prepare_refuses_an_explicit_port_that_is_taken(tmp_path):
    taken = _listening()
    try:
        with pytest.raises(EmbeddedHomeserverError, match="in use"):
            EmbeddedHomeserver(tmp_path, port=taken.getsockname()[1]).prepare()
    finally:
        taken.close()


def test_prepare_without_synapse_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setattr("mindroom.homeserver.embedded.synapse_installed", lambda: False)
    with pytest.raises(EmbeddedHomeserverError, match=r"\[embedded\]"):
        EmbeddedHomeserver(tmp_path).prepare()


def test_embedded_connection_reads_back_url_and_user(tmp_path):
    assert embedded_connection(tmp_path) is None
    base = tmp_path / "homeserver"
    base.mkdir()
    (base / "embedded.json").write_text(json.dumps({"port": 18123, "server_name": "localhost"}))
    (base / "user.json").write_text(json.dumps({"user_id": "@me:localhost", "password": "pw"}))

    connection = embedded_connection(tmp_path)

    assert connection is not None
    assert (connection.url, connection.user_id, connection.password) == (
        "http://127.0.0.1:18123",
        "@me:localhost",
        "pw",
    )
    assert "pw" not in repr(connection)


@pytest.mark.asyncio
async def test_ensure_user_rejects_a_user_of_another_server(tmp_path):
    server = EmbeddedHomeserver(tmp_path)
    with pytest.raises(EmbeddedHomeserverError, match="@<name>:localhost"):
        await server.ensure_user("@alice:example.org")


def test_default_port_is_8008():
    assert DEFAULT_EMBEDDED_PORT == 8008
