"""Where a remote MCP server may be reached: its URL's host, resolved once, and every address checked.

An address is never reached when it is a cloud metadata address, link-local, multicast or unspecified,
whatever the config says. A private or loopback address (and any address of a host named `localhost`,
`*.localhost` or `*.local`) is reached only with the server's `allow_private_network`.

An IPv6 address that carries an IPv4 address is judged by that IPv4 address: IPv4-mapped (`::ffff:a.b.c.d`),
IPv4-compatible (`::a.b.c.d`), NAT64 with the well-known prefix (`64:ff9b::/96`) and 6to4 (`2002::/16`).
The local-use NAT64 prefix (`64:ff9b:1::/48`) leads to a translator on the operator's own network: an
address in it is private, and the IPv4 address in its last 32 bits is judged too.

`check_remote_url` returns the addresses it checked; the server's HTTP client connects to those only
(`http_client`), so a name that answers differently the next time it is resolved is never followed.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlparse

from mindroom.tool_system.spec import ToolError

__all__ = ["CheckedHost", "address_refusal", "check_remote_url", "resolve_host"]

_IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_METADATA_HOSTS = frozenset(
    ipaddress.ip_address(text) for text in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200")
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_LOW_32_BITS = 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class CheckedHost:
    """A remote server's host as its URL names it, and the addresses it resolved to when it was checked."""

    host: str
    addresses: tuple[str, ...]


async def resolve_host(host: str, port: int) -> tuple[str, ...]:
    """The addresses `host` resolves to now (each once, in the resolver's order, without a zone id)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return tuple(dict.fromkeys(str(info[4][0]).split("%")[0] for info in infos))


def _embedded_ipv4(address: _IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, NAT64 or 6to4), else None."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64 or address in _LOCAL_NAT64:
        return ipaddress.IPv4Address(int(address) & _LOW_32_BITS)
    if address in _IPV4_COMPATIBLE and int(address) > 1:  # `::` and `::1` are themselves
        return ipaddress.IPv4Address(int(address))
    return None


def address_refusal(
    address: _IPAddress, allow_private_network: bool, named_local: bool = False, switch: str = "allow_private_network"
) -> str | None:
    """Why `address` may not be reached (a phrase to follow "resolves to"), or None when it may.

    `switch` names the setting that would allow a private address, for the message.
    """
    embedded = _embedded_ipv4(address)
    judged = embedded or address
    shown = f"{address} (which carries {embedded})" if embedded is not None else str(address)
    if address in _METADATA_HOSTS or judged in _METADATA_HOSTS:
        return f"{shown}, which is never reached"
    if judged.is_link_local or judged.is_multicast or judged.is_unspecified:
        return f"{shown}, which is never reached"
    private = judged.is_private or judged.is_loopback or named_local or address in _LOCAL_NAT64
    if private and not allow_private_network:
        return f"the private address {shown} ({switch} is off)"
    return None


async def check_remote_url(url: str, allow_private_network: bool, switch: str = "allow_private_network") -> CheckedHost:
    """The URL's host and its addresses; `ToolError` unless `url` is http(s) and every address may be reached."""
    parsed = urlparse(url)
    host = parsed.hostname or ""
    try:
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
    except ValueError:
        port = 0
    if parsed.scheme not in ("http", "https") or not host or not port:
        raise ToolError(f"{url!r} is not an http(s) URL")
    named_local = host == "localhost" or host.endswith((".local", ".localhost"))
    try:
        addresses = await resolve_host(host, port)
    except OSError as exc:
        raise ToolError(f"cannot resolve {host}: {exc.strerror or exc}") from None
    if not addresses:
        raise ToolError(f"cannot resolve {host}: no address")
    for text in addresses:
        refusal = address_refusal(ipaddress.ip_address(text), allow_private_network, named_local, switch)
        if refusal is not None:
            raise ToolError(f"{host} resolves to {refusal}")
    return CheckedHost(host, addresses)
