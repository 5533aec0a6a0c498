"""`mindroom tools install NAME...`: pip into the environment mindroom runs in, the packages of the tool's extra."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

from typer.testing import CliRunner

from mindroom.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def test_tools_install_refuses_unknown_names_and_those_not_offered_installing_nothing():
    names = ["wikipedia", "tavilyy", "desktop", "external_trigger_manager"]
    result = CliRunner().invoke(app, ["tools", "install", *names])

    assert result.exit_code == 2
    assert result.output.splitlines() == [
        "nothing installed:",
        "  tavilyy: unknown tool (`mindroom tools list` shows every name)",
        "  desktop: not offered here: it exists for MindRoom's hosted service: it reaches into a person's own "
        "computer through MindRoom's desktop app",
        "  external_trigger_manager: nothing to install, it comes with external triggers",
    ]


def test_tools_install_dry_run_names_the_pip_of_this_interpreter_and_the_extras_packages():
    result = CliRunner().invoke(app, ["tools", "install", "--dry-run", "wikipedia", "duckduckgo", "shell", "sleep"])

    assert result.exit_code == 0, result.output
    command = [sys.executable, "-m", "pip", "install", *EXTRAS["tools-web"]]  # one extra, named twice: once
    assert result.output.splitlines() == [
        "shell: built in, nothing to install",
        "sleep: nothing to install",
        f"would run: {shlex.join(command)}",
    ]


def test_tools_install_installs_the_missing_package_into_the_running_environment(tmp_path: Path):
    # A throwaway environment that sees this one's packages (mindroom among them) and installs into its own.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    )  # fmt: skip
    outer = sysconfig.get_paths()["purelib"]  # added as a site folder, so its editable install of mindroom works
    (site / "outer.pth").write_text(f"import site; site.addsitedir({outer!r})\n")
    config = tmp_path / "config.yaml"
    config.write_text("agents: {}\n")

    def mindroom(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(python), "-m", "mindroom", *args], capture_output=True, text=True, cwd=tmp_path)

    before = json.loads(mindroom("tools", "list", "-c", str(config), "--json").stdout)
    assert {row["name"]: row["status"] for row in before}["replicate"] == "missing package"

    installed = mindroom("tools", "install", "replicate")

    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert installed.stdout.startswith(f"running: {python} -m pip install replicate\n")
    assert (site / "replicate" / "__init__.py").is_file()  # into the environment mindroom ran in
    after = json.loads(mindroom("tools", "list", "-c", str(config), "--json").stdout)
    assert {row["name"]: row["status"] for row in after}["replicate"] == "missing credential"
    again = mindroom("tools", "install", "replicate")
    assert again.stdout == "replicate: its packages are installed already\n"
