"""`mindroom doctor` fails the sandbox line when a tool that runs sandboxed cannot start here.

The shell tool and stdio MCP servers run in bubblewrap (and, with a network, behind slirp4netns); the tests
take either off the PATH the daemon would search, as a fresh machine without them has.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mindroom.cli import app
from tests.cli.test_doctor import _clean_env, _closed_port, _lines
from tests.integration.mcp_servers import time_server_command

__all__ = ["_clean_env"]

runner = CliRunner()
needs_both = pytest.mark.skipif(
    shutil.which("bwrap") is None or shutil.which("slirp4netns") is None,
    reason="bubblewrap and slirp4netns are not installed",
)


def write_config(tmp_path: Path, *, tools=("shell",), servers=None, **settings) -> Path:
    config = {
        "models": {"default": {"provider": "offline", "id": "offline"}},
        "agents": {"assistant": {"display_name": "Assistant", "rooms": ["lobby"], "tools": list(tools)}},
        "mcp_servers": servers or {},
        "tools": settings,
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def clock() -> dict:
    return {"clock": {"transport": "stdio", "command": time_server_command(), "args": ["--local-timezone", "UTC"]}}


def doctor(config: Path):
    result = runner.invoke(
        app, ["doctor", "-c", str(config), "--storage-path", str(config.parent / "data"), "--no-model-call"]
    )
    return result.exit_code, _lines(result.output)


def path_with(tmp_path: Path, *programs: str) -> str:
    """A PATH folder holding only these programs of this machine (those it has)."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for name in programs:
        found = shutil.which(name)
        if found is not None:
            (folder / name).symlink_to(found)
    return str(folder)


def test_doctor_sandbox_fails_without_bubblewrap_for_the_shell_and_stdio_servers(tmp_path, monkeypatch):
    config = write_config(tmp_path, tools=("shell", "mcp_clock"), servers=clock())
    monkeypatch.setenv("PATH", path_with(tmp_path, "env"))

    code, lines = doctor(config)

    assert code == 1
    shell, mcp = lines["sandbox tools.shell"], lines["sandbox tools.mcp"]
    assert shell.startswith("FAIL") and "tools.shell.sandbox is auto, but bwrap (bubblewrap) is not installed" in shell
    assert mcp.startswith("FAIL") and "tools.mcp.sandbox is auto, but bwrap (bubblewrap)" in mcp
    assert "apt-get install bubblewrap" in shell


def test_doctor_sandbox_fails_without_slirp4netns_when_a_sandbox_has_the_network(tmp_path, monkeypatch):
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    config = write_config(tmp_path, tools=("shell", "mcp_clock"), servers=clock(), shell={"network": True})
    monkeypatch.setenv("PATH", path_with(tmp_path, "env", "bwrap"))

    code, lines = doctor(config)

    assert code == 1
    for key in ("tools.shell", "tools.mcp"):
        line = lines[f"sandbox {key}"]
        assert line.startswith("FAIL") and f"{key}.network is true, but slirp4netns is not installed" in line
        assert "apt-get install slirp4netns" in line


def test_doctor_sandbox_warns_of_what_the_operator_wrote_and_passes_a_closed_sandbox(tmp_path, monkeypatch):
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    # Without slirp4netns: the shell has no network, stdio servers share the host's (written), so both run.
    config = write_config(tmp_path, tools=("shell", "mcp_clock"), servers=clock(), mcp={"network": "host"})
    monkeypatch.setenv("PATH", path_with(tmp_path, "env", "bwrap"))

    _, lines = doctor(config)

    assert lines["sandbox tools.shell"].startswith("ok") and "without a network" in lines["sandbox tools.shell"]
    assert lines["sandbox tools.mcp"].startswith("warn") and "loopback" in lines["sandbox tools.mcp"]


def test_doctor_sandbox_is_not_checked_where_nothing_runs_sandboxed(tmp_path, monkeypatch):
    # A disabled stdio server and a remote one need no sandbox; neither does an agent without the shell tool.
    servers = {
        "off": {"transport": "stdio", "command": time_server_command(), "enabled": False},
        "remote": {
            "transport": "streamable-http",
            "url": f"http://127.0.0.1:{_closed_port()}/mcp",
            "allow_private_network": True,
        },
    }
    config = write_config(tmp_path, tools=("calculator",), servers=servers)
    monkeypatch.setenv("PATH", path_with(tmp_path, "env"))

    _, lines = doctor(config)

    assert not [name for name in lines if name.startswith("sandbox")]


@needs_both
def test_doctor_sandbox_passes_with_bubblewrap_and_slirp4netns(tmp_path):
    config = write_config(tmp_path, tools=("shell", "mcp_clock"), servers=clock(), shell={"network": True})

    code, lines = doctor(config)

    assert lines["sandbox tools.shell"].startswith("ok") and "slirp4netns" in lines["sandbox tools.shell"]
    assert lines["sandbox tools.mcp"].startswith("ok") and "slirp4netns" in lines["sandbox tools.mcp"]
    assert lines["mcp server clock"].startswith("ok"), lines["mcp server clock"]
    assert code == 0, lines
