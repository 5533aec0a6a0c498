"""The dashboard in a real headless Chromium (the distribution's, driven by Playwright; no browser download):
it loads, shows the configured agents, a hook's counter rising after a message, approves a pending approval,
shows a config error at its line, the config in force with each value's source, and each tool an agent runs
without, with the fix. It also writes the
README's screenshot (`docs/dashboard.png`)."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import os
import shutil
import time
from pathlib import Path

import pytest

from mindroom.ai.tools import foreign_tool_specs
from mindroom.bots.approvals.desk import ApprovalSeat
from mindroom.config.loading import load_config
from mindroom.config.overrides import Override
from mindroom.constants import RuntimePaths
from mindroom.hooks import EVENT_MESSAGE_ENRICH, ApprovalRequest, hook
from mindroom.state.usage import UsageQuery, day_of
from mindroom.testing.model_server import Text
from mindroom.tool_system.catalog import build_tool_catalog
from tests.api.test_rest import with_chat_changes
from tests.bots.bench import ALICE, LOBBY, registry_of, until

pytestmark = pytest.mark.asyncio

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
KEY = "dashboard-key-abcdef"
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "dashboard.png"

playwright_api = pytest.importorskip("playwright.async_api")
needs_chromium = pytest.mark.skipif(not shutil.which(CHROMIUM), reason="the distribution's chromium is not installed")


@hook(EVENT_MESSAGE_ENRICH, name="weather")
async def weather(ctx):
    return None


def _request(correlation_id: str) -> ApprovalRequest:
    return ApprovalRequest(
        prompt="it runs a shell command",
        timeout_s=120,
        tool_name="run_shell_command",
        arguments={"command": "make deploy"},
        agent_name="helper",
        room_id=LOBBY,
        thread_id=None,
        requester_id=ALICE,
        correlation_id=correlation_id,
        plugin_name="guard",
        hook_name="ask_first",
    )


@needs_chromium
async def test_dashboard_in_chromium_shows_agents_hooks_approvals_and_config_errors(make_api, model_server):
    model_server.set_default(Text("It is sunny."))
    agents = {
        "helper": {"display_name": "Helper", "role": "Answers questions", "rooms": ["lobby"]},
        "writer": {"display_name": "Writer", "role": "Writes", "rooms": ["lobby"]},
    }
    api = await make_api(agents, env={"MINDROOM_API_KEY": KEY}, registry=registry_of(weather))
    bench = api.bench
    desk = bench.desk
    seat = ApprovalSeat("helper", "Helper", bench.client("helper"), LOBBY, None, None, "turn-dash")
    waiting = asyncio.create_task(desk.request(seat, _request("turn-dash")))
    await until(lambda: desk.store.overdue(now=math.inf))

    async with playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 1600})
            await page.goto(f"{api.url}/#key={KEY}")  # the banner's link signs the browser in
            await page.wait_for_selector("#bots tbody tr")
            assert "#key" not in page.url  # the key leaves the address bar at once

            bots = await page.inner_text("#bots")
            assert "Helper (helper)" in bots and "Writer (writer)" in bots and "synced" in bots
            row = page.locator("#hooks tbody tr", has_text="weather")
            assert (await row.locator("td").nth(2).inner_text()).strip() == "0"
            # Drops are a background observer's: a hook the pipeline awaits has none to show.
            assert "dropped" in (await page.inner_text("#hooks thead")).lower()
            assert (await row.locator("td").nth(4).inner_text()).strip() == "—"

            await bench.deliver(bench.server.message(LOBBY, ALICE, "@helper how is the weather?"))
            await bench.settle()
            await page.wait_for_function(
                "() => [...document.querySelectorAll('#hooks tbody tr')]"
                ".some(r => r.textContent.includes('weather') && r.children[2].textContent.trim() !== '0')",
                timeout=10_000,
            )
            await page.wait_for_function(
                "() => document.querySelector('#turns tbody').textContent.includes('answered')", timeout=10_000
            )
            turns = await page.inner_text("#turns")
            assert "helper" in turns and "answered" in turns and "bench:weather" in turns

            approvals = page.locator("#approvals tbody tr")
            assert "run_shell_command" in await approvals.first.inner_text()
            await approvals.first.locator("button", has_text="Approve").click()
            assert await asyncio.wait_for(waiting, 10) is True  # the waiting tool call goes ahead
            await page.wait_for_selector("#approvals-empty", state="visible")
            record = desk.store.overdue(now=math.inf)
            assert record == []

            await page.wait_for_function("() => document.querySelector('#config').value.includes('helper')")
            config = await page.input_value("#config")
            broken = config.replace("display_name: Writer", "display_name: Writer\n    favourite_colour: blue")
            line = next(i for i, text in enumerate(broken.splitlines(), start=1) if "favourite_colour" in text)
            await page.fill("#config", broken)
            await page.click("#save")
            await page.wait_for_selector("#config-errors li")
            errors = await page.inner_text("#config-errors")
            assert f"line {line}:" in errors and "favourite_colour" in errors
            marked = await page.inner_text("#gutter .error-line")
            assert marked.strip() == str(line)
            assert "favourite_colour" not in api.view.config_path.read_text()  # nothing invalid is written

            if os.environ.get("MINDROOM_WRITE_SCREENSHOT") == "1":
                await page.screenshot(path=str(SCREENSHOT), full_page=True)
        finally:
            await browser.close()


@needs_chromium
async def test_dashboard_in_chromium_shows_the_config_in_force_and_where_each_value_comes_from(make_api):
    secret = {"provider": "openai", "id": "x", "api_key": "sk-operator-secret-0123456789"}
    api = await make_api(
        {"helper": {"display_name": "Helper", "role": "Helps"}}, env={"MINDROOM_API_KEY": KEY}, models={"paid": secret}
    )
    with_chat_changes(
        api,
        Override("config", "defaults.markdown", False, ALICE, 1_700_000_000.0),
        Override("room", "thread_mode", "room", ALICE, 1_700_000_100.0, room_id=LOBBY),
    )

    async with playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 1600})
            await page.goto(f"{api.url}/#key={KEY}")
            await page.wait_for_selector("#effective tbody tr")

            chat = page.locator('#effective tbody tr[data-path="defaults.markdown"]')
            assert await chat.get_attribute("data-source") == "chat"
            assert ALICE in await chat.inner_text() and "false" in await chat.inner_text()
            role = page.locator('#effective tbody tr[data-path="agents.helper.role"]')
            assert await role.get_attribute("data-source") == "config.yaml"
            assert await page.locator('#effective tbody tr[data-source="default"]').count() == 0  # hidden at first
            assert "thread_mode" in await page.inner_text("#effective-chat")
            assert "0123456789" not in await page.inner_text("#effective")

            await page.check("#effective-defaults")
            await page.fill("#effective-filter", "agents.helper.")
            await page.wait_for_selector('#effective tbody tr[data-source="default"]')
            paths = await page.eval_on_selector_all("#effective tbody tr", "rows => rows.map(r => r.dataset.path)")
            assert paths and all(path.startswith("agents.helper.") for path in paths)
            assert "agents.helper.num_history_runs" in paths
        finally:
            await browser.close()


@needs_chromium
async def test_dashboard_in_chromium_names_each_tool_an_agent_runs_without_and_the_fix(make_api, tmp_path: Path):
    api = await make_api(
        {
            "helper": {"display_name": "Helper", "tools": ["tavily", "calculator"]},
            "writer": {"display_name": "Writer", "tools": ["calculator"]},
        },
        env={"MINDROOM_API_KEY": KEY},
    )
    live = api.bench.daemon.live
    paths = RuntimePaths(api.view.config_path, tmp_path / "data", {})
    catalog = build_tool_catalog(live.config, [], adapt=foreign_tool_specs, runtime_paths=paths)
    api.bench.daemon.cell.swap(dataclasses.replace(live, tools=catalog))
    fix = f"mindroom tools install tavily (or: pip install -e '{ROOT}[tools-search]')"

    agents = {agent["name"]: agent for agent in (await api.client(KEY).get("/api/agents")).json()}
    assert agents["helper"]["unavailable_tools"] == [
        {"tool": "tavily", "reason": "missing package tavily-python", "fix": fix}
    ]
    assert agents["writer"]["unavailable_tools"] == []

    async with playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 1600})
            await page.goto(f"{api.url}/#key={KEY}")
            await page.wait_for_selector("#tool-problems p")
            lines = await page.eval_on_selector_all("#tool-problems p", "ps => ps.map(p => p.textContent)")
            assert lines == [f"helper runs without tavily: missing package tavily-python — fix: {fix}"]
        finally:
            await browser.close()


@needs_chromium
async def test_dashboard_in_chromium_names_each_key_accepted_and_not_used_here(make_api):
    api = await make_api({"helper": {"display_name": "Helper", "role": "Helps"}}, env={"MINDROOM_API_KEY": KEY})
    path = api.view.config_path
    path.write_text(path.read_text().replace("role: Helps", "role: Helps\n    cheap_model: default"))
    live = api.bench.daemon.live  # the running config as the daemon reads the file, notices and all
    api.bench.daemon.cell.swap(dataclasses.replace(live, config=load_config(path, {"MINDROOM_API_KEY": KEY})))

    async with playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 1600})
            await page.goto(f"{api.url}/#key={KEY}")
            await page.wait_for_selector("#effective-chat li.warn")
            chat = await page.inner_text("#effective-chat")
            assert "Accepted, not used here" in chat and "agents.helper.cheap_model (line " in chat

            await page.wait_for_function("document.getElementById('config').value.includes('cheap_model')")
            await page.click("#validate")
            await page.wait_for_selector("#config-errors li.warn")
            assert "1 key(s) accepted and not used here" in await page.inner_text("#config-state")
            assert "agents.helper.cheap_model" in await page.inner_text("#config-errors")
        finally:
            await browser.close()


@needs_chromium
async def test_dashboard_in_chromium_shows_usage_by_day_and_by_person_and_agent(make_api, model_server):
    model_server.set_default(Text("three words here"))
    agents = {"helper": {"display_name": "Helper", "rooms": ["lobby"]}}
    api = await make_api(agents, env={"MINDROOM_API_KEY": KEY})
    bench = api.bench
    for text in ("first question", "second question"):
        await bench.deliver(bench.server.message(LOBBY, ALICE, text))
        await bench.settle()
    ledger = bench.daemon.stores.usage
    assert ledger is not None
    [alice] = await ledger.query(UsageQuery(requester=ALICE))

    async with playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 1600})
            await page.goto(f"{api.url}/#key={KEY}")
            await page.wait_for_selector("#usage tbody tr")
            cells = await page.eval_on_selector_all("#usage tbody tr td", "cells => cells.map(c => c.textContent)")
            bars = await page.eval_on_selector_all("#usage-chart .bar", "bars => bars.map(b => b.dataset.day)")
            total = await page.inner_text("#usage-total")
        finally:
            await browser.close()

    assert cells[:4] == [ALICE, "helper", "2", str(alice.input_tokens)]
    assert cells[5:7] == ["6", "0"]  # three words out per answer, no tool call
    assert bars == [day_of(time.time())]
    assert total.startswith(f"2 turns, {alice.input_tokens + 6} tokens, $0.0000 (2 turns on unpriced models)")
