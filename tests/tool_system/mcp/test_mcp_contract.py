"""What the pinned MCP client (`mindroom/tool_system/mcp/http_client.py`) leans on in the MCP SDK, pinned.

The client is the SDK's own (`create_mcp_http_client`) with its connections pinned, so it takes the SDK's
default timeouts from the SDK's private module `mcp.shared._httpx_utils`. Here the pinned client must be
configured as the SDK's own is, whatever it is given. `pyproject.toml` bounds the SDK to the releases this
file passed with, and `.ci/run` runs it against the newest SDK too.
"""

from __future__ import annotations

import httpx2
import pytest
from mcp.shared import _httpx_utils

from mindroom.tool_system.mcp.address import CheckedHost
from mindroom.tool_system.mcp.http_client import pinned_http_client

pytestmark = pytest.mark.asyncio

CHECKED = CheckedHost("mcp.example.org", ("203.0.113.7",))


def _settings(client: httpx2.AsyncClient) -> tuple[object, ...]:
    return (
        client.timeout,
        {k: v for k, v in client.headers.items() if k != "user-agent"},
        client.follow_redirects,
        client.max_redirects,
        type(client.auth).__name__,
        client.trust_env,
    )


async def test_contract_the_sdks_private_module_has_the_default_timeouts_its_client_uses():
    assert isinstance(_httpx_utils.MCP_DEFAULT_TIMEOUT, float)
    assert isinstance(_httpx_utils.MCP_DEFAULT_SSE_READ_TIMEOUT, float)
    async with _httpx_utils.create_mcp_http_client() as client:
        timeout = client.timeout
    assert timeout == httpx2.Timeout(_httpx_utils.MCP_DEFAULT_TIMEOUT, read=_httpx_utils.MCP_DEFAULT_SSE_READ_TIMEOUT)


@pytest.mark.parametrize(
    "given",
    [
        {},
        {"headers": {"Authorization": "Bearer t", "X-Tenant": "a"}},
        {"timeout": httpx2.Timeout(5.0, read=60.0)},
        {"auth": httpx2.BasicAuth("ann", "pw"), "headers": {"X-Tenant": "a"}},
    ],
    ids=["defaults", "headers", "timeout", "auth"],
)
async def test_contract_the_pinned_client_is_configured_as_the_sdks_own(given: dict[str, object]):
    sdks = _httpx_utils.create_mcp_http_client(**given)  # type: ignore[arg-type]
    ours = pinned_http_client(CHECKED, **given)  # type: ignore[arg-type]
    try:
        assert _settings(ours) == _settings(sdks)
    finally:
        await sdks.aclose()
        await ours.aclose()
