"""The `website` tool: a page's text, read only from addresses the rules allow, however the URL or a redirect
names them; private hosts only as the operator lists them for the agent."""

from __future__ import annotations

import json

import pytest

from mindroom.config.main import Config
from mindroom.tool_system.builtin.website import MAX_PAGE_BYTES, read_url, website_settings_problems
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import ToolError
from tests.tool_system.builtin.pages import page_server

pytestmark = pytest.mark.asyncio


def turn(website: object = "website"):
    config = Config.model_validate({"agents": {"helper": {"display_name": "Helper", "tools": [website]}}})
    return bind_runtime_context(ToolRuntimeContext(None, "helper", "!room:hs", "$root", "@alice:hs", config=config))


def allowing(*hosts: str):
    return turn({"website": {"allow_private_hosts": list(hosts)}})


async def test_website_reads_a_page_on_a_host_the_operator_allows():
    with page_server() as base, allowing("127.0.0.1"):
        documents = json.loads(await read_url(f"{base}/page"))
        plain = json.loads(await read_url(f"{base}/plain"))
        redirected = json.loads(await read_url(f"{base}/to-page"))

    assert documents[0]["meta_data"]["title"] == "Tide tables"
    assert "14:32" in documents[0]["content"] and "Login" not in documents[0]["content"]
    assert "secret" not in documents[0]["content"] and "hidden text" not in documents[0]["content"]
    assert plain[0]["content"] == "just text"
    assert redirected[0]["id"] == f"{base}/page"


async def test_website_refuses_loopback_unless_the_host_is_listed():
    with page_server() as base:
        with turn(), pytest.raises(ToolError, match="allow_private_hosts"):
            await read_url(f"{base}/page")
        other = base.replace("127.0.0.1", "127.0.0.2")
        with allowing("127.0.0.1"), pytest.raises(ToolError, match="allow_private_hosts"):
            await read_url(f"{other}/page")  # another loopback address than the one listed
        with allowing("127.0.0.1."), pytest.raises(ToolError, match="allow_private_hosts"):
            await read_url(base.replace("127.0.0.1", "localhost") + "/page")  # the same machine, another name


@pytest.mark.parametrize(
    "url",
    [
        "http://192.168.1.5/",
        "http://10.0.0.7:8080/x",
        "http://[::ffff:10.0.0.7]/",
        "http://localhost/",
        "http://x.local/",
    ],
)
async def test_website_refuses_private_addresses(url: str):
    with turn(), pytest.raises(ToolError, match=r"allow_private_hosts|cannot resolve"):
        await read_url(url)


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest/meta-data", "http://[fd00:ec2::254]/"])
async def test_website_never_reaches_metadata_even_when_listed(url: str):
    host = url.split("/")[2].strip("[]")
    with allowing(host), pytest.raises(ToolError, match="never reached"):
        await read_url(url)


async def test_website_checks_every_redirect_before_following_it():
    with page_server() as base:
        with allowing("127.0.0.1"), pytest.raises(ToolError, match="localhost resolves to"):
            await read_url(f"{base}/to-localhost")
        with allowing("127.0.0.1", "169.254.169.254"), pytest.raises(ToolError, match="never reached"):
            await read_url(f"{base}/to-metadata")
        with allowing("127.0.0.1"), pytest.raises(ToolError, match="more than 10 redirects"):
            await read_url(f"{base}/loop")


async def test_website_refuses_what_is_not_a_readable_page():
    with page_server() as base, allowing("127.0.0.1"):
        with pytest.raises(ToolError, match=f"larger than {MAX_PAGE_BYTES}"):
            await read_url(f"{base}/big")
        with pytest.raises(ToolError, match="compressed"):
            await read_url(f"{base}/gzip")
        with pytest.raises(ToolError, match="image/png, not text"):
            await read_url(f"{base}/image")
        with pytest.raises(ToolError, match="HTTP 404"):
            await read_url(f"{base}/missing")
        with pytest.raises(ToolError, match="not an http"):
            await read_url("file:///etc/passwd")


async def test_website_names_a_bad_setting_of_the_agents_entry():
    with turn({"website": {"allow_private_host": ["127.0.0.1"]}}), pytest.raises(ToolError, match=r"agents\.helper"):
        await read_url("http://192.168.1.5/")

    assert website_settings_problems({"allow_private_hosts": "127.0.0.1"}) == [
        "setting 'allow_private_hosts' must be a list of host names or addresses"
    ]
