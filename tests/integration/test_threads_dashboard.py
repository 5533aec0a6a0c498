"""The dashboard's Threads view on the real homeserver, in the distribution's headless Chromium: each room's
threads with summary, tags, open or resolved and last activity, filtered by tag and resolution, exported from
a button; a summary or tag note written as HTML is shown as text and never runs."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest

from mindroom.api.app import create_app
from mindroom.api.app_context import ApiContext
from mindroom.api.server import ApiServer
from mindroom.api.settings import api_settings
from mindroom.daemon.wiring import DaemonApiView
from mindroom.testing.model_server import Text
from tests.api.test_dashboard import CHROMIUM, FLAGS
from tests.integration.conftest import E2E
from tests.integration.support import thread_replies
from tests.integration.test_threads import command, summary_config

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

playwright_api = pytest.importorskip("playwright.async_api")
needs_chromium = pytest.mark.skipif(not shutil.which(CHROMIUM), reason="the distribution's chromium is not installed")

KEY = "threads-dashboard-key"
NOTE = '<img src=x onerror="window.pwned=1">'
SUMMARY = "Red build &lt;i&gt;on CI&lt;/i&gt; <svg onload=window.pwned=2 "


async def shown(page, expected: list[str]) -> None:
    """Until the Threads view lists exactly the threads `expected` (any order)."""
    await page.wait_for_function(
        "want => { const rows = [...document.querySelectorAll('#threads tbody tr')].map(r => r.dataset.thread);"
        " return rows.length === want.length && want.every(id => rows.includes(id))"
        " && !document.getElementById('threads-status').textContent.startsWith('Reading'); }",
        arg=expected,
        timeout=30_000,
    )


@needs_chromium
async def test_dashboard_threads_view_lists_filters_and_exports_threads_and_shows_markup_as_text(e2e: E2E):
    alice = await e2e.human("alice")
    agent, room = e2e.name("helper"), e2e.name("room")
    config = summary_config(e2e, [alice.user_id], agent, room)
    config["defaults"]["thread_summary_first_threshold"] = 50  # only !summary writes one
    config["room_defaults"]["admins"] = [alice.user_id]
    daemon = await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    agent_id = e2e.user_id(agent)
    e2e.model_server.set_default(Text("Looking into it."), model="agent-model")
    e2e.model_server.script(Text(SUMMARY), model="summary-model")

    red = await alice.send(room_id, "the build is red", mentions=[agent_id])
    await alice.wait_for(thread_replies(red, agent_id))
    await command(e2e, alice, room_id, f"!tag bug {NOTE}", red)
    await command(e2e, alice, room_id, "!summary", red)
    friday = await alice.send(room_id, "deploy on friday?", mentions=[agent_id])
    await alice.wait_for(thread_replies(friday, agent_id))
    await command(e2e, alice, room_id, "!tag blocked", friday)
    await command(e2e, alice, room_id, "!resolve", friday)
    ctx = ApiContext(DaemonApiView(daemon), api_settings({"MINDROOM_API_KEY": KEY}, port=0))

    async with ApiServer(ctx, create_app(ctx)) as server, playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 1600})
            await page.goto(f"{server.url}/#key={KEY}")
            await shown(page, [red, friday])
            red_row = page.locator(f'#threads tbody tr[data-thread="{red}"]')
            friday_row = page.locator(f'#threads tbody tr[data-thread="{friday}"]')
            red_cells = await red_row.locator("td").all_inner_texts()
            friday_cells = await friday_row.locator("td").all_inner_texts()
            heading = await page.inner_text(f'#threads h3[data-room="{room_id}"]')
            markup = await page.eval_on_selector_all("#threads img, #threads svg, #threads i", "nodes => nodes.length")

            await page.fill("#threads-tag", "bugs")  # one letter off the tag: nothing
            await page.click("#threads-filter button[type=submit]")
            await shown(page, [])
            none = await page.inner_text("#threads-status")
            await page.fill("#threads-tag", "bug")
            await page.click("#threads-filter button[type=submit]")
            await shown(page, [red])
            await page.fill("#threads-tag", "")
            await page.select_option("#threads-resolved", "true")
            await shown(page, [friday])
            await page.select_option("#threads-resolved", "false")
            await shown(page, [red])

            await page.locator(f'#threads tbody tr[data-thread="{red}"] button', has_text="Export").click()
            await page.wait_for_function(
                "() => document.getElementById('notice').textContent.startsWith('Exported')", timeout=30_000
            )
            exported = await page.inner_text("#notice")
            pwned = await page.evaluate("() => window.pwned === undefined ? null : window.pwned")
        finally:
            await browser.close()

    assert heading == room  # the room as the bots list it
    assert red_cells[0] == red and friday_cells[0] == friday
    assert red_cells[1] == SUMMARY.strip()  # the entities and the tag are text, as the summary holds them
    assert red_cells[2] == f"bug: {NOTE}"
    assert red_cells[3] == "open" and friday_cells[3] == "resolved"
    assert friday_cells[1] == "no summary yet" and friday_cells[2] == "blocked"
    assert "unknown" not in (red_cells[4], friday_cells[4])
    assert markup == 0 and pwned is None
    assert none == "No thread matches."
    markdown, data = (Path(path) for path in exported.split(": ", 1)[1].split())
    for path in (markdown, data):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert path.is_relative_to(e2e.storage / "thread_exports")
    assert "the build is red" in markdown.read_text()
    assert json.loads(data.read_text())["tags"]["bug"]["note"] == NOTE
