"""Who a sandboxed command is, and what of `/etc` it sees: an unprivileged user, and only the files programs need.

These tests run as whatever user runs the suite; as root (CI) they show that the sandbox does not hand
root on to the command.
"""

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mindroom.config.main import ShellToolConfig, ToolsConfig
from mindroom.tool_system.sandbox.bubblewrap import ETC_FILES, ETC_NETWORK_FILES, SANDBOX_UID
from mindroom.tool_system.sandbox.launch import DEFAULT_PATH, Sandbox, prepare_launch
from mindroom.tool_system.shell import shell_tools
from mindroom.tool_system.spec import AgentToolEnvironment
from tests.tool_system.test_shell_sandbox import PYTHON_PATHS, data_dir, needs_bwrap, shell, workspace

__all__ = ["data_dir"]

pytestmark = needs_bwrap

# Top-level names of /etc the sandbox may show: the listed files and those it writes itself.
SHOWN_IN_ETC = {name.split("/")[0] for name in (*ETC_FILES, *ETC_NETWORK_FILES)} | {"passwd", "group", "resolv.conf"}


def output_of(result: str) -> str:
    code, _, rest = result.partition("\n")
    assert code == "exit code: 0", result
    return rest


@pytest.mark.asyncio
async def test_shell_sandbox_command_runs_as_an_unprivileged_user(data_dir):
    run = shell(data_dir, "id", "whoami", sandbox="bwrap")

    assert output_of(await run("id -u")).strip() == str(SANDBOX_UID) != "0"
    assert output_of(await run("id -g")).strip() == str(SANDBOX_UID)
    assert output_of(await run("whoami")).strip() == "agent"


@pytest.mark.asyncio
async def test_shell_sandbox_does_not_show_etc_shadow_or_the_hosts_accounts(data_dir):
    run = shell(data_dir, "cat", "ls", sandbox="bwrap")

    shadow = await run("cat /etc/shadow")
    private_keys = await run("ls /etc/ssl/private")
    passwd = output_of(await run("cat /etc/passwd"))
    shown = set(output_of(await run("ls -A /etc")).split())

    assert shadow.startswith("exit code: 1") and "No such file" in shadow
    assert private_keys.startswith("exit code: 2")
    assert [line.split(":")[0] for line in passwd.splitlines()] == ["root", "agent", "nobody"]
    assert shown <= SHOWN_IN_ETC | {name for name in os.listdir("/etc") if name.startswith(("python3", "java-"))}
    assert {"shadow", "gshadow", "sudoers", "ssh", "machine-id"}.isdisjoint(shown)


@pytest.mark.skipif(not os.path.exists("/etc/resolv.conf"), reason="this host has no /etc/resolv.conf")
@pytest.mark.asyncio
async def test_shell_sandbox_resolver_files_come_only_with_the_network(data_dir):
    closed = await shell(data_dir, "cat", sandbox="bwrap")("cat /etc/resolv.conf")
    own = await shell(data_dir, "cat", sandbox="bwrap", network=True)("cat /etc/resolv.conf")
    shared = await shell(data_dir, "cat", sandbox="bwrap", network="host")("cat /etc/resolv.conf")

    assert closed.startswith("exit code: 1")
    assert own == "exit code: 0\nnameserver 10.0.2.3\n"  # slirp's forwarder, not the host's resolver
    assert shared == "exit code: 0\n" + await asyncio.to_thread(Path("/etc/resolv.conf").read_text)


@pytest.mark.asyncio
async def test_shell_sandbox_common_commands_still_work_as_that_user(data_dir, tmp_path):
    shared = tmp_path / "shared-docs"
    shared.mkdir()
    (shared / "readme.txt").write_text("shared notes\n")
    allowed = ("ls", "sh", "cat", sys.executable)
    config = ShellToolConfig(
        allowed_commands=list(allowed), sandbox="bwrap", readonly_paths=[*PYTHON_PATHS, str(shared)]
    )
    (run,) = (
        spec.function
        for spec in shell_tools(AgentToolEnvironment("helper", workspace(data_dir), ToolsConfig(shell=config)))
    )
    folder = workspace(data_dir)
    folder.mkdir(parents=True)
    (folder / "old.txt").write_text("written by the daemon\n")

    listing = output_of(await run("ls"))
    python = output_of(await run(f"{sys.executable} -I -c 'import getpass, os; print(getpass.getuser(), os.getuid())'"))
    pipeline = output_of(await run("sh -c 'ls | wc -l && echo made > made.txt && echo more >> old.txt'"))
    scratch = output_of(await run('sh -c \'echo x > "$HOME/h" && echo y > /tmp/t && cat "$HOME/h" /tmp/t\''))
    shown = output_of(await run(f"cat {shared / 'readme.txt'}"))

    assert listing == "old.txt\n"
    assert python == f"agent {SANDBOX_UID}\n"
    assert pipeline == "1\n"
    assert (folder / "made.txt").read_text() == "made\n"
    assert (folder / "old.txt").read_text() == "written by the daemon\nmore\n"
    assert (folder / "made.txt").stat().st_uid == os.getuid()  # the daemon's user owns what the sandbox made
    assert scratch == "x\ny\n"
    assert shown == "shared notes\n"


TLS_PROBE = (
    "import os, ssl; p = ssl.get_default_verify_paths(); "
    "print(bool(p.cafile and os.path.isfile(p.cafile)) or bool(p.capath and os.listdir(p.capath)))"
)


@pytest.fixture
def tls_on_host():
    """Whether the system's python3 finds certificate authorities on the host."""
    python3 = shutil.which("python3", path=DEFAULT_PATH)
    if python3 is None:
        pytest.skip("no system python3")
    return subprocess.run([python3, "-I", "-c", TLS_PROBE], capture_output=True, text=True, check=True).stdout


@pytest.mark.asyncio
async def test_shell_sandbox_system_python_finds_tls_authorities_as_on_the_host(data_dir, tls_on_host):
    inside = await shell(data_dir, "python3", sandbox="bwrap")(f'python3 -I -c "{TLS_PROBE}"')

    assert inside == f"exit code: 0\n{tls_on_host}"


needs_root_and_setpriv = pytest.mark.skipif(
    os.getuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv to start a non-root daemon"
)


@needs_root_and_setpriv
def test_shell_sandbox_of_a_non_root_daemon_writes_its_workspace():
    # The sandbox a daemon running as uid 65534 would start: its workspace is private to that uid.
    daemon_uid = 65534
    with tempfile.TemporaryDirectory(prefix="mindroom-non-root-") as parent:
        Path(parent).chmod(0o755)
        folder = Path(parent) / "workspace"
        folder.mkdir(mode=0o700)
        os.chown(folder, daemon_uid, daemon_uid)
        done = _run_as(daemon_uid, folder)
        made = folder / "made.txt"
        assert done.returncode == 0, done.stderr
        assert done.stdout == f"{SANDBOX_UID}\n"
        assert made.read_text() == "hi\n" and made.stat().st_uid == daemon_uid


def _run_as(daemon_uid: int, folder: Path) -> subprocess.CompletedProcess[str]:
    bwrap = shutil.which("bwrap")
    launch = prepare_launch(
        Sandbox(bwrap), ShellToolConfig(), ["/bin/sh", "-c", "id -u; echo hi > made.txt"], folder, (), DEFAULT_PATH
    )
    assert launch.scratch is not None
    for path in (launch.scratch, *launch.scratch.iterdir()):
        os.chown(path, daemon_uid, daemon_uid)  # as that daemon would have made them
    try:
        done = subprocess.run(
            ["setpriv", f"--reuid={daemon_uid}", f"--regid={daemon_uid}", "--clear-groups", *launch.argv],
            env=dict(launch.env),
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=30,
        )
    finally:
        shutil.rmtree(launch.scratch)
    return done
