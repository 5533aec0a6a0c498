"""Schedules: parsing the natural forms, next runs, the SQLite store, and firing (missed runs fire once)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from mindroom.bots.runtime import LiveCell, LiveState
from mindroom.config.main import Config
from mindroom.config.plugin import PluginEntryConfig
from mindroom.constants import ORIGINAL_SENDER_KEY, SCHEDULE_ID_KEY
from mindroom.daemon.scheduling.parse import ScheduleParseError, next_run_after, parse_schedule
from mindroom.daemon.scheduling.scheduler import Scheduler
from mindroom.hooks import EVENT_SCHEDULE_FIRED, HookRegistry, hook
from mindroom.hooks.context import HookBindings
from mindroom.state.schedules import ScheduledTask, ScheduleStore
from mindroom.state.sqlite.schedules import SqliteScheduleStore

BERLIN = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 3, 10, 15, 30, tzinfo=BERLIN)  # a Tuesday


@pytest.mark.parametrize(
    ("text", "kind", "expression", "message"),
    [
        ("in 10 minutes stand up", "once", (NOW + timedelta(minutes=10)).isoformat(), "stand up"),
        ("in 3 seconds: ping", "once", (NOW + timedelta(seconds=3)).isoformat(), "ping"),
        ("in an hour tea", "once", (NOW + timedelta(hours=1)).isoformat(), "tea"),
        ("at 9:00 coffee", "once", datetime(2026, 3, 11, 9, 0, tzinfo=BERLIN).isoformat(), "coffee"),
        ("at 18:15 leave", "once", datetime(2026, 3, 10, 18, 15, tzinfo=BERLIN).isoformat(), "leave"),
        ("tomorrow at 9pm call mum", "once", datetime(2026, 3, 11, 21, 0, tzinfo=BERLIN).isoformat(), "call mum"),
        ("every day at 9:00 news", "cron", "0 9 * * *", "news"),
        ("daily at 7:30am run", "cron", "30 7 * * *", "run"),
        ("every weekday at 8:45 standup", "cron", "45 8 * * 1-5", "standup"),
        ("every monday at 10am plan the week", "cron", "0 10 * * 1", "plan the week"),
        ("every 15 minutes stretch", "interval", "900", "stretch"),
        ("every hour drink water", "interval", "3600", "drink water"),
        ("cron */5 * * * * poll", "cron", "*/5 * * * *", "poll"),
        ("0 9 * * 1-5 weekday digest", "cron", "0 9 * * 1-5", "weekday digest"),
    ],
)
def test_parse_schedule_natural_forms(text: str, kind: str, expression: str, message: str) -> None:
    spec = parse_schedule(text, NOW)
    assert (spec.kind, spec.expression, spec.message) == (kind, expression, message)


@pytest.mark.parametrize("text", ["", "hello there", "in 10 parsecs go", "at 25:00 late", "in 0 minutes now", "in 5 m"])
def test_parse_schedule_rejects_what_it_cannot_read(text: str) -> None:
    with pytest.raises(ScheduleParseError):
        parse_schedule(text, NOW)


def test_next_run_after_never_replays_missed_runs() -> None:
    created = NOW - timedelta(days=3)
    assert next_run_after("cron", "*/5 * * * *", created, NOW) == NOW + timedelta(minutes=5)
    assert next_run_after("interval", "3600", created, NOW) == NOW + timedelta(hours=1)
    assert next_run_after("interval", "3600", NOW, NOW) == NOW + timedelta(hours=1)
    assert next_run_after("once", (NOW - timedelta(seconds=1)).isoformat(), created, NOW) is None


def _task(task_id: str, next_run: float | None, **fields: Any) -> ScheduledTask:
    values: dict[str, Any] = {
        "task_id": task_id,
        "room_id": "!room:localhost",
        "thread_id": None,
        "agent_name": "helper",
        "created_by": "@alice:localhost",
        "poster": "router",
        "kind": "cron",
        "expression": "* * * * *",
        "message": "tick",
        "description": "cron * * * * *",
        "created_at": time.time() - 86400,
        "next_run": next_run,
    }
    values.update(fields)
    return ScheduledTask(**values)


def test_schedule_store_persists_across_reopen_and_deletes_finished_one_offs(tmp_path: Path) -> None:
    path = tmp_path / "state" / "schedules.db"
    store = SqliteScheduleStore(path)
    store.add(_task("aaa111", 200.0))
    store.add(_task("bbb222", 100.0, room_id="!other:localhost"))
    store.close()
    store = SqliteScheduleStore(path)
    assert [task.task_id for task in store.pending()] == ["bbb222", "aaa111"]
    assert [task.task_id for task in store.in_room("!room:localhost")] == ["aaa111"]
    store.set_next_run("aaa111", None)
    assert store.get("aaa111") is None
    assert store.remove("bbb222") and not store.remove("bbb222")
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    store.close()


class _Client:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def send_message(self, room_id: str, body: str, **options: Any) -> str:
        self.sent.append({"room_id": room_id, "body": body, **options})
        return f"$event{len(self.sent)}"


def _scheduler(registry: HookRegistry, store: ScheduleStore) -> tuple[Scheduler, _Client]:
    client = _Client()
    poster = SimpleNamespace(client=client, bindings=lambda live: HookBindings(config=live.config))
    cell = LiveCell(LiveState(config=Config(timezone="Europe/Berlin"), registry=registry))
    directory = SimpleNamespace(
        entities={"router": poster}, bot_user_ids={"router": "@router:localhost", "helper": "@helper:localhost"}
    )
    return Scheduler(cell, directory, store), client  # type: ignore[arg-type]


def _plugin(callbacks: list[Any]) -> Any:
    return SimpleNamespace(
        name="sched", discovered_hooks=tuple(callbacks), entry_config=PluginEntryConfig(path="./sched"), plugin_order=0
    )


@pytest.mark.asyncio
async def test_scheduler_fires_a_run_missed_while_down_once_then_resumes_its_rhythm(tmp_path: Path) -> None:
    store = SqliteScheduleStore(tmp_path / "schedules.db")
    store.add(_task("miss01", time.time() - 3 * 86400))  # every minute, down for three days
    scheduler, client = _scheduler(HookRegistry.empty(), store)
    scheduler.start()
    try:
        for _ in range(50):
            if client.sent:
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.2)
    finally:
        await scheduler.stop()
    assert len(client.sent) == 1
    sent = client.sent[0]
    assert sent["body"] == "tick" and sent["mentions"] == ["@helper:localhost"]
    assert sent["extra_content"] == {ORIGINAL_SENDER_KEY: "@alice:localhost", SCHEDULE_ID_KEY: "miss01"}
    next_run = store.get("miss01").next_run
    assert next_run is not None and time.time() < next_run <= time.time() + 60
    store.close()


@pytest.mark.asyncio
async def test_scheduler_schedule_fired_hook_rewrites_or_suppresses(tmp_path: Path) -> None:
    @hook(EVENT_SCHEDULE_FIRED)
    async def edit(ctx: Any) -> None:
        assert ctx.created_by == "@alice:localhost" and ctx.agent_name == "helper"
        if ctx.message_text == "secret":
            ctx.suppress = True
        ctx.message_text = ctx.message_text.upper()

    store = SqliteScheduleStore(tmp_path / "schedules.db")
    scheduler, client = _scheduler(HookRegistry.from_plugins([_plugin([edit])]), store)
    assert await scheduler.fire(_task("loud01", None, message="hello")) == "$event1"
    assert await scheduler.fire(_task("hush01", None, message="secret")) is None
    assert [sent["body"] for sent in client.sent] == ["HELLO"]
    store.close()


@pytest.mark.asyncio
async def test_scheduler_create_wakes_the_loop_and_a_one_off_runs_once(tmp_path: Path) -> None:
    store = SqliteScheduleStore(tmp_path / "schedules.db")
    scheduler, client = _scheduler(HookRegistry.empty(), store)
    scheduler.start()
    try:
        spec = parse_schedule("in 1 second soon", scheduler.now())
        task = scheduler.create(
            spec, room_id="!r:localhost", thread_id="$root", created_by="@a:x", poster="router", agent=None
        )
        assert task.next_run is not None and datetime.fromtimestamp(task.next_run, UTC) > datetime.now(UTC)
        for _ in range(100):
            if client.sent:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.2)
    finally:
        await scheduler.stop()
    assert [(sent["body"], sent["thread_root"], sent["mentions"]) for sent in client.sent] == [("soon", "$root", None)]
    assert store.pending() == []
    store.close()
