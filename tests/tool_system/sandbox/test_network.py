"""A sandbox with the network has one of its own: outward connections work, the host's loopback services do not.

Real bubblewrap and slirp4netns (CI installs both), real listeners on this machine: one on the host's
127.0.0.1, as the daemon's API, the embedded homeserver or a local database would be, and one on a
non-loopback address of the host, which stands for the outside. Nothing here leaves the machine but a DNS
query for a name the machine's own package sources use.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import shutil
import socket
import struct
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from mindroom.backoff import Backoff
from mindroom.config.main import Config, ShellToolConfig
from mindroom.constants import RuntimePaths
from mindroom.tool_system.calls import call_tool
from mindroom.tool_system.mcp.servers import MCPServerPool
from mindroom.tool_system.sandbox import launch as sandbox_module
from mindroom.tool_system.sandbox.reaper import descendants
from mindroom.tool_system.shell import run_command
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError

needs_slirp = pytest.mark.skipif(
    shutil.which("bwrap") is None or shutil.which("slirp4netns") is None,
    reason="bubblewrap and slirp4netns are not installed",
)
PYTHON_PATHS = sorted({sys.prefix, sys.base_prefix})
_SIOCGIFADDR = 0x8915


def host_address() -> str | None:
    """A non-loopback IPv4 address of this machine's own interfaces (read from the kernel; nothing is sent)."""
    for _, name in socket.if_nameindex():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                answer = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue
        address = socket.inet_ntoa(answer[20:24])
        if not address.startswith("127."):
            return address
    return None


@contextlib.contextmanager
def listener(address: str) -> Iterator[int]:
    """A TCP listener on `address` of this machine; yields its port."""
    server = socket.socket()
    server.bind((address, 0))
    server.listen()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


@pytest.fixture
def loopback_port() -> Iterator[int]:
    """A service on the host's loopback only, as the daemon's API is."""
    with listener("127.0.0.1") as port:
        yield port


@pytest.fixture
def outside() -> Iterator[tuple[str, int]]:
    """A service on a non-loopback address of the host: what the sandbox reaches as the outside."""
    address = host_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address to stand for the outside")
    with listener(address) as port:
        yield address, port


def slirps() -> list[int]:
    """The slirp4netns processes this test process started that still run."""
    found = []
    for pid in descendants(os.getpid()):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/comm").read_text().strip() == "slirp4netns":
                found.append(pid)
    return found


async def no_slirp_within(seconds: float = 10.0) -> bool:
    deadline = asyncio.get_running_loop().time() + seconds
    while slirps():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


DIAL = """
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), 3).close()
    print("connected")
except OSError as exc:
    print("refused", exc.errno)
"""


async def dial(workspace: Path, host: str, port: int, **settings) -> str:
    """What a sandboxed command trying `host:port` says: `connected`, or `refused <errno>`."""
    await asyncio.to_thread(workspace.mkdir, parents=True, exist_ok=True)
    await asyncio.to_thread((workspace / "dial.py").write_text, DIAL)
    config = ShellToolConfig(allowed_commands=[sys.executable], readonly_paths=PYTHON_PATHS, **settings)
    output = await run_command(f"{sys.executable} -I dial.py {host} {port}", workspace, config)
    assert output.startswith("exit code: 0\n"), output
    return output.splitlines()[1]


@needs_slirp
@pytest.mark.asyncio
async def test_sandbox_network_reaches_outward_but_not_the_hosts_loopback(tmp_path, loopback_port, outside):
    # The host's 127.0.0.1 by its own name (the sandbox's loopback: nobody listens there), through slirp's
    # gateway to the host (refused), and through another address of the host's loopback range.
    own_loopback = await dial(tmp_path / "ws", "127.0.0.1", loopback_port, network=True)
    gateway = await dial(tmp_path / "ws", "10.0.2.2", loopback_port, network=True)
    other_loopback = await dial(tmp_path / "ws", "127.0.0.2", loopback_port, network=True)
    outward = await dial(tmp_path / "ws", *outside, network=True)

    assert own_loopback.startswith("refused") and gateway.startswith("refused")
    assert other_loopback.startswith("refused")
    assert outward == "connected"
    assert await no_slirp_within(), f"slirp4netns outlived its sandbox: {slirps()}"


@needs_slirp
@pytest.mark.asyncio
async def test_sandbox_network_host_is_the_hosts_own_loopback_included(tmp_path, loopback_port):
    # The operator's explicit, weaker choice: the host's network itself.
    assert await dial(tmp_path / "ws", "127.0.0.1", loopback_port, network="host") == "connected"
    assert (await dial(tmp_path / "ws", "127.0.0.1", loopback_port, network=False)).startswith("refused")


OWN_LOOPBACK = """
import socket
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen()
client = socket.create_connection(server.getsockname(), 3)
peer, _ = server.accept()
client.sendall(b"hello")
print(peer.recv(5).decode())
with open("/etc/resolv.conf") as resolver:
    print(resolver.read().strip())
"""


@needs_slirp
@pytest.mark.asyncio
async def test_sandbox_network_keeps_its_own_loopback_and_names_slirps_resolver(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "own.py").write_text(OWN_LOOPBACK)
    config = ShellToolConfig(allowed_commands=[sys.executable], readonly_paths=PYTHON_PATHS, network=True)

    output = await run_command(f"{sys.executable} -I own.py", workspace, config)

    assert output == "exit code: 0\nhello\nnameserver 10.0.2.3\n"


def package_source_hosts() -> list[str]:
    """The host names this machine's package manager downloads from (its own configuration names them)."""
    found: dict[str, None] = {}
    for path in [*Path("/etc/apt").glob("sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        if not path.is_file() or path.suffix not in (".list", ".sources", ""):
            continue
        for line in path.read_text(errors="replace").splitlines():
            if line.lstrip().startswith("#"):
                continue
            for word in line.split():
                if word.startswith(("http://", "https://")):
                    found[word.split("/")[2].split(":")[0]] = None
    return list(found)


async def resolvable_name() -> str | None:
    """A name of the package sources that this machine resolves itself, if any."""
    for name in package_source_hosts():
        try:
            await asyncio.get_running_loop().getaddrinfo(name, 443)
        except OSError:
            continue
        return name
    return None


@needs_slirp
@pytest.mark.asyncio
async def test_sandbox_network_resolves_names_through_slirp(tmp_path):
    name = await resolvable_name()
    if name is None:
        pytest.skip("this machine resolves no host name of its package sources")
    config = ShellToolConfig(allowed_commands=[sys.executable], readonly_paths=PYTHON_PATHS, network=True)
    code = f"import socket; print(bool(socket.getaddrinfo({name!r}, 443)))"

    output = await run_command(f'{sys.executable} -I -c "{code}"', tmp_path / "ws", config)

    assert output == "exit code: 0\nTrue\n"


@needs_slirp
@pytest.mark.asyncio
async def test_sandbox_network_ends_with_a_command_stopped_at_its_timeout(tmp_path):
    config = ShellToolConfig(allowed_commands=["sleep"], network=True, timeout_s=1)

    with pytest.raises(ToolError, match="timed out"):
        await run_command("sleep 60", tmp_path / "ws", config)

    assert await no_slirp_within(), f"slirp4netns outlived its sandbox: {slirps()}"


@pytest.fixture
def bwrap_without_slirp(tmp_path, monkeypatch):
    """A PATH with bubblewrap and `sleep` but no slirp4netns; the once-only notices forgotten."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        pytest.skip("bubblewrap is not installed")
    folder = tmp_path / "bin"
    folder.mkdir()
    for name, target in (("bwrap", bwrap), ("sleep", shutil.which("sleep")), ("env", shutil.which("env"))):
        (folder / name).symlink_to(target)
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.setattr(sandbox_module._Seen, "logged", set())
    return folder


@pytest.mark.asyncio
async def test_sandbox_network_without_slirp_is_refused_unless_the_host_network_is_written(
    tmp_path, bwrap_without_slirp
):
    settings = ShellToolConfig(allowed_commands=["env"], network=True)

    with pytest.raises(ToolError, match=r"tools.shell.network is true, but slirp4netns is not installed") as refused:
        await run_command("env", tmp_path / "ws", settings)

    assert "apt-get install slirp4netns" in str(refused.value) and "network: host" in str(refused.value)
    host = await run_command("env", tmp_path / "ws", settings.model_copy(update={"network": "host"}))
    closed = await run_command("env", tmp_path / "ws", settings.model_copy(update={"network": False}))
    assert "HOME=/home/agent" in host and "HOME=/home/agent" in closed


DIALER = """\
#!{python}
import socket
from mcp.server.mcpserver import MCPServer

server = MCPServer("dialer")


@server.tool()
def dial(host: str, port: int) -> str:
    \"\"\"Try a TCP connection to host:port.\"\"\"
    try:
        socket.create_connection((host, port), 3).close()
        return "connected"
    except OSError as exc:
        return f"refused {{exc.errno}}"


server.run()
"""


@pytest.fixture
def dialer(tmp_path) -> Path:
    """A stdio MCP server whose one tool dials an address; its folder is shown read-only to its sandbox."""
    folder = tmp_path / "dialer"
    folder.mkdir()
    script = folder / "server.py"
    script.write_text(DIALER.format(python=sys.executable))
    script.chmod(0o755)
    return script


@pytest_asyncio.fixture
async def pool(tmp_path):
    made = MCPServerPool(
        RuntimePaths(tmp_path / "config.yaml", tmp_path / "data", {}), retry=Backoff(first_s=0.2, max_s=0.5)
    )
    yield made
    await made.close()


def dialer_config(script: Path, **mcp) -> Config:
    return Config.model_validate(
        {
            "mcp_servers": {"dialer": {"transport": "stdio", "command": str(script)}},
            "agents": {"a": {"display_name": "A", "tools": ["mcp_dialer"]}},
            "tools": {"mcp": {"readonly_paths": [*PYTHON_PATHS, str(script.parent)], **mcp}},
        }
    )


async def ready(pool: MCPServerPool, timeout: float = 60.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        (status,) = pool.statuses()
        if status.state == "ready" or status.restarts:
            return status
        await asyncio.sleep(0.05)
    raise TimeoutError("the MCP server neither started nor failed")


@needs_slirp
@pytest.mark.asyncio
async def test_mcp_stdio_server_network_reaches_outward_but_not_the_hosts_loopback(
    pool, tmp_path, dialer, loopback_port, outside
):
    config = dialer_config(dialer)  # tools.mcp.network is on by default
    await pool.apply(config)
    status = await ready(pool)
    assert status.state == "ready", status.reason
    (spec,) = pool.tool_specs(config, "dialer", AgentToolEnvironment("a", tmp_path))

    loopback = await call_tool(spec, "a", {"host": "127.0.0.1", "port": loopback_port})
    gateway = await call_tool(spec, "a", {"host": "10.0.2.2", "port": loopback_port})
    outward = await call_tool(spec, "a", {"host": outside[0], "port": outside[1]})

    assert loopback.startswith("refused") and gateway.startswith("refused")
    assert outward == "connected"
    assert slirps(), "the server's sandbox runs without slirp4netns"
    await pool.close()
    assert await no_slirp_within(), f"slirp4netns outlived the MCP server: {slirps()}"


@pytest.mark.asyncio
async def test_mcp_stdio_server_without_bubblewrap_is_refused_unless_sandbox_none(pool, tmp_path, dialer, monkeypatch):
    folder = tmp_path / "no-bwrap"
    folder.mkdir()
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.setattr(sandbox_module._Seen, "logged", set())

    await pool.apply(dialer_config(dialer))
    refused = await ready(pool)

    assert refused.state == "failed"
    assert "tools.mcp.sandbox is auto, but bwrap (bubblewrap) is not installed" in refused.reason
    assert "apt-get install bubblewrap" in refused.reason
    config = dialer_config(dialer, sandbox="none")
    await pool.apply(config)
    assert (await ready(pool)).state == "ready"
    (spec,) = pool.tool_specs(config, "dialer", AgentToolEnvironment("a", tmp_path))
    with listener("127.0.0.1") as port:
        assert await call_tool(spec, "a", {"host": "127.0.0.1", "port": port}) == "connected"


@pytest.mark.asyncio
async def test_sandbox_network_with_a_broken_slirp_is_refused_and_says_why(tmp_path, bwrap_without_slirp):
    # Installed but unable to work here (a container without /dev/net/tun): refused, the command never runs.
    broken = bwrap_without_slirp / "slirp4netns"
    broken.write_text("#!/bin/sh\necho 'open(\"/dev/net/tun\"): No such file or directory' >&2\nexit 1\n")
    broken.chmod(0o755)
    settings = ShellToolConfig(allowed_commands=["env"], network=True)

    with pytest.raises(ToolError) as refused:
        await run_command("env", tmp_path / "ws", settings)

    assert "tools.shell.network is true, but slirp4netns could not give the sandbox its network" in str(refused.value)
    assert 'open("/dev/net/tun"): No such file or directory' in str(refused.value)


@needs_slirp
@pytest.mark.asyncio
async def test_sandbox_network_starts_every_time_when_many_start_at_once(tmp_path):
    # slirp4netns brings the sandbox's loopback up itself: started before bubblewrap set it up, it made
    # bubblewrap fail now and then ("loopback: Failed RTM_NEWADDR"), more often on a busy machine.
    config = ShellToolConfig(allowed_commands=["true"], network=True)

    for _ in range(20):
        outputs = await asyncio.gather(*(run_command("true", tmp_path / "ws", config) for _ in range(5)))
        assert outputs == ["exit code: 0\n"] * 5

    assert await no_slirp_within(), f"slirp4netns outlived its sandbox: {slirps()}"
