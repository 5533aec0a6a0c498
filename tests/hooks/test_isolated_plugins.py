"""Isolated plugins: hooks answered from a worker process, a worker killed mid-hook, a hook past its timeout,
and the context's methods, which the worker's hook calls and the daemon runs on the real context."""

import asyncio
import json
import os
import signal
from pathlib import Path

import pytest

from mindroom.config.plugin import PluginEntryConfig
from mindroom.hooks import EVENT_MESSAGE_RECEIVED, HookRegistry, MessageReceivedContext
from mindroom.hooks.execution import emit
from mindroom.plugins.loader import load_plugin_dir
from tests.integration.support import eventually

pytestmark = pytest.mark.asyncio

HOOKS = """
import asyncio, json, os
from pathlib import Path
from mindroom.hooks import hook

@hook("message:received", timeout_ms=5000)
async def watch(ctx):
    out = Path(ctx.settings["out"])
    out.write_text(json.dumps({"pid": os.getpid(), "body": ctx.envelope.body, "room": ctx.envelope.room_id}))
    if ctx.envelope.body == "exit":
        os._exit(3)
    if ctx.envelope.body == "hang":
        await asyncio.sleep(60)
    ctx.suppress = ctx.envelope.body == "hush"
    return "answered"

@hook("message:received", name="speak", timeout_ms=5000)
async def speak(ctx):
    if not ctx.envelope.body.startswith("speak"):
        return
    topic = await ctx.query_room_state(ctx.envelope.room_id, "m.room.topic", "")
    event_id = await ctx.send_message(ctx.envelope.room_id, "topic: " + topic["topic"], thread_id="$t")
    error = None
    try:
        await ctx.query_room_state("!broken:example.org", "m.room.topic", "")
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    Path(ctx.settings["out"] + ".speak").write_text(json.dumps({"event_id": event_id, "error": error}))
    if ctx.envelope.body == "speak twice":
        await ctx.send_message(ctx.envelope.room_id, "again")
    if ctx.envelope.body == "speak loudly":
        await ctx.query_room_state("!broken:example.org", "m.room.topic", "")

@hook("message:received", name="slow", timeout_ms=300)
async def slow(ctx):
    if ctx.envelope.body == "slow":
        await asyncio.sleep(30)
"""


@pytest.fixture
def isolated(tmp_path: Path):
    folder = tmp_path / "plugins" / "guarded"
    folder.mkdir(parents=True)
    (folder / "mindroom.plugin.json").write_text(json.dumps({"name": "guarded", "hooks_module": "hooks.py"}))
    (folder / "hooks.py").write_text(HOOKS)
    out = tmp_path / "seen.json"
    entry = PluginEntryConfig(path=str(folder), settings={"out": str(out)}, isolated=True)
    registry = HookRegistry.from_plugins([load_plugin_dir(folder, entry_config=entry)])
    yield registry, out
    registry.isolated.close()


def seen(out: Path) -> dict:
    return json.loads(out.read_text())


def spoken(out: Path) -> dict:
    return json.loads(Path(f"{out}.speak").read_text())


def stats(registry: HookRegistry, name: str):
    return next(hook.stats for hook in registry.all_hooks() if hook.hook_name == name)


async def ask(registry, factory, body: str) -> MessageReceivedContext:
    ctx = factory(MessageReceivedContext, agent_name="helper", room_id="!lab:example.org", body=body)
    await emit(registry, EVENT_MESSAGE_RECEIVED, ctx)
    return ctx


async def test_isolated_plugin_hook_answers_from_its_worker_with_the_contexts_data(isolated, hook_context_factory):
    registry, out = isolated

    ctx = await ask(registry, hook_context_factory, "hush")

    assert seen(out)["body"] == "hush" and seen(out)["room"] == "!lab:example.org"
    assert seen(out)["pid"] != os.getpid()
    assert ctx.suppress is True  # a mutable field the hook set comes back
    assert stats(registry, "watch").failures == 0


async def test_isolated_plugin_worker_killed_mid_hook_is_a_failure_and_the_next_call_gets_a_fresh_one(
    isolated, hook_context_factory
):
    registry, out = isolated
    await ask(registry, hook_context_factory, "first")
    first_pid = seen(out)["pid"]
    assert first_pid != os.getpid()  # never kill the test's own process

    call = asyncio.create_task(ask(registry, hook_context_factory, "hang"))
    await eventually(lambda: out.exists() and seen(out)["body"] == "hang", "the hook to be running")
    os.kill(first_pid, signal.SIGKILL)
    await call

    assert stats(registry, "watch").failures == 1
    assert "worker process died" in (stats(registry, "watch").last_error or "")
    assert registry.isolated.plugins["guarded"].restarts == 1
    ctx = await ask(registry, hook_context_factory, "hush")
    assert ctx.suppress is True
    assert seen(out)["pid"] not in (first_pid, os.getpid())


async def test_isolated_plugin_that_exits_its_worker_is_counted_and_the_daemon_goes_on(isolated, hook_context_factory):
    registry, out = isolated

    await ask(registry, hook_context_factory, "exit")
    await ask(registry, hook_context_factory, "after")

    assert stats(registry, "watch").failures == 1
    assert "exit status 3" in (stats(registry, "watch").last_error or "")
    assert seen(out)["body"] == "after"


async def test_isolated_plugin_hook_past_its_timeout_is_cut_off_and_its_worker_replaced(isolated, hook_context_factory):
    registry, out = isolated
    await ask(registry, hook_context_factory, "first")
    first_pid = seen(out)["pid"]

    await ask(registry, hook_context_factory, "slow")

    assert stats(registry, "slow").timeouts == 1
    ctx = await ask(registry, hook_context_factory, "hush")
    assert ctx.suppress is True
    assert seen(out)["pid"] != first_pid


async def test_isolated_plugin_worker_is_replaced_at_a_reload_and_the_old_one_stops(
    isolated, hook_context_factory, tmp_path
):
    registry, out = isolated
    await ask(registry, hook_context_factory, "first")
    first = registry.isolated.plugins["guarded"]
    first_pid = seen(out)["pid"]

    folder = tmp_path / "plugins" / "guarded"
    entry = PluginEntryConfig(path=str(folder), settings={"out": str(out)}, isolated=True)
    reloaded = HookRegistry.from_plugins([load_plugin_dir(folder, entry_config=entry)], previous=registry)
    await ask(reloaded, hook_context_factory, "hush")

    assert seen(out)["pid"] not in (first_pid, os.getpid())
    assert reloaded.isolated.plugins["guarded"] is not first
    with pytest.raises(ProcessLookupError):
        os.kill(first_pid, 0)  # stopped and reaped
    await ask(registry, hook_context_factory, "late")  # a call the old registry makes after the reload
    assert "worker was stopped" in (stats(registry, "watch").last_error or "")
    assert seen(out)["body"] == "hush"  # it reached no worker


class Room:
    """The daemon's side of the context: a sender and a room state reader, recording what they were asked."""

    def __init__(self) -> None:
        self.sent: list[dict] = []
        self.release: asyncio.Event | None = None
        self.asked = 0

    async def send(self, room_id, text, *, thread_id=None, extra_content=None):
        self.asked += 1
        if self.release is not None:
            await self.release.wait()
        self.sent.append({"room_id": room_id, "text": text, "thread_id": thread_id, "content": extra_content})
        return "$sent:example.org"

    async def state(self, room_id, event_type, state_key):
        if room_id == "!broken:example.org":
            raise PermissionError(f"M_FORBIDDEN: not joined to {room_id}")
        return {"topic": f"{event_type} of {room_id}"}


async def speak(registry, factory, room: Room, body: str) -> None:
    ctx = factory(
        MessageReceivedContext,
        agent_name="helper",
        room_id="!lab:example.org",
        body=body,
        message_sender=room.send,
        room_state_querier=room.state,
    )
    await emit(registry, EVENT_MESSAGE_RECEIVED, ctx)


async def test_isolated_plugin_hook_calls_the_contexts_methods_and_the_daemon_runs_them(isolated, hook_context_factory):
    registry, out = isolated
    room = Room()

    await speak(registry, hook_context_factory, room, "speak")

    (sent,) = room.sent
    assert (sent["room_id"], sent["text"], sent["thread_id"]) == (
        "!lab:example.org",
        "topic: m.room.topic of !lab:example.org",
        "$t",
    )
    assert sent["content"]["com.mindroom.hook_source"] == "guarded:speak"  # the real context's rules marked it
    said = spoken(out)
    assert said["event_id"] == "$sent:example.org"
    assert said["error"] == "ContextMethodError: PermissionError: M_FORBIDDEN: not joined to !broken:example.org"
    assert stats(registry, "speak").failures == 0
    assert seen(out)["pid"] != os.getpid()


async def test_isolated_plugin_hook_that_lets_a_method_error_through_fails_with_its_message(
    isolated, hook_context_factory
):
    registry, _ = isolated
    room = Room()

    await speak(registry, hook_context_factory, room, "speak loudly")

    assert stats(registry, "speak").failures == 1
    assert "M_FORBIDDEN: not joined to !broken:example.org" in (stats(registry, "speak").last_error or "")
    assert len(room.sent) == 1
    await speak(registry, hook_context_factory, room, "speak")  # the same worker goes on serving
    assert len(room.sent) == 2 and stats(registry, "speak").failures == 1


async def test_isolated_plugin_method_call_of_a_worker_stopped_meanwhile_is_refused(isolated, hook_context_factory):
    registry, _ = isolated
    room = Room()
    room.release = asyncio.Event()
    call = asyncio.create_task(speak(registry, hook_context_factory, room, "speak twice"))
    await eventually(lambda: room.asked == 1, "the worker's send_message to reach the daemon")

    registry.isolated.close()  # a reload or the shutdown, while the daemon runs the worker's `send_message`
    room.release.set()
    await call

    assert stats(registry, "speak").failures == 1
    assert "context method send_message refused: its worker was stopped" in (stats(registry, "speak").last_error or "")
    assert len(room.sent) == 1  # the first call ran before the stop; the worker never got to the second


async def test_isolated_plugin_with_every_hook_turned_off_runs_no_worker(isolated, tmp_path):
    registry, out = isolated
    running = registry.isolated.plugins["guarded"]
    assert running._process is not None and running._process.poll() is None  # started with the registry
    folder = tmp_path / "plugins" / "guarded"
    off = {name: {"enabled": False} for name in ("watch", "speak", "slow")}
    entry = PluginEntryConfig(path=str(folder), settings={"out": str(out)}, isolated=True, hooks=off)

    quiet = HookRegistry.from_plugins([load_plugin_dir(folder, entry_config=entry)], previous=registry)

    assert list(quiet.all_hooks()) == [] and quiet.isolated.plugins == {}
    assert running._process is None  # the reload stopped the one it had
    fresh = HookRegistry.from_plugins([load_plugin_dir(folder, entry_config=entry)])
    assert fresh.isolated.plugins == {}
