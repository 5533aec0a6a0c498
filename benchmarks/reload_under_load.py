"""Hot reload under load: no message lost or answered twice while plugins and config change underneath.

Starts its own Synapse and scripted model server and runs the daemon in-process with its file
watcher on. A client sends 300 messages over about 30 s (each its own thread) while, every 2.5 s,
the plugin or the config is edited: hook code, plugin settings, an agent added and removed, the
serving agent's instructions changed (a restart under load) and one invalid edit (a syntax error,
which must keep the last good state). Prints reloads done, the time from file save to the new
registry being active (p50, max), and messages sent, answered, lost and duplicated.

Usage: python benchmarks/reload_under_load.py   (BENCH_MESSAGES, BENCH_SECONDS to change the load)
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nio
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mindroom.config.environment import DaemonEnvironment, HomeserverSettings  # noqa: E402
from mindroom.daemon.orchestrator import Orchestrator  # noqa: E402
from mindroom.daemon.reload import ReloadOutcome  # noqa: E402
from mindroom.logging_config import configure_logging  # noqa: E402
from mindroom.testing.homeserver import TestHomeserver  # noqa: E402
from mindroom.testing.model_server import ScriptedModelServer, Text  # noqa: E402
from tests.integration.support import HumanClient, ReloadLog  # noqa: E402

MESSAGES = int(os.environ.get("BENCH_MESSAGES", "300"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "30"))
EDIT_EVERY_S = 2.5
DRAIN_S = 30.0
OVERALL_TIMEOUT_S = 240.0

HOOKS = """
from mindroom.hooks import hook

@hook("message:before_response")
async def stamp(ctx):
    ctx.draft.response_text += " [VERSION/" + str(ctx.settings.get("tag")) + "]"
"""


class Deployment:
    """The config directory the daemon watches, and the edits the benchmark makes to it."""

    def __init__(self, root: Path, config: dict[str, Any]) -> None:
        self.config_path = root / "config.yaml"
        self.hooks_path = root / "plugins" / "stamp" / "hooks.py"
        self.hooks_path.parent.mkdir(parents=True)
        (self.hooks_path.parent / "mindroom.plugin.json").write_text(
            json.dumps({"name": "stamp", "hooks_module": "hooks.py"})
        )
        self.config = config
        self.write_hooks("v1")
        self.write_config()

    def write_hooks(self, version: str, *, broken: bool = False) -> None:
        self.hooks_path.write_text(HOOKS.replace("VERSION", version) + ("\ndef broken(:\n" if broken else ""))

    def write_config(self) -> None:
        self.config_path.write_text(yaml.safe_dump(self.config, sort_keys=False))


def _edits(deploy: Deployment, names: dict[str, str]) -> list[tuple[str, bool, Callable[[], None]]]:
    """(label, expected to apply, the edit), in order."""
    agents, plugin = deploy.config["agents"], deploy.config["plugins"][0]

    def tag(value: str) -> Callable[[], None]:
        def edit() -> None:
            plugin["settings"]["tag"] = value
            deploy.write_config()

        return edit

    def add_spare() -> None:
        agents[names["spare"]] = {"display_name": "Spare", "role": "Stands by.", "rooms": [names["annex"]]}
        deploy.write_config()

    def remove_spare() -> None:
        del agents[names["spare"]]
        deploy.write_config()

    def reinstruct() -> None:
        agents[names["helper"]]["instructions"] = ["Answer briefly."]
        deploy.write_config()

    return [
        ("plugin code v2", True, lambda: deploy.write_hooks("v2")),
        ("plugin settings", True, tag("b")),
        ("plugin code v3", True, lambda: deploy.write_hooks("v3")),
        ("add an agent", True, add_spare),
        ("plugin syntax error", False, lambda: deploy.write_hooks("v4", broken=True)),
        ("plugin fixed v5", True, lambda: deploy.write_hooks("v5")),
        ("serving agent changed", True, reinstruct),
        ("plugin code v6", True, lambda: deploy.write_hooks("v6")),
        ("remove the agent", True, remove_spare),
        ("plugin code v7", True, lambda: deploy.write_hooks("v7")),
        ("plugin settings", True, tag("c")),
        ("plugin code v8", True, lambda: deploy.write_hooks("v8")),
    ]


async def _edit_loop(
    deploy: Deployment, names: dict[str, str], reloads: ReloadLog, stop_at: float
) -> list[tuple[str, bool, ReloadOutcome, float]]:
    results = []
    for label, expected, edit in _edits(deploy, names):
        if time.monotonic() > stop_at - 1.0:
            break
        started = time.monotonic()
        saved = time.time()
        edit()
        outcome = await reloads.wait(saved, timeout_s=30)
        results.append((label, expected, outcome, saved))
        await asyncio.sleep(max(0.0, EDIT_EVERY_S - (time.monotonic() - started)))
    return results


async def _send_loop(human: HumanClient, room_id: str) -> list[str]:
    """Send on a fixed timetable, each send in its own task, so a slow request does not stretch the run."""
    interval = SECONDS / MESSAGES
    start = time.monotonic()
    sends = []
    for index in range(MESSAGES):
        await asyncio.sleep(max(0.0, start + index * interval - time.monotonic()))
        sends.append(asyncio.create_task(human.send(room_id, f"message {index}")))
    return list(await asyncio.gather(*sends))


async def _timeline(human: HumanClient, room_id: str) -> list[dict[str, Any]]:
    """Every event of the room as the server stores it (paginated, so nothing a busy sync skipped is missed)."""
    events: list[dict[str, Any]] = []
    start: str | None = None
    while True:
        page = await human.client.room_messages(room_id, start=start, limit=500)
        if not isinstance(page, nio.RoomMessagesResponse):
            raise RuntimeError(f"cannot read the room: {page}")
        events.extend(dict(event.source) for event in page.chunk)
        if not page.chunk or page.end is None:
            return events
        start = page.end


async def _answers(human: HumanClient, room_id: str, agent_user: str) -> Counter[str]:
    """Answers per question, plus `version:<stamp>` keys counting which plugin code stamped them."""
    counts: Counter[str] = Counter()
    for event in await _timeline(human, room_id):
        content = event.get("content", {})
        relates = content.get("m.relates_to", {}) if isinstance(content, dict) else {}
        if event.get("sender") == agent_user and relates.get("rel_type") == "m.thread":
            counts[str(relates.get("event_id"))] += 1
            stamp = re.search(r"\[(v\d+/\w+)\]$", str(content.get("body", "")))
            counts[f"version:{stamp.group(1) if stamp else '?'}"] += 1
    return counts


async def _wait_answered(human: HumanClient, room_id: str, sent: list[str], agent_user: str) -> Counter[str]:
    deadline = time.monotonic() + DRAIN_S
    while time.monotonic() < deadline:
        counts = await _answers(human, room_id, agent_user)
        if all(counts[event_id] for event_id in sent):
            break
        await asyncio.sleep(1.0)
    await asyncio.sleep(2.0)  # duplicates would arrive late: give them the chance
    return await _answers(human, room_id, agent_user)


async def _wait_joined(human: HumanClient, room_id: str) -> None:
    for _ in range(300):
        rooms = await human.client.joined_rooms()
        if room_id in getattr(rooms, "rooms", []):
            return
        await asyncio.sleep(0.1)
    raise TimeoutError("the client never joined the room")


async def run(homeserver: TestHomeserver, model: ScriptedModelServer, root: Path) -> None:
    uid = secrets.token_hex(3)
    names = {"helper": f"helper{uid}", "spare": f"spare{uid}", "room": f"bench{uid}", "annex": f"annex{uid}"}
    user = homeserver.register_user(f"bench{uid}", "bench-password")
    human = HumanClient(homeserver.url, user.user_id, user.password)
    await human.start()
    model_cfg = {
        "provider": "openai",
        "id": "agent-model",
        "extra_kwargs": {"base_url": model.base_url, "max_retries": 0},
    }
    config = {
        "models": {"default": model_cfg},
        "agents": {names["helper"]: {"display_name": "Helper", "role": "Helps.", "rooms": [names["room"]]}},
        "authorization": {"global_users": [user.user_id]},
        "room_defaults": {"invite_users": [user.user_id]},
        "defaults": {"enable_streaming": False},
        "plugins": [{"path": "plugins/stamp", "settings": {"tag": "a"}}],
    }
    deploy = Deployment(root, config)
    settings = HomeserverSettings(
        homeserver.url, homeserver.server_name, homeserver.registration_shared_secret, f"rl{uid}_"
    )
    reloads = ReloadLog()
    daemon = Orchestrator(
        DaemonEnvironment(deploy.config_path.resolve(), (root / "data").resolve(), {}, settings), on_reload=reloads.add
    )
    try:
        running = await daemon.start()
        room_id = running.directory.room_ids[names["room"]]
        agent_user = running.directory.bot_user_ids[names["helper"]]
        await _wait_joined(human, room_id)
        await asyncio.sleep(0.5)  # the watcher is up
        began = time.monotonic()
        sent, edits = await asyncio.gather(
            _send_loop(human, room_id), _edit_loop(deploy, names, reloads, began + SECONDS)
        )
        send_s = time.monotonic() - began
        counts = await _wait_answered(human, room_id, sent, agent_user)
    finally:
        await daemon.stop()
        await human.close()
    _report(sent, counts, edits, send_s)


def _report(
    sent: list[str], counts: Counter[str], edits: list[tuple[str, bool, ReloadOutcome, float]], send_s: float
) -> None:
    applied = [(label, outcome, saved) for label, expected, outcome, saved in edits if outcome.ok]
    rejected = [(label, outcome) for label, _, outcome, _ in edits if not outcome.ok]
    unexpected = [label for label, expected, outcome, _ in edits if outcome.ok != expected]
    delays = [outcome.activated_at - saved for _, outcome, saved in applied if outcome.activated_at is not None]
    answered = sum(1 for event_id in sent if counts[event_id] >= 1)
    duplicated = sum(1 for event_id in sent if counts[event_id] > 1)
    print(f"{'edit':<24}{'applied':>8}{'save->active s':>16}{'save->done s':>14}")
    for label, _, outcome, saved in edits:
        active = f"{outcome.activated_at - saved:.3f}" if outcome.activated_at is not None else "-"
        done = f"{outcome.finished_at - saved:.3f}" if outcome.finished_at is not None else "-"
        print(f"{label:<24}{'yes' if outcome.ok else 'no':>8}{active:>16}{done:>14}")
    for label, outcome in rejected:
        print(f"rejected: {label}: {outcome.error}")
    if unexpected:
        print(f"UNEXPECTED outcome for: {', '.join(unexpected)}")
    print(f"reloads done: {len(applied)} applied, {len(rejected)} rejected (last good state kept)")
    if delays:
        print(f"save -> new registry active: p50 {statistics.median(delays):.3f} s, max {max(delays):.3f} s")
    print(f"messages sent: {len(sent)} in {send_s:.1f} s")
    print(f"answered: {answered}, lost: {len(sent) - answered}, duplicated: {duplicated}")
    versions = sorted((key.split(":", 1)[1], n) for key, n in counts.items() if key.startswith("version:"))
    print("answers by plugin code/settings: " + ", ".join(f"{version} {n}" for version, n in versions))
    lost = [index for index, event_id in enumerate(sent) if not counts[event_id]]
    if lost:
        print(f"lost messages (by index): {lost}")


async def main() -> None:
    configure_logging("WARNING")
    with (
        tempfile.TemporaryDirectory(prefix="mindroom-reload-bench-") as tmp,
        TestHomeserver() as homeserver,
        ScriptedModelServer() as model,
    ):
        model.set_default(Text("ok"), model="agent-model")
        async with asyncio.timeout(OVERALL_TIMEOUT_S):
            await run(homeserver, model, Path(tmp))


if __name__ == "__main__":
    asyncio.run(main())
