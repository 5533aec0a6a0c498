"""`/api`: keys and the dashboard cookie (and no key: refused, unless opted out), status, hooks, approvals decided
as the key's owner, config read/validate/save with generations (409) and validation (422), redaction, the OpenAPI
document and the docs page behind the key, `/metrics`."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import re
import stat

import pytest
import yaml

from mindroom.bots.approvals.desk import ApprovalSeat
from mindroom.config.loading import load_config, parse_config_text
from mindroom.config.overrides import ChatSettings, Override
from mindroom.hooks import EVENT_MESSAGE_ENRICH, ApprovalRequest, hook
from mindroom.testing.model_server import Text
from tests.bots.bench import ALICE, LOBBY, registry_of, until

pytestmark = pytest.mark.asyncio

KEY = "dashboard-key-123456"
ENV = {"MINDROOM_API_KEY": KEY, "OPENAI_COMPAT_API_KEYS": "sk-v1-key", "MINDROOM_OWNER_USER_ID": "@owner:localhost"}
HELPER = {"display_name": "Helper", "role": "Helps", "rooms": ["lobby"]}


async def test_api_health_and_ready_need_no_key_but_the_rest_does(make_api):
    api = await make_api({"helper": HELPER}, env=ENV)
    anonymous, keyed, wrong = api.client(), api.client(KEY), api.client("nope")

    health = await anonymous.get("/api/health")
    ready = await anonymous.get("/api/ready")
    refused = await anonymous.get("/api/status")
    bad = await wrong.get("/api/status")
    v1_key_here = await api.client("sk-v1-key").get("/api/status")
    status = await keyed.get("/api/status")

    assert health.status_code == 200 and health.json()["matrix_sync"] == {"router": True, "helper": True}
    assert ready.status_code == 200 and ready.json() == {"ready": True}
    assert (refused.status_code, bad.status_code, v1_key_here.status_code) == (401, 401, 401)
    body = status.json()
    assert body["operator"] == "@owner:localhost"
    bots = {bot["name"]: bot for bot in body["bots"]}
    assert bots["helper"]["synced"] is True
    assert bots["helper"]["rooms"] == [{"room_id": LOBBY, "name": "lobby"}]


async def test_api_without_a_key_refuses_loopback_and_opted_out_takes_it_checking_host_and_origin(make_api):
    closed = await make_api({"helper": HELPER}, env={"OPENAI_COMPAT_API_KEYS": "sk-v1-key"})
    anonymous = closed.client()

    refused = [(await anonymous.get(path)).status_code for path in ("/api/status", "/api/config/raw", "/metrics")]
    change = await anonymous.put("/api/config/raw", json={"source": "agents: {}\n"})
    health = await anonymous.get("/api/health")

    assert refused == [401, 401, 401]
    assert change.status_code == 401 and "agents: {}" not in closed.view.config_path.read_text()
    assert health.status_code == 200  # liveness stays open
    await closed.close()

    opened = await make_api({"helper": HELPER}, env={"MINDROOM_API_ALLOW_UNAUTHENTICATED": "true"})
    local = opened.client()
    status = await local.get("/api/status")
    rebound = await local.get("/api/status", headers={"Host": "localhost.attacker.example"})
    other_port = await local.get("/api/status", headers={"Origin": "http://127.0.0.1:9999"})

    assert status.status_code == 200
    assert rebound.status_code == 403 and "localhost.attacker.example" in rebound.json()["detail"]
    assert other_port.status_code == 403


@pytest.mark.parametrize("presented", [KEY + "x", KEY[:-1]])
async def test_api_a_key_that_only_starts_like_the_key_is_refused(make_api, presented):
    api = await make_api({"helper": HELPER}, env=ENV)

    raw = await api.client(presented).get("/api/config/raw")
    metrics = await api.client(presented).get("/metrics")
    cookie = await api.client(cookies={"mindroom_api_key": presented}).get("/api/status")
    session = await api.client().post("/api/auth/session", json={"api_key": presented})

    assert (raw.status_code, metrics.status_code, cookie.status_code, session.status_code) == (401, 401, 401, 401)
    assert "set-cookie" not in session.headers


async def test_api_cookie_session_signs_the_dashboard_in_and_refuses_cross_site_changes(make_api):
    api = await make_api({"helper": HELPER}, env=ENV)
    browser = api.client()

    refused = await browser.post("/api/auth/session", json={"api_key": "wrong"})
    signed = await browser.post("/api/auth/session", json={"api_key": KEY})
    status = await browser.get("/api/status")
    forged = await browser.post("/api/reload", headers={"Origin": "https://attacker.example"})

    assert refused.status_code == 401
    assert signed.status_code == 200 and "httponly" in signed.headers["set-cookie"].lower()
    assert "samesite=strict" in signed.headers["set-cookie"].lower()
    assert status.status_code == 200
    assert forged.status_code == 403


async def test_api_hooks_show_counters_rising_after_a_turn(make_api, model_server):
    @hook(EVENT_MESSAGE_ENRICH)
    async def note(ctx):
        return None

    model_server.set_default(Text("ok"))
    api = await make_api({"helper": HELPER}, env=ENV, registry=registry_of(note))
    client = api.client(KEY)

    before = (await client.get("/api/hooks")).json()
    await api.openai("sk-v1-key").chat.completions.create(model="helper", messages=[{"role": "user", "content": "x"}])
    after = (await client.get("/api/hooks")).json()

    assert [(row["plugin_name"], row["hook_name"], row["calls"]) for row in before] == [("bench", "note", 0)]
    assert after[0]["calls"] == 1 and after[0]["failures"] == 0 and after[0]["breaker_state"] == "closed"


async def test_api_approval_is_listed_and_approved_as_the_keys_owner(make_api):
    api = await make_api({"helper": HELPER}, env=ENV)
    desk = api.bench.desk
    seat = ApprovalSeat("helper", "Helper", api.bench.client("helper"), LOBBY, None, None, "turn-9")
    request = ApprovalRequest(
        prompt="it deletes files",
        timeout_s=30,
        tool_name="run_shell_command",
        arguments={"command": "rm -rf build"},
        agent_name="helper",
        room_id=LOBBY,
        thread_id=None,
        requester_id="@alice:localhost",
        correlation_id="turn-9",
        plugin_name="guard",
        hook_name="ask",
    )
    waiting = asyncio.create_task(desk.request(seat, request))
    await until(lambda: desk.store.overdue(now=math.inf))
    client = api.client(KEY)

    [pending] = (await client.get("/api/approvals")).json()
    approved = await client.post(f"/api/approvals/{pending['approval_id']}/approve")
    again = await client.post(f"/api/approvals/{pending['approval_id']}/deny")
    missing = await client.post("/api/approvals/nope/approve")

    assert pending["tool_name"] == "run_shell_command" and pending["prompt"] == "it deletes files"
    assert approved.status_code == 200
    assert (approved.json()["status"], approved.json()["decided_by"]) == ("approved", "@owner:localhost")
    assert await asyncio.wait_for(waiting, 5) is True  # the waiting turn was woken, allowed
    assert (again.status_code, missing.status_code) == (409, 404)
    assert (await client.get("/api/approvals")).json() == []


async def test_api_config_raw_generation_409_and_422_at_the_line(make_api):
    api = await make_api({"helper": HELPER}, env=ENV)
    client = api.client(KEY)
    path = api.view.config_path
    raw = await client.get("/api/config/raw")
    generation = raw.headers["x-mindroom-config-generation"]
    source = raw.json()["source"]
    broken = source.replace("display_name: Helper", "display_name: Helper\n    colour: blue")

    invalid = await client.put(
        "/api/config/raw", json={"source": broken}, headers={"x-mindroom-config-generation": generation}
    )
    check = await client.post("/api/config/validate", json={"source": broken})
    unchanged = path.read_text()
    saved = await client.put(
        "/api/config/raw",
        json={"source": source.replace("role: Helps", "role: Helps a lot")},
        headers={"x-mindroom-config-generation": generation},
    )
    stale = await client.put(
        "/api/config/raw", json={"source": source}, headers={"x-mindroom-config-generation": generation}
    )

    assert invalid.status_code == 422
    [error] = invalid.json()["detail"]["errors"]
    line = next(i for i, text in enumerate(broken.splitlines(), start=1) if "colour" in text)
    assert error["line"] == line and "colour" in error["message"]
    assert check.json()["valid"] is False and check.json()["errors"][0]["line"] == line
    assert unchanged == source  # an invalid config never reaches the file
    assert saved.status_code == 200 and saved.json()["saved"] is True
    assert "role: Helps a lot" in path.read_text()
    assert saved.headers["x-mindroom-config-generation"] != generation
    assert stale.status_code == 409
    assert "role: Helps a lot" in path.read_text()  # the stale write did not land


async def test_api_config_redacted_view_hides_secrets_and_a_save_keeps_them(make_api):
    api = await make_api({"helper": {**HELPER, "password": "hunter2-secret-pw"}}, env=ENV)
    client = api.client(KEY)
    path = api.view.config_path
    path.chmod(0o640)  # the operator's choice, which a save keeps

    view = await client.get("/api/config/raw", params={"redacted": "true"})
    shown = view.json()["source"]
    edited = shown.replace("role: Helps", "role: Helps more")
    saved = await client.put("/api/config/raw", json={"source": edited})
    tampered = await client.put("/api/config/raw", json={"source": shown.replace("[redacted]", "[redacted]x")})

    assert "hunter2-secret-pw" not in shown and "[redacted]" in shown
    assert saved.status_code == 200
    text = path.read_text()
    assert "hunter2-secret-pw" in text and "role: Helps more" in text
    assert tampered.status_code == 422
    assert yaml.safe_load(path.read_text())["agents"]["helper"]["password"] == "hunter2-secret-pw"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


async def test_api_outputs_pass_redaction(make_api, model_server):
    @hook(EVENT_MESSAGE_ENRICH)
    async def leaky(ctx):
        raise RuntimeError("failed with api_key=sk-live-abcdef123456")

    model_server.set_default(Text("ok"))
    api = await make_api({"helper": HELPER}, env=ENV, registry=registry_of(leaky))
    await api.openai("sk-v1-key").chat.completions.create(model="helper", messages=[{"role": "user", "content": "x"}])

    overview = (await api.client(KEY).get("/api/overview")).text

    assert "sk-live-abcdef123456" not in overview
    assert "api_key=[redacted]" in overview


async def test_api_openapi_document_describes_every_route_to_the_key_only(make_api):
    api = await make_api({"helper": HELPER}, env=ENV)

    anonymous = await api.client().get("/openapi.json")
    near = await api.client(KEY + "x").get("/openapi.json")
    pages = [(await api.client(KEY).get(path)).status_code for path in ("/docs", "/redoc")]
    document = (await api.client(KEY).get("/openapi.json")).json()

    assert (anonymous.status_code, near.status_code) == (401, 401)
    assert pages == [404, 404]  # off unless MINDROOM_ENABLE_API_DOCS

    paths = set(document["paths"])
    for path in (
        "/v1/models",
        "/v1/chat/completions",
        "/api/health",
        "/api/ready",
        "/api/status",
        "/api/agents",
        "/api/plugins",
        "/api/hooks",
        "/api/rooms",
        "/api/turns",
        "/api/approvals",
        "/api/approvals/{approval_id}/approve",
        "/api/config/raw",
        "/api/config/load",
        "/api/config/save",
        "/api/config/schema",
        "/api/config/validate",
        "/api/config/reload-status",
        "/api/config/effective",
        "/api/reload",
        "/metrics",
    ):
        assert path in paths, path
    assert "requestBody" in document["paths"]["/v1/chat/completions"]["post"]


async def test_api_docs_page_enabled_is_behind_the_key_and_loads_nothing_from_elsewhere(make_api):
    api = await make_api({"helper": HELPER}, env={**ENV, "MINDROOM_ENABLE_API_DOCS": "true"})

    refused = [(await api.client(token).get("/docs")).status_code for token in (None, KEY[:-1], "sk-v1-key")]
    docs = await api.client(KEY).get("/docs")
    redoc = await api.client(KEY).get("/redoc")
    browser = api.client()
    await browser.post("/api/auth/session", json={"api_key": KEY})
    signed_in = await browser.get("/docs")

    assert refused == [401, 401, 401]
    assert docs.status_code == 200 and docs.headers["content-type"].startswith("text/html")
    policy = docs.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "script-src 'none'" in policy and "unsafe-inline" not in policy
    assert "<script" not in docs.text.lower()
    assert re.findall(r'(?:src|href)="([^"]+)"', docs.text) == ["/dashboard/style.css", "/openapi.json"]
    assert "<td>/api/config/raw</td>" in docs.text and "<td>PUT</td>" in docs.text
    assert "<td>Reload config.yaml and every plugin now</td>" in docs.text  # each route's summary
    assert redoc.text == docs.text
    assert signed_in.status_code == 200  # the dashboard's cookie opens it in the browser


async def test_api_metrics_take_the_key_or_the_metrics_token(make_api):
    api = await make_api({"helper": HELPER}, env={**ENV, "MINDROOM_METRICS_TOKEN": "scrape-token-1234"})

    anonymous = await api.client().get("/metrics")
    scraper = await api.client("scrape-token-1234").get("/metrics")
    operator = await api.client(KEY).get("/metrics")
    token_elsewhere = await api.client("scrape-token-1234").get("/api/status")

    assert anonymous.status_code == 401
    assert scraper.status_code == 200 and scraper.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert "mindroom_up 1.0" in scraper.text
    assert operator.status_code == 200
    assert token_elsewhere.status_code == 401


async def test_api_dashboard_page_is_served_with_a_strict_policy(make_api):
    api = await make_api({"helper": HELPER}, env=ENV)
    client = api.client()

    page = await client.get("/")
    script = await client.get("/dashboard/app.js")

    assert page.status_code == 200 and "<title>MindRoom dashboard</title>" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"
    assert script.status_code == 200 and "refresh" in script.text


async def test_api_reload_status_needs_the_operator_key(make_api):
    api = await make_api({"helper": HELPER}, env=ENV)

    refused = await api.client().get("/api/config/reload-status")
    near = await api.client(KEY + "x").get("/api/config/reload-status")
    status = await api.client(KEY).get("/api/config/reload-status")
    raw = await api.client(KEY).get("/api/config/raw")

    assert (refused.status_code, near.status_code) == (401, 401)
    assert status.status_code == 200 and len(status.json()["generation"]) == 16
    assert status.json()["generation"] == raw.headers["x-mindroom-config-generation"]  # the file's, as read now
    assert status.json()["applied"] is True and status.json()["last_reload"] is None


def with_chat_changes(api, *overrides: Override) -> None:
    """The running daemon as it is once `overrides` were made from chat (config keys applied, as a reload does)."""
    live, path = api.bench.daemon.live, api.view.config_path
    settings = ChatSettings(overrides)
    config = parse_config_text(path.read_text(), path, {}, settings.config_overrides())
    api.bench.daemon.cell.swap(dataclasses.replace(live, config=config, settings=settings))


async def test_api_config_effective_names_where_each_value_comes_from_behind_the_key(make_api):
    secret = {"provider": "openai", "id": "x", "api_key": "sk-operator-secret-0123456789"}
    api = await make_api({"helper": HELPER}, env=ENV, models={"paid": secret})
    markdown = Override("config", "defaults.markdown", False, ALICE, 1_700_000_000.0)
    room = Override("room", "thread_mode", "room", ALICE, 1_700_000_100.0, room_id=LOBBY)
    host = Override("config", "models.paid.host", "http://10.0.0.7/v1", "@old:localhost", 1.0)  # chat may not
    with_chat_changes(api, markdown, room, host)

    refused = await api.client().get("/api/config/effective")
    near = await api.client(KEY + "x").get("/api/config/effective")
    found = await api.client(KEY).get("/api/config/effective")

    assert (refused.status_code, near.status_code, found.status_code) == (401, 401, 200)
    body = found.json()
    values = {value["path"]: value for value in body["values"]}
    assert values["defaults.markdown"] == {
        "path": "defaults.markdown", "value": False, "source": "chat", "set_by": ALICE, "set_at": 1_700_000_000.0
    }  # fmt: skip
    assert (values["agents.helper.role"]["value"], values["agents.helper.role"]["source"]) == ("Helps", "config.yaml")
    assert values["defaults.enable_streaming"]["source"] == "config.yaml"  # the bench's file writes it
    assert values["agents.helper.num_history_runs"]["source"] == "default"
    assert values["models.paid.host"]["source"] == "default"
    assert "0123456789" not in found.text and values["models.paid.api_key"]["source"] == "config.yaml"
    scoped = [(item["scope"], item["room_id"], item["path"], item["value"]) for item in body["scoped"]]
    assert scoped == [("room", LOBBY, "thread_mode", "room")]
    assert [(item["path"], item["why"]) for item in body["not_in_effect"]] == [
        ("models.paid.host", "chat may not change this key; edit config.yaml")
    ]


async def test_api_config_effective_is_409_while_the_file_does_not_load(make_api):
    api = await make_api({"helper": HELPER}, env=ENV)
    api.view.config_path.write_text(api.view.config_path.read_text() + "favourite_colour: blue\n")

    found = await api.client(KEY).get("/api/config/effective")

    assert found.status_code == 409
    assert "favourite_colour" in found.json()["detail"]["errors"][0]["message"]


async def test_api_config_names_each_key_accepted_and_not_used_here_with_its_line(make_api):
    api = await make_api({"helper": HELPER}, env=ENV)
    client = api.client(KEY)
    path = api.view.config_path
    plain = path.read_text()
    source = plain.replace("role: Helps", "role: Helps\n    cheap_model: default")
    path.write_text(source)
    live = api.bench.daemon.live  # the running config as the daemon reads the file, notices and all
    api.bench.daemon.cell.swap(dataclasses.replace(live, config=load_config(path, ENV)))
    line = next(number for number, text in enumerate(source.splitlines(), start=1) if "cheap_model" in text)

    effective = (await client.get("/api/config/effective")).json()
    check = (await client.post("/api/config/validate", json={"source": source})).json()
    without = (await client.post("/api/config/validate", json={"source": plain})).json()

    [notice] = effective["notices"]
    assert (notice["path"], notice["line"]) == ("agents.helper.cheap_model", line) and notice["message"]
    assert check["valid"] is True and check["notices"] == [notice]
    assert without["valid"] is True and without["notices"] == []
