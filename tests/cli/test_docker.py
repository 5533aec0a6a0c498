"""docker/: the files Compose and the Dockerfile refer to exist and agree (Docker itself cannot run here)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import yaml
from typer.testing import CliRunner

from mindroom.cli.app import app
from tests.cli.test_plugins_install import commit
from tests.plugins.wheels import make_wheel

DOCKER = Path(__file__).resolve().parents[2] / "docker"
runner = CliRunner()


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


def test_dockerfile_installs_the_plugins_lock_exactly_with_git_in_the_image(tmp_path, monkeypatch):
    """The image's own `plugins install --locked` line, run against a lock: plugins and packages land where the
    daemon in the image reads them (/config/plugins, /data/plugin-deps)."""
    text = (DOCKER / "Dockerfile").read_text()
    ignored = (DOCKER / "Dockerfile.dockerignore").read_text().splitlines()
    assert "!plugins.lock" in ignored  # the lock reaches the build context
    assert re.search(r"COPY config\.yaml plugins\.lock\* /config/", text)
    assert re.search(r"apt-get install[^\n]* git ", text)  # installs and updates fetch with git
    line = re.search(r"MINDROOM_STORAGE_PATH=(\S+) /opt/mindroom/bin/mindroom (plugins install --locked[^\\\n]*)", text)
    assert line is not None and line.group(1) == "/data"

    wheels = tmp_path / "wheels"
    make_wheel(wheels, "tinydep", "1.0", "VERSION = '1.0'\n")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    source, config = tmp_path / "sizes", tmp_path / "config"
    config.mkdir()
    (config / "config.yaml").write_text("agents: {}\n")
    head = commit(source)
    made = runner.invoke(app, ["plugins", "install", str(source), "--config", str(config / "config.yaml")])
    assert made.exit_code == 0, made.output
    image_config, data = tmp_path / "image" / "config", tmp_path / "image" / "data"
    image_config.mkdir(parents=True)
    shutil.copy(config / "config.yaml", image_config)
    shutil.copy(config / "plugins.lock", image_config)
    monkeypatch.setenv("MINDROOM_STORAGE_PATH", str(data))
    args = [arg.replace("/config/", f"{image_config}/") for arg in line.group(2).split()]

    result = runner.invoke(app, args)

    assert result.exit_code == 0, result.output
    assert (image_config / "plugins" / "sizes" / "hooks.py").is_file()
    [packages] = (data / "plugin-deps" / "sizes").iterdir()
    assert (packages / "tinydep" / "__init__.py").read_text() == "VERSION = '1.0'\n"
    assert json.loads((image_config / "plugins.lock").read_text())["plugins"]["sizes"]["commit"] == head
