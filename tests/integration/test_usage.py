"""Usage and budgets on a real Synapse, the scripted model reporting each call's tokens: two people's turns are
counted apart (in Matrix and through `/v1`), `!usage` and `/api/usage` agree with the model server's requests,
a budget moves a person to the fallback model and, without one, refuses with the reset date, and the counts
survive a restart."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import psycopg
import pytest
from openai import AsyncOpenAI

from mindroom.api.app import create_app
from mindroom.api.app_context import ApiContext
from mindroom.api.server import ApiServer
from mindroom.api.settings import api_settings
from mindroom.daemon.metrics import MetricsCollector
from mindroom.daemon.orchestrator import Orchestrator
from mindroom.daemon.wiring import DaemonApiView
from mindroom.state.usage import UsageQuery, next_month_start
from mindroom.testing.memory_script import is_memory_request
from mindroom.testing.model_api import word_count
from mindroom.testing.model_api_anthropic import AnthropicMessagesApi
from mindroom.testing.model_api_openai import ChatCompletionsApi
from mindroom.testing.model_server import Text, ToolCall
from tests.daemon.test_metrics import _sample
from tests.integration.conftest import E2E
from tests.integration.support import HumanClient, thread_replies
from tests.integration.test_tools import last_tool_message, tool_names
from tests.state.postgres_server import postgres_server, postgres_url

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
__all__ = ["postgres_server", "postgres_url"]

KEY = "sk-usage-key"
DASHBOARD = "usage-dashboard-key"
PRICE = {"input": 1000.0, "output": 2000.0}
"""USD per million tokens: a few words cost a visible fraction of a cent."""


def _turns(e2e: E2E, model: str = "agent-model") -> list[dict[str, Any]]:
    return [r for r in e2e.model_server.requests if r.get("model") == model and not is_memory_request(r)]


def _read(request: dict[str, Any]) -> int:
    """The input tokens the scripted server reported for `request`."""
    return word_count(ChatCompletionsApi().texts(request))


def _cost(input_tokens: int, output_tokens: int) -> float:
    return (input_tokens * PRICE["input"] + output_tokens * PRICE["output"]) / 1e6


async def _ask(e2e: E2E, human: HumanClient, room_id: str, agent: str, text: str) -> dict[str, Any]:
    event_id = await human.send(room_id, text, mentions=[e2e.user_id(agent)])
    return await human.wait_for(thread_replies(event_id, e2e.user_id(agent)))


@contextlib.asynccontextmanager
async def _rest(daemon: Orchestrator) -> AsyncIterator[httpx.AsyncClient]:
    """The daemon's REST API on a free port, and a client holding the dashboard's key."""
    ctx = ApiContext(DaemonApiView(daemon), api_settings({"MINDROOM_API_KEY": DASHBOARD}, port=0))
    headers = {"Authorization": f"Bearer {DASHBOARD}"}
    async with (
        ApiServer(ctx, create_app(ctx)) as server,
        httpx.AsyncClient(base_url=server.url, headers=headers) as rest,
    ):
        yield rest


def _metrics(e2e: E2E) -> str:
    assert e2e.daemon is not None
    daemon = e2e.daemon
    return MetricsCollector(lambda: daemon.running).render()


def _warning(event: dict[str, Any]) -> bool:
    return "of your monthly budget" in str(event.get("content", {}).get("body", ""))


async def _command(e2e: E2E, human: HumanClient, room_id: str, text: str) -> str:
    event_id = await human.send(room_id, text)
    reply = await human.wait_for(thread_replies(event_id, e2e.user_id("router")))
    return str(reply["content"]["body"])


async def _cli(e2e: E2E, *args: str) -> subprocess.CompletedProcess[str]:
    """`mindroom usage` on this world's config and data, as an operator runs it beside the daemon."""
    return await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "mindroom", "usage", *args, "--config", str(e2e.config_dir / "config.yaml")],
        capture_output=True, text=True, timeout=120, cwd=e2e.config_dir,
        env={**os.environ, "MINDROOM_STORAGE_PATH": str(e2e.storage)},
    )  # fmt: skip


async def test_usage_two_people_are_counted_apart_and_usage_and_the_api_agree_with_the_model_server(e2e: E2E):
    alice, bob = await e2e.human("alice"), await e2e.human("bob")
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config(
        [alice.user_id, bob.user_id],
        {agent: {"display_name": "Helper", "rooms": [room]}},
        administrators=[bob.user_id],
    )
    config["models"]["default"]["pricing"] = PRICE
    daemon = await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    await e2e.joined(bob, room_id)
    settings = {"OPENAI_COMPAT_API_KEYS": KEY, "OPENAI_COMPAT_API_KEY_REQUESTERS": f'{{"{KEY}": "{bob.user_id}"}}'}
    ctx = ApiContext(DaemonApiView(daemon), api_settings({**settings, "MINDROOM_API_KEY": DASHBOARD}, port=0))

    e2e.model_server.script(Text("one two three"), Text("four five"), Text("six"), model="agent-model")
    await _ask(e2e, alice, room_id, agent, "alice asks a question")
    await _ask(e2e, bob, room_id, agent, "bob asks another one here")
    async with ApiServer(ctx, create_app(ctx)) as server:
        client = AsyncOpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)
        try:
            await client.chat.completions.create(model=agent, messages=[{"role": "user", "content": "bob via api"}])
        finally:
            await client.close()
        first, second, third = _turns(e2e)
        alice_in, bob_in = _read(first), _read(second) + _read(third)
        own = await _command(e2e, alice, room_id, "!usage")
        refused = await _command(e2e, alice, room_id, "!usage top")
        top = await _command(e2e, bob, room_id, "!usage top")
        async with httpx.AsyncClient(base_url=server.url, headers={"Authorization": f"Bearer {DASHBOARD}"}) as rest:
            people = (await rest.get("/api/usage", params={"group_by": "requester"})).json()
            bobs = (await rest.get("/api/usage", params={"person": bob.user_id, "group_by": "agent,model"})).json()
            near = (await rest.get("/api/usage", params={"person": bob.user_id + "x"})).json()
            bad = await rest.get("/api/usage", params={"period": "lastweek"})
            anonymous = await httpx.AsyncClient(base_url=server.url).get("/api/usage")

    assert own.startswith(f"Your usage this month (UTC): 1 turn, {alice_in:,} tokens in (0 cached), 3 out, 0 tool")
    assert f"${_cost(alice_in, 3):.4f}" in own and own.count("1 turn,") == 2  # this month and today alike
    assert refused == "❌ Only administrators can see other people's usage."
    assert top.index(bob.user_id) < top.index(alice.user_id)  # bob spent more
    rows = {row["requester"]: row for row in people["rows"]}
    assert set(rows) == {alice.user_id, bob.user_id}
    assert (rows[alice.user_id]["turns"], rows[alice.user_id]["input_tokens"]) == (1, alice_in)
    assert (rows[bob.user_id]["turns"], rows[bob.user_id]["input_tokens"], rows[bob.user_id]["output_tokens"]) == (
        2,
        bob_in,
        3,
    )
    assert rows[bob.user_id]["cost_usd"] == pytest.approx(_cost(bob_in, 3), abs=1e-6)
    assert people["total"]["turns"] == 3 and people["total"]["unpriced_turns"] == 0
    assert bobs["rows"] == [{**bobs["rows"][0], "agent": agent, "model": "default", "turns": 2}]
    assert near["total"]["turns"] == 0
    assert bad.status_code == 422 and "unknown period 'lastweek'" in bad.text
    assert anonymous.status_code in (401, 403)


async def test_usage_budget_switches_to_the_fallback_then_refuses_with_the_reset_date_after_a_restart(e2e: E2E):
    alice = await e2e.human("alice")
    agent, room = e2e.name("helper"), e2e.name("room")
    admin = e2e.name("admin")
    config = e2e.basic_config([alice.user_id], {agent: {"display_name": "Helper", "rooms": [room]}}, admin_room=admin)
    config["models"]["default"]["pricing"] = PRICE
    config["models"]["cheap"] = {**config["models"]["default"], "id": "fallback-model"}
    del config["models"]["cheap"]["pricing"]
    config["budgets"] = {"monthly_limit_usd": 0.002, "fallback_model": "cheap"}
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    e2e.model_server.set_default(Text("a reply of several words"), model="agent-model")
    e2e.model_server.set_default(Text("a cheap reply"), model="fallback-model")

    question = await alice.send(room_id, "the first question of the month", mentions=[e2e.user_id(agent)])
    in_thread = thread_replies(question, e2e.user_id(agent))
    first = await alice.wait_for(lambda ev: in_thread(ev) and not _warning(ev))  # under the limit: as asked
    warned = await alice.wait_for(lambda ev: in_thread(ev) and _warning(ev))
    ids = [ev.get("event_id") for ev in alice.events]
    assert ids.index(first["event_id"]) < ids.index(warned["event_id"])  # the notice follows the answer it is about
    admin_id = e2e.room_id(admin)
    await e2e.joined(alice, admin_id)
    told = await alice.wait_for(lambda ev: ev.get("room_id") == admin_id and "monthly budget" in str(ev["content"]))
    spent = _cost(_read(_turns(e2e)[0]), 5)
    assert spent >= 0.002, "the first turn must reach the limit for this test"
    second = await _ask(e2e, alice, room_id, agent, "and a second one")
    before_restart = _metrics(e2e)
    await e2e.stop()

    config["budgets"] = {"monthly_limit_usd": 0.002}  # no fallback: refused at the limit
    await e2e.start(config)
    await e2e.joined(alice, room_id)
    asked = len(e2e.model_server.requests)
    third = await _ask(e2e, alice, room_id, agent, "a third one after the restart")
    own = await _command(e2e, alice, room_id, "!usage")
    after_restart = _metrics(e2e)
    cli = await _cli(e2e, "--json", "--by", "requester,model")
    table = await _cli(e2e, "--period", "today", "--person", alice.user_id)

    assert first["content"]["body"] == "a reply of several words"
    assert second["content"]["body"] == "a cheap reply" and len(_turns(e2e, "fallback-model")) == 1
    reset = dt.datetime.fromtimestamp(next_month_start(time.time()), dt.UTC).strftime("%Y-%m-%d")
    assert f"Your monthly budget of $0.0020 is used up (${spent:.4f} spent this month)" in third["content"]["body"]
    assert f"It resets on {reset} (UTC)." in third["content"]["body"]
    assert len(e2e.model_server.requests) == asked  # the refused turn never reached a model
    assert warned["content"]["body"] == (
        f"⚠️ {alice.user_id}: you have used {spent / 0.002:.0%} of your monthly budget (${spent:.4f} of $0.0020)."
        f" At the limit, turns on priced models use cheap until {reset} (UTC)."
    )
    assert warned["content"]["msgtype"] == "m.notice"
    assert told["sender"] == e2e.user_id("router") and told["content"]["body"] == (
        f"⚠️ {alice.user_id} has used {spent / 0.002:.0%} of their monthly budget (${spent:.4f} of $0.0020)."
    )
    labels = {"agent": agent, "model": "default"}
    assert _sample(before_restart, "mindroom_usage_cost_usd_total", **labels) == pytest.approx(spent, abs=1e-6)
    assert _sample(before_restart, "mindroom_budget_turns_total", outcome="fallback") == 1
    assert _sample(after_restart, "mindroom_budget_turns_total", outcome="refused") == 1
    assert alice.user_id not in before_restart + after_restart  # no label per person
    await e2e.settle(alice, room_id)
    assert len(alice.matching(_warning)) == 1  # once this month: the later turns, past 80 %, warn no more
    assert re.match(r"Your usage this month \(UTC\): 2 turns, .* \(1 on unpriced models", own)
    assert cli.returncode == 0, cli.stderr
    rows = {row["model"]: row for row in json.loads(cli.stdout)["rows"]}
    assert set(rows) == {"default", "cheap"} and {row["requester"] for row in rows.values()} == {alice.user_id}
    assert rows["default"]["cost_usd"] == pytest.approx(spent, abs=1e-6) and rows["cheap"]["unpriced_turns"] == 1
    assert table.returncode == 0 and alice.user_id in table.stdout and agent in table.stdout


async def test_usage_stats_tool_reports_the_requesters_own_and_everyones_only_with_admin_scope(e2e: E2E):
    alice, bob = await e2e.human("alice"), await e2e.human("bob")
    admin_agent, plain_agent, room = e2e.name("auditor"), e2e.name("helper"), e2e.name("room")
    agents = {
        admin_agent: {"display_name": "Auditor", "rooms": [room], "tools": [{"usage_stats": {"admin_scope": True}}]},
        plain_agent: {"display_name": "Helper", "rooms": [room], "tools": ["usage_stats"]},
    }
    config = e2e.basic_config([alice.user_id, bob.user_id], agents, administrators=[bob.user_id])
    config["models"]["default"]["pricing"] = PRICE
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    await e2e.joined(bob, room_id)
    e2e.model_server.script(
        Text("warming up"),
        ToolCall("get_my_usage", {}),
        Text("that is your usage"),
        ToolCall("get_all_usage", {"include_daily": True}),
        Text("not for you"),
        ToolCall("get_all_usage", {}),
        Text("not with this agent"),
        ToolCall("get_all_usage", {}),
        Text("here is everyone"),
        model="agent-model",
    )
    await _ask(e2e, bob, room_id, plain_agent, "a first turn to count")
    await _ask(e2e, alice, room_id, plain_agent, "what did I use?")
    await _ask(e2e, alice, room_id, admin_agent, "what did everyone use?")
    await _ask(e2e, bob, room_id, plain_agent, "what did everyone use?")
    await _ask(e2e, bob, room_id, admin_agent, "what did everyone use?")

    turns = _turns(e2e)
    mine = json.loads(last_tool_message(turns[2]))
    refused = [json.loads(last_tool_message(turns[n]))["message"] for n in (4, 6)]
    everyone = json.loads(last_tool_message(turns[8]))
    assert "get_all_usage" in tool_names(turns[1]) and "get_my_usage" in tool_names(turns[1])
    assert (mine["status"], mine["scope"], mine["requester"]) == ("ok", "self", alice.user_id)
    assert mine["month"]["total"] is None  # alice's first turn is still running: nothing recorded for her yet
    assert refused == [
        "Only administrators can see everyone's usage.",
        "This agent's usage_stats tool is not set up with admin_scope.",
    ]
    people = {row["requester"]: row for row in everyone["month"]["by_person"]}
    assert set(people) == {alice.user_id, bob.user_id}
    assert people[bob.user_id]["turns"] == 2 and people[alice.user_id]["turns"] == 2
    assert people[bob.user_id]["input_tokens"] == _read(turns[0]) + _read(turns[5]) + _read(turns[6])


@pytest.mark.postgres
async def test_usage_moves_to_postgres_with_state_migrate_and_counts_on_there(postgres_url: str, e2e: E2E):
    alice = await e2e.human("alice")
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config([alice.user_id], {agent: {"display_name": "Helper", "rooms": [room]}})
    config["models"]["default"]["pricing"] = PRICE
    e2e.model_server.set_default(Text("an answer"), model="agent-model")
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    await _ask(e2e, alice, room_id, agent, "one on SQLite")
    await _ask(e2e, alice, room_id, agent, "two on SQLite")
    on_sqlite = await _command(e2e, alice, room_id, "!usage")
    await e2e.stop()

    migrated = await e2e.migrate_state(postgres_url)
    config["storage"] = {"database_url": postgres_url}
    await e2e.start(config)
    await _ask(e2e, alice, room_id, agent, "three on PostgreSQL")
    on_postgres = await _command(e2e, alice, room_id, "!usage")
    await e2e.stop()

    assert migrated.returncode == 0, migrated.stderr
    assert re.search(r"^usage\s+2\s+2\s+ok$", migrated.stdout, re.M), migrated.stdout
    assert on_sqlite.startswith("Your usage this month (UTC): 2 turns,")
    assert on_postgres.startswith("Your usage this month (UTC): 3 turns,")
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute("SELECT requester, agent, model FROM mindroom.usage").fetchall()
    assert rows == [(alice.user_id, agent, "default")] * 3


async def test_usage_of_a_hand_off_is_counted_for_the_person_who_asked(e2e: E2E):
    alice, bob = await e2e.human("alice"), await e2e.human("bob")
    helper, researcher, room = e2e.name("helper"), e2e.name("researcher"), e2e.name("room")
    models = {**e2e.models(), "research": {**e2e.models()["default"], "id": "research-model", "pricing": PRICE}}
    agents = {
        helper: {"display_name": "Helper", "rooms": [room], "tools": ["delegate"], "delegate_to": [researcher]},
        researcher: {"display_name": "Researcher", "rooms": [room], "model": "research"},
    }
    await e2e.start(e2e.basic_config([alice.user_id, bob.user_id], agents, models=models))
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    await e2e.joined(bob, room_id)
    e2e.model_server.script(
        ToolCall("run_subagent", {"task": "When is high tide today?", "agent_name": researcher}),
        Text("The researcher says 14:32."),
        Text("hello bob"),
        model="agent-model",
    )
    e2e.model_server.script(Text("High tide is at 14:32."), model="research-model")

    question = await alice.send(room_id, "ask the researcher about the tide", mentions=[e2e.user_id(helper)])
    await alice.wait_for(
        lambda ev: (
            thread_replies(question, e2e.user_id(helper))(ev) and ev["content"]["body"] == "The researcher says 14:32."
        )
    )
    await _ask(e2e, bob, room_id, helper, "just hello")
    assert e2e.daemon is not None and e2e.daemon.running is not None
    ledger = e2e.daemon.running.stores.usage
    assert ledger is not None
    rows = await ledger.query(UsageQuery(group_by=("requester", "agent", "model")))

    [research] = _turns(e2e, "research-model")
    counted = {row.key: (row.turns, row.input_tokens, row.cost_usd) for row in rows}
    assert counted[(alice.user_id, researcher, "research")] == (
        1,
        _read(research),
        _cost(_read(research), word_count(["High tide is at 14:32."])),
    )
    assert counted[(alice.user_id, helper, "default")][0] == 1
    assert counted[(bob.user_id, helper, "default")][0] == 1
    assert len(counted) == 3  # nothing counted for an agent's own account


async def test_usage_of_an_anthropic_model_counts_its_cached_input_at_the_cache_price(e2e: E2E):
    alice = await e2e.human("alice")
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config([alice.user_id], {agent: {"display_name": "Helper", "rooms": [room]}})
    pricing = {"input": 3.0, "output": 15.0, "cache_read": 0.3}
    config["models"]["default"] = {
        "provider": "anthropic",
        "id": "agent-model",
        "host": e2e.model_server.url,
        "api_key": "sk-ant-test",
        "pricing": pricing,
        "extra_kwargs": {"max_retries": 0},
    }
    await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    e2e.model_server.set_cached_tokens(5)  # the Messages API reports them apart from input_tokens
    e2e.model_server.set_default(Text("four words right here"))

    await _ask(e2e, alice, room_id, agent, "a question for the Messages API")
    own = await _command(e2e, alice, room_id, "!usage")

    [request] = e2e.model_server.requests_to("anthropic")
    read = word_count(AnthropicMessagesApi().texts(request))
    cost = ((read - 5) * 3.0 + 5 * 0.3 + 4 * 15.0) / 1e6
    assert own.startswith(f"Your usage this month (UTC): 1 turn, {read:,} tokens in (5 cached), 4 out, 0 tool calls,")
    assert f"${cost:.4f}" in own


async def test_usage_a_persons_own_limit_set_through_the_api_moves_only_them_and_outlasts_a_restart(e2e: E2E):
    alice, bob = await e2e.human("alice"), await e2e.human("bob")
    agent, room = e2e.name("helper"), e2e.name("room")
    config = e2e.basic_config([alice.user_id, bob.user_id], {agent: {"display_name": "Helper", "rooms": [room]}})
    config["models"]["default"]["pricing"] = PRICE
    config["models"]["cheap"] = {**config["models"]["default"], "id": "fallback-model"}
    del config["models"]["cheap"]["pricing"]
    config["budgets"] = {"fallback_model": "cheap"}  # no default limit: only people given one are capped
    daemon = await e2e.start(config)
    room_id = e2e.room_id(room)
    await e2e.joined(alice, room_id)
    await e2e.joined(bob, room_id)
    e2e.model_server.set_default(Text("priced"), model="agent-model")
    e2e.model_server.set_default(Text("cheap"), model="fallback-model")
    async with _rest(daemon) as rest:
        capped = await rest.put(f"/api/budgets/users/{alice.user_id}", json={"limit_usd": 0})
        near = await rest.put(f"/api/budgets/users/{alice.user_id[1:]}", json={"limit_usd": 1})
        negative = await rest.put(f"/api/budgets/users/{bob.user_id}", json={"limit_usd": -1})
        alices = await _ask(e2e, alice, room_id, agent, "alice is capped at zero")
        bobs = await _ask(e2e, bob, room_id, agent, "bob has no limit")
        status = (await rest.get("/api/budgets")).json()
    await e2e.stop()
    daemon = await e2e.start(config)
    await e2e.joined(alice, room_id)
    again = await _ask(e2e, alice, room_id, agent, "still capped after a restart")
    async with _rest(daemon) as rest:
        removed = await rest.delete(f"/api/budgets/users/{alice.user_id}")
        twice = await rest.delete(f"/api/budgets/users/{alice.user_id}")
        freed = await _ask(e2e, alice, room_id, agent, "and free again")

    assert capped.status_code == 200 and capped.json()["limit_usd"] == 0 and capped.json()["set_by"]
    assert near.status_code == 422 and negative.status_code == 422
    assert (alices["content"]["body"], bobs["content"]["body"]) == ("cheap", "priced")
    users = {user["requester"]: user for user in status["users"]}
    assert users[alice.user_id]["limit_usd"] == 0 and users[alice.user_id]["own_limit"] is True
    assert users[bob.user_id]["limit_usd"] is None and users[bob.user_id]["spent_usd"] > 0
    assert status["fallback_model"] == "cheap" and status["resets_at"] == next_month_start(time.time())
    assert again["content"]["body"] == "cheap"
    assert (removed.status_code, twice.status_code, freed["content"]["body"]) == (200, 404, "priced")
