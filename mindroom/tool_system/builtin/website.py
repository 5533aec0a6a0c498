"""The built-in `website` tool (MindRoom's name): `read_url` fetches one web page and returns its text.

A page is reached as a remote MCP server is (`mindroom.tool_system.mcp.address`): the URL must be http(s),
its host is resolved once and every address checked, and the connection goes to those addresses only
(`mcp.http_client`), so a name that answers differently later is never followed. Cloud metadata,
link-local, multicast and unspecified addresses are never reached. Private and loopback addresses (and
hosts named `localhost`, `*.localhost`, `*.local`) are reached only for hosts the operator lists in the
agent's tool entry, `- website: {allow_private_hosts: [wiki.lan]}` (exact host names or addresses, as the
URL writes them). Every redirect is checked the same way before it is followed (at most
`MAX_REDIRECTS`). The body is read uncompressed, up to `MAX_PAGE_BYTES`; a compressed or larger page, or one
that is not text, is refused. Unlike MindRoom's, it reads the one page asked for (it does not crawl the
site). The connection needs the `mcp` extra's HTTP client (`httpx2`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urljoin, urlsplit

from mindroom.tool_system.builtin.page_text import page_text
from mindroom.tool_system.builtin.parts import tool_caller
from mindroom.tool_system.mcp.address import check_remote_url
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = [
    "CHUNK_CHARS",
    "FETCH_TIMEOUT_S",
    "MAX_PAGE_BYTES",
    "MAX_REDIRECTS",
    "MAX_TEXT_CHARS",
    "WEBSITE_SETTINGS",
    "allowed_private_hosts",
    "fetch_page",
    "read_url",
    "website_settings_problems",
    "website_tools",
]

WEBSITE_SETTINGS = {"allow_private_hosts": "string[]"}
"""The settings an agent's `website` entry takes (the operator's, in config.yaml; chat cannot set tools)."""
MAX_PAGE_BYTES = 2 * 1024 * 1024
MAX_REDIRECTS = 10
MAX_TEXT_CHARS = 50_000
CHUNK_CHARS = 5000
FETCH_TIMEOUT_S = 10.0
_COMPRESSED = frozenset({"gzip", "x-gzip", "deflate", "br", "zstd", "compress"})
_TEXT_TYPES = ("text/", "application/xhtml+xml", "application/xml", "application/json")


def _host(url: str) -> str:
    return (urlsplit(url).hostname or "").rstrip(".").lower()


def website_settings_problems(overrides: Mapping[str, Any]) -> list[str]:
    """What is wrong with a `website` entry's settings (empty when nothing is)."""
    problems = [
        f"setting {key!r} is not a setting of this tool (allowed: {', '.join(WEBSITE_SETTINGS)})"
        for key in overrides
        if key not in WEBSITE_SETTINGS
    ]
    hosts = overrides.get("allow_private_hosts", [])
    if not isinstance(hosts, list) or not all(isinstance(host, str) and host.strip() for host in hosts):
        problems.append("setting 'allow_private_hosts' must be a list of host names or addresses")
    return problems


def allowed_private_hosts(config: Any, agent_name: str) -> frozenset[str]:
    """The hosts the operator lets this agent's `website` tool reach on private addresses."""
    agent = config.agents.get(agent_name) if config is not None else None
    entry = next((e for e in agent.tool_entries() if e.name == "website"), None) if agent is not None else None
    overrides = entry.overrides if entry is not None else {}
    problems = website_settings_problems(overrides)
    if problems:
        raise ToolError(f"agents.{agent_name}.tools: 'website': {'; '.join(problems)}")
    return frozenset(host.strip().rstrip(".").lower().strip("[]") for host in overrides.get("allow_private_hosts", []))


async def _read_body(response: Any) -> bytes:
    codings = {value.strip().lower() for value in response.headers.get("content-encoding", "").split(",")}
    if codings & _COMPRESSED:
        raise ToolError("the page is sent compressed; only uncompressed pages are read")
    body = bytearray()
    async for chunk in response.aiter_raw():
        body.extend(chunk)
        if len(body) > MAX_PAGE_BYTES:
            raise ToolError(f"the page is larger than {MAX_PAGE_BYTES} bytes")
    return bytes(body)


async def fetch_page(url: str, allowed_hosts: frozenset[str]) -> tuple[str, str, bytes, str]:
    """The page at `url` after its checked redirects: (final URL, content type, body, charset)."""
    try:
        import httpx2

        from mindroom.tool_system.mcp.http_client import pinned_http_client
    except ImportError:
        raise ToolError("reading web pages needs the mcp extra's HTTP client (httpx2); it is not installed") from None
    current = url.strip()
    for _hop in range(MAX_REDIRECTS + 1):
        try:
            checked = await check_remote_url(current, allow_private_network=_host(current) in allowed_hosts)
        except ToolError as refusal:  # MCP's setting is not this tool's: name the one the operator would set
            why = str(refusal).replace("allow_private_network is off", "not in the agent's website allow_private_hosts")
            raise ToolError(why) from None
        headers = {"Accept-Encoding": "identity", "User-Agent": "mindroom-website-tool"}
        async with (
            pinned_http_client(checked, headers=headers, timeout=httpx2.Timeout(FETCH_TIMEOUT_S)) as client,
            client.stream("GET", current) as response,
        ):
            if response.is_redirect:
                location = response.headers.get("location")
                if not location:
                    raise ToolError(f"{checked.host} redirected without saying where")
                current = urljoin(current, location)
                continue
            if response.status_code >= 400:
                raise ToolError(f"{checked.host} answered HTTP {response.status_code}")
            content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
            if content_type and not content_type.startswith(_TEXT_TYPES):
                raise ToolError(f"the page is {content_type}, not text")
            return current, content_type, await _read_body(response), response.charset_encoding or "utf-8"
    raise ToolError(f"more than {MAX_REDIRECTS} redirects")


def _decode(body: bytes, charset: str) -> str:
    try:
        return body.decode(charset, errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


async def read_url(url: str) -> str:
    """Read a web page and return its text (title and main content) as documents.

    Args:
        url: The page's http(s) URL.
    """
    caller = tool_caller(room_needed=False)
    allowed = allowed_private_hosts(caller.config, caller.agent_name)
    try:
        final, content_type, body, charset = await fetch_page(url, allowed)
    except ToolError:
        raise
    except Exception as exc:  # the network: connection refused, timeouts, bad TLS, a broken reply
        raise ToolError(f"could not read {url}: {type(exc).__name__}") from None
    raw = _decode(body, charset)
    if content_type in ("", "text/html", "application/xhtml+xml"):
        page = page_text(raw)
        title, text = page.title, page.text
    else:
        title, text = "", raw.strip()
    if not text:
        raise ToolError(f"no text found at {final}")
    if len(text) > MAX_TEXT_CHARS:
        text = text[:MAX_TEXT_CHARS] + f"\n[the page's text goes on past {MAX_TEXT_CHARS} characters]"
    documents = [
        {"name": url, "id": final, "meta_data": {"url": final, "title": title, "chunk": index}, "content": chunk}
        for index, chunk in enumerate(text[start : start + CHUNK_CHARS] for start in range(0, len(text), CHUNK_CHARS))
    ]
    return json.dumps(documents, ensure_ascii=False)


def website_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `website` group: `read_url(url)`."""
    return (ToolSpec(name="read_url", function=read_url, timeout_s=FETCH_TIMEOUT_S * (MAX_REDIRECTS + 2)),)
