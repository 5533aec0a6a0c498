"""The dashboard's Connections view on the real daemon, in the distribution's headless Chromium: a person
connects through a real authorization server on loopback (`!connect` in a direct message, their browser
approving), the view lists them under the provider with its state, and its Disconnect button, once confirmed,
revokes their tokens at the server and forgets them. A provider name or person id written as HTML is text."""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import Iterator

import httpx
import pytest

from mindroom.api.app import create_app
from mindroom.api.app_context import ApiContext
from mindroom.api.server import ApiServer
from mindroom.api.settings import api_settings
from mindroom.daemon.wiring import DaemonApiView
from mindroom.oauth.service import connections_for
from mindroom.oauth.vault import OAuthTokens
from tests.api.test_dashboard import CHROMIUM, FLAGS
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, thread_replies
from tests.integration.test_oauth_connections import public_at_free_port
from tests.oauth.auth_server import LoopbackAuthServer, loopback_auth_server
from tests.oauth.support import CLIENT_ID, CLIENT_SECRET, approve

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

playwright_api = pytest.importorskip("playwright.async_api")
needs_chromium = pytest.mark.skipif(not shutil.which(CHROMIUM), reason="the distribution's chromium is not installed")

KEY = "connections-dashboard-key"
DISPLAY = 'Acme <img src=x onerror="window.pwned=1">'
MARKUP_PERSON = "@<svg onload=window.pwned=2>:evil.example"
_LINK = re.compile(r"https?://\S+/api/oauth/acme/authorize\?link=[\w-]+")


@pytest.fixture
def server() -> Iterator[LoopbackAuthServer]:
    with loopback_auth_server() as running:
        yield running


async def _connect(human: HumanClient, agent_id: str, user: str) -> None:
    """`!connect acme` in a direct message, then the person's browser opens the link and approves as `user`."""
    dm = await human.create_room([agent_id], direct=True)
    await human.wait_for_member(dm, agent_id)
    asked = await human.send(dm, "!connect acme", mentions=[agent_id])
    answer = await human.wait_for(thread_replies(asked))
    [link] = _LINK.findall(str(answer.get("content", {}).get("body", "")))
    async with httpx.AsyncClient(follow_redirects=False) as browser:
        opened = await browser.get(link)
        callback, _, _ = await approve(opened.headers["location"], user)
        assert (await browser.get(callback)).status_code == 200


async def _listed(page, person: str, present: bool = True) -> None:
    """Until the Connections view lists (or no longer lists) `person` under acme."""
    await page.wait_for_function(
        "([who, present]) => [...document.querySelectorAll('#connections table[data-provider=acme] tbody tr')]"
        ".some(row => row.dataset.person === who) === present",
        arg=[person, present],
        timeout=30_000,
    )


@needs_chromium
async def test_dashboard_connections_view_lists_a_connected_person_and_disconnects_them(
    e2e: E2E, server: LoopbackAuthServer
):
    port, base = public_at_free_port(e2e)
    server.add_client(CLIENT_ID, CLIENT_SECRET, f"{base}/api/oauth/acme/callback")
    alice = await e2e.human(encrypted=True)
    agent = e2e.name("helper")
    provider = {
        "display_name": DISPLAY,
        "authorization_url": server.authorization_url,
        "token_url": server.token_url,
        "revocation_url": server.revocation_url,
        "scopes": ["profile", "read"],
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
    }
    agents = {agent: {"display_name": "Helper", "model": "default", "rooms": [e2e.name("room")]}}
    daemon = await e2e.start(e2e.basic_config([alice.user_id], agents, oauth_providers={"acme": provider}))
    ctx = ApiContext(DaemonApiView(daemon), api_settings({"MINDROOM_API_KEY": KEY}, port=port))
    running = ctx.daemon.running
    assert running is not None
    connections = connections_for(running.paths.storage_root)
    assert connections is not None

    async with ApiServer(ctx, create_app(ctx)) as api, playwright_api.async_playwright() as playwright:
        await _connect(alice, e2e.user_id(agent), "alice-at-acme")
        kept = await asyncio.to_thread(connections.vault.load, alice.user_id, "acme")
        assert kept is not None and kept.refresh_token
        markup_tokens = OAuthTokens("markup-person-access", server.token_url, None, None, "profile")
        await asyncio.to_thread(connections.vault.save, MARKUP_PERSON, "acme", markup_tokens)
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 1600})
            await page.goto(f"{api.url}/#key={KEY}")
            await _listed(page, alice.user_id)
            await _listed(page, MARKUP_PERSON)
            heading = await page.inner_text("#connections h3[data-provider=acme]")
            about = await page.inner_text("#connections h3[data-provider=acme] + p")
            row = page.locator("#connections tbody tr").filter(has_text=alice.user_id)
            cells = await row.locator("td").all_inner_texts()
            people = await page.eval_on_selector_all("#connections tbody tr", "rows => rows.map(r => r.dataset.person)")
            markup = await page.eval_on_selector_all("#connections img, #connections svg", "nodes => nodes.length")

            await row.locator("button", has_text="Disconnect").click()
            question = await row.locator("td").last.inner_text()
            await row.locator("button", has_text="Cancel").click()  # the first thought: nothing happens
            still = await asyncio.to_thread(connections.vault.load, alice.user_id, "acme")
            await row.locator("button", has_text="Disconnect").click()
            await row.locator("button", has_text="Yes, disconnect").click()
            await _listed(page, alice.user_id, present=False)
            said = await page.inner_text("#notice")
            remaining = await page.eval_on_selector_all(
                "#connections tbody tr", "rows => rows.map(r => r.dataset.person)"
            )
            pwned = await page.evaluate("() => window.pwned === undefined ? null : window.pwned")
        finally:
            await browser.close()

    async with httpx.AsyncClient() as client:
        refreshed = await client.post(
            server.token_url,
            data={"grant_type": "refresh_token", "refresh_token": kept.refresh_token, "client_id": CLIENT_ID}
            | {"client_secret": CLIENT_SECRET},
        )

    assert heading.startswith(DISPLAY) and heading.endswith("(acme)ready")
    assert "Scopes asked for: profile read." in about and "revokes the tokens" in about
    assert cells[0] == alice.user_id and cells[1] == "profile read" and cells[2] == "connected"
    assert "refreshed when used" in cells[4]
    assert sorted(people) == sorted([alice.user_id, MARKUP_PERSON])
    assert markup == 0 and pwned is None
    assert question.startswith(f"Revoke and forget {alice.user_id}'s {DISPLAY} connection?")
    assert still is not None  # Cancel kept the connection
    assert said == f"Disconnected {alice.user_id} from {DISPLAY} and revoked the tokens at the provider."
    assert remaining == [MARKUP_PERSON]
    assert server.live_tokens("alice-at-acme") == []
    assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant"
    assert await asyncio.to_thread(connections.vault.load, alice.user_id, "acme") is None
