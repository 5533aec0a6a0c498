"""docker/: the files Compose and the Dockerfile refer to exist and agree (Docker itself cannot run here)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

DOCKER = Path(__file__).resolve().parents[2] / "docker"


def _compose() -> dict:
    return yaml.safe_load((DOCKER / "docker-compose.yml").read_text())


def test_compose_runs_synapse_and_the_daemon_with_data_volumes():
    compose = _compose()
    services = compose["services"]

    assert {"synapse", "mindroom"} <= set(services)
    assert "synapse-data" in compose["volumes"] and "mindroom-data" in compose["volumes"]
    assert "mindroom-data:/data" in services["mindroom"]["volumes"]
    assert "synapse-data:/data" in services["synapse"]["volumes"]
    assert services["mindroom"]["depends_on"]["synapse"]["condition"] == "service_healthy"


def test_compose_paths_exist_and_ports_stay_on_loopback():
    compose = _compose()
    for service in compose["services"].values():
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if source.startswith("."):
                assert (DOCKER / source).exists(), source
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), port
    build = compose["services"]["mindroom"]["build"]
    assert (DOCKER / build["context"] / build["dockerfile"]).is_file()


def test_daemon_and_synapse_share_the_registration_secret_and_server_name():
    compose = _compose()
    env = compose["services"]["mindroom"]["environment"]
    synapse = yaml.safe_load((DOCKER / "synapse" / "homeserver.yaml").read_text())

    secret_file = f"/run/secrets/{compose['services']['mindroom']['secrets'][0]}"
    assert env["MATRIX_REGISTRATION_SHARED_SECRET_FILE"] == secret_file
    assert synapse["registration_shared_secret_path"] == secret_file
    assert env["MATRIX_SERVER_NAME"].endswith(f"{synapse['server_name']}}}")
    assert env["MATRIX_HOMESERVER"] == f"http://synapse:{synapse['listeners'][0]['port']}"
    assert synapse["enable_registration"] is False


def test_dockerfile_runs_the_daemon_as_a_user_with_data_in_a_volume():
    text = (DOCKER / "Dockerfile").read_text()

    assert re.search(r"^USER mindroom$", text, re.MULTILINE)
    assert 'VOLUME ["/data"]' in text
    assert "MINDROOM_STORAGE_PATH=/data" in text
    assert 'ENTRYPOINT ["mindroom"]' in text and 'CMD ["run"]' in text
    for copied in re.findall(r"^COPY (?!--from)(\S+)", text, re.MULTILINE):
        assert (DOCKER.parent / copied).exists(), copied


def _setup_commands() -> dict[str, str]:
    """The secret-file setup lines of the README's Docker section and of the compose file's header."""
    readme = (DOCKER.parent / "README.md").read_text()
    section = readme.split("## Docker", 1)[1].split("\n## ", 1)[0]
    header = "\n".join(
        line for line in (DOCKER / "docker-compose.yml").read_text().splitlines() if line.startswith("#")
    )
    return {"README.md": section, "docker-compose.yml": header}


def test_docs_keep_the_registration_secret_from_other_users_but_readable_by_both_containers():
    compose = _compose()
    synapse_uid = compose["services"]["synapse-init"]["entrypoint"][-2].split(":")[0]
    daemon_gid = re.search(r"groupadd --system --gid (\d+) mindroom", (DOCKER / "Dockerfile").read_text())
    assert daemon_gid is not None

    for where, text in _setup_commands().items():
        assert not re.search(r"chmod 0?6[0-7]4|chmod 0?644|chmod [ago]*\+r", text), where
        assert "chmod 0640 secrets/registration_shared_secret" in text, where
        assert f"chown {synapse_uid}:{daemon_gid.group(1)} secrets/registration_shared_secret" in text, where
        assert "umask 077" in text, where  # never world-readable, not even before the chmod
