"""The bubblewrap command line that the shell sandbox and `mindroom plugins check` share.

A sandbox runs as the unprivileged user `agent` (uid and gid 1000, HOME `/home/agent`) in a user
namespace of its own (`--unshare-user --uid 1000 --gid 1000`); bubblewrap maps that user to the uid and
gid that started it. What the daemon's user owns (the agent's workspace) is the sandbox user's, so the
workspace stays writable whether the daemon runs as root or not, and nothing in the sandbox is uid 0 or
holds a capability. A daemon running as root stays root to the kernel outside the namespace, though:
whatever root owns that the sandbox shows is readable through its owner's permission bits. So the
sandbox shows the system folders (`/usr`, `/bin`, `/sbin`, `/lib*`) and, of `/etc`, only what programs
need, not the folder (`/etc/shadow`, `/etc/ssh`, `/etc/ssl/private` stay out):

- `passwd`, `group`: written fresh for each sandbox, with `root`, `agent` and `nobody`, so `id`, `whoami`,
  `ls -l` and Python's `getpass` can name the user; the host's accounts are not shown.
- `nsswitch.conf`: in which order the names of users and hosts are looked up.
- `hosts`: `localhost` resolves, for servers a command starts on the sandbox's own loopback.
- `resolv.conf`: only with the network. A sandbox with a network of its own gets one written for it,
  naming slirp's forwarder (`mindroom.tool_system.sandbox.network`); with the host's network, the host's.
- `gai.conf`, `host.conf`: resolver settings; only with the network.
- `ld.so.cache`, `ld.so.conf`, `ld.so.conf.d`: where the dynamic linker finds shared libraries.
- `alternatives`: the links behind commands such as `awk`, `editor` or `java` (Debian, Ubuntu).
- `ssl/certs`, `ssl/cert.pem`, `ssl/openssl.cnf`, `pki/tls/certs`, `pki/tls/cert.pem`, `pki/tls/openssl.cnf`,
  `pki/ca-trust`, `ca-certificates`, `crypto-policies`: certificate authorities and OpenSSL's settings for
  TLS, never the private keys next to them.
- `localtime`, `timezone`: the local time zone.
- `mime.types`: file types by extension (Python's `mimetypes`).
- `protocols`, `services`: protocol and port names (`getaddrinfo(host, "https")`).
- `os-release`: the distribution's name and version, which installers read.
- `python3`, `python3.*`, `java-*`: settings the system's Python and Java link to from `/usr` (Debian).

Any other file a program needs can be shown with `tools.shell.readonly_paths`.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from mindroom.tool_system.sandbox.network import RESOLVER

__all__ = [
    "ETC_FILES",
    "ETC_NETWORK_FILES",
    "SANDBOX_GID",
    "SANDBOX_HOME",
    "SANDBOX_UID",
    "SANDBOX_USER",
    "SYSTEM_DIRS",
    "bwrap_command",
    "write_etc",
]

SANDBOX_UID = 1000
SANDBOX_GID = 1000
SANDBOX_USER = "agent"
SANDBOX_HOME = "/home/agent"
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = (
    "nsswitch.conf",
    "hosts",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "ssl/certs",
    "ssl/cert.pem",
    "ssl/openssl.cnf",
    "pki/tls/certs",
    "pki/tls/cert.pem",
    "pki/tls/openssl.cnf",
    "pki/ca-trust",
    "ca-certificates",
    "crypto-policies",
    "localtime",
    "timezone",
    "mime.types",
    "protocols",
    "services",
    "os-release",
    "python3",
    "python3.*",
    "java-*",
)
ETC_NETWORK_FILES = ("gai.conf", "host.conf")
_NOBODY = 65534


def write_etc(folder: Path) -> Path:
    """Write the sandbox's own `passwd`, `group` and `resolv.conf` into `folder` (which exists) and return it."""
    (folder / "passwd").write_text(
        "root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"{SANDBOX_USER}:x:{SANDBOX_UID}:{SANDBOX_GID}:{SANDBOX_USER}:{SANDBOX_HOME}:/bin/sh\n"
        f"nobody:x:{_NOBODY}:{_NOBODY}:nobody:/nonexistent:/usr/sbin/nologin\n",
        encoding="utf-8",
    )
    (folder / "group").write_text(
        f"root:x:0:\n{SANDBOX_USER}:x:{SANDBOX_GID}:\nnogroup:x:{_NOBODY}:\n",
        encoding="utf-8",
    )
    (folder / "resolv.conf").write_text(f"nameserver {RESOLVER}\n", encoding="utf-8")
    for name in ("passwd", "group", "resolv.conf"):
        (folder / name).chmod(0o644)
    return folder


def _inside_system_dirs(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in SYSTEM_DIRS)


def _etc_mounts(names: Sequence[str]) -> list[str]:
    """Mount options showing these entries of the host's `/etc` (glob patterns allowed), read-only."""
    argv: list[str] = []
    for name in names:
        for host in sorted(glob.glob(f"/etc/{name}")):
            target = os.path.realpath(host)
            if not os.path.exists(target):
                continue
            if os.path.islink(host) and _inside_system_dirs(target):
                # A link into /usr stays a link, so a program reading it (the zone name of `localtime`) still can.
                argv += ["--symlink", os.readlink(host), host]
            else:
                argv += ["--ro-bind", target, host]
    return argv


def bwrap_command(
    bwrap: str,
    *,
    path: str,
    lang: str,
    accounts: Path,
    network: bool | Literal["host"] = False,
    readonly: Sequence[str] = (),
    hidden: Sequence[Path] = (),
    on_top: Sequence[tuple[Path, bool]] = (),
    chdir: Path,
) -> list[str]:
    """bwrap and its options (up to, not including, the `--` before the program).

    `readonly` host paths are shown read-only at the same path; `hidden` folders are covered by an empty
    tmpfs even below a shown folder; `on_top` paths (`(path, writable)`) are shown after those, so a
    workspace inside a hidden data directory is seen. `accounts` holds the `write_etc` files. `network`:
    `False` none, `True` a namespace of its own (for slirp4netns to link), `"host"` the host's network.
    """
    argv = [bwrap, "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID)]
    argv += ["--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if network == "host":
        argv.append("--share-net")
    argv += ["--clearenv", "--setenv", "PATH", path, "--setenv", "LANG", lang, "--setenv", "HOME", SANDBOX_HOME]
    for system_dir in SYSTEM_DIRS:
        if os.path.islink(system_dir):  # merged /usr: /bin -> usr/bin
            argv += ["--symlink", os.readlink(system_dir), system_dir]
        elif os.path.isdir(system_dir):
            argv += ["--ro-bind", system_dir, system_dir]
    argv += _etc_mounts(ETC_FILES + ETC_NETWORK_FILES if network else ETC_FILES)
    argv += ["--ro-bind", str(accounts / "passwd"), "/etc/passwd", "--ro-bind", str(accounts / "group"), "/etc/group"]
    if network == "host":
        argv += _etc_mounts(("resolv.conf",))
    elif network:
        argv += ["--ro-bind", str(accounts / "resolv.conf"), "/etc/resolv.conf"]
    # The sandbox's own /tmp and /home: fresh, empty tmpfs mounts nobody else sees.
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/home", "--dir", SANDBOX_HOME]  # noqa: S108
    for extra in readonly:
        argv += ["--ro-bind-try", extra, extra]
    # After the read-only mounts, so a data directory below one of them is covered; before `on_top`
    # (the workspace lives inside the data directory and is mounted back on top).
    for secret in hidden:
        argv += ["--tmpfs", str(Path(secret).resolve())]
    for shown, writable in on_top:
        argv += ["--bind" if writable else "--ro-bind", str(shown), str(shown)]
    return [*argv, "--chdir", str(chdir)]
