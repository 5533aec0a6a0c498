"""The start-up's order: stated once, as docs/operations.md lists it; entered in turn; stopped backwards."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from mindroom.daemon.startup.plan import STARTUP, RunProgress, Stopping

DOCS = Path(__file__).resolve().parents[3] / "docs" / "operations.md"


def documented_startup() -> tuple[list[str], list[str]]:
    """The phases docs/operations.md lists under "Start-up and shutdown", and the parts a stop takes in turn."""
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("\n## Start-up and shutdown\n", 1)[1].split("\n## ", 1)[0]
    phases = re.findall(r"^\d+\. \*\*([^*]+)\*\*:", section, flags=re.MULTILINE)
    stop = " ".join(section.split("A stop takes the phases backwards, one part at a time:", 1)[1].split())
    parts = re.findall(r"`([^`]+)`", stop.split(". A part that fails", 1)[0])
    return phases, parts


def test_plan_startup_is_the_order_the_operations_doc_lists() -> None:
    phases, parts = documented_startup()

    assert phases == list(STARTUP)
    assert parts[0] == "reloader" and parts[-1] == "state" and len(parts) == len(set(parts))


def test_plan_progress_refuses_a_phase_out_of_turn() -> None:
    progress = RunProgress()
    progress.enter("live state")

    with pytest.raises(RuntimeError, match=r"'run' out of order: the next is 'state'"):
        progress.enter("run")
    with pytest.raises(RuntimeError, match="out of order"):
        progress.enter("live state")  # a phase entered twice
    with pytest.raises(RuntimeError, match="out of order"):
        progress.enter("state ")  # a near miss of the next name
    assert progress.phases == ("live state",)


def test_plan_progress_past_the_last_phase_is_refused() -> None:
    progress = RunProgress(("first", "last"))
    progress.enter("first")
    progress.enter("last")

    with pytest.raises(RuntimeError, match=r"'last' out of order: the next is None"):
        progress.enter("last")


@pytest.mark.asyncio
async def test_plan_stop_order_runs_the_phases_backwards_each_in_its_own_order() -> None:
    progress = RunProgress(("state", "run", "quiet", "accounts"))
    stopped: list[tuple[str, str, float]] = []

    def part(name: str):
        async def stop(stopping: Stopping) -> None:
            stopped.append((name, stopping.reason, stopping.grace_s))

        return stop

    progress.enter("state").add("state", part("state"))
    run = progress.enter("run")
    run.add("memory", part("memory"))
    run.add("tools", part("tools"))
    progress.enter("quiet")  # a phase that starts nothing has nothing to stop
    accounts = progress.enter("accounts")
    accounts.add("appservice", part("appservice"))
    accounts.add("bots", part("bots"))

    order = progress.stop_order()
    for each in order:
        await each.stop(Stopping("shutdown", 3.0))

    assert [each.name for each in order] == ["appservice", "bots", "memory", "tools", "state"]
    assert [(name, reason) for name, reason, _grace in stopped] == [
        (name, "shutdown") for name in ["appservice", "bots", "memory", "tools", "state"]
    ]
    assert all(2.0 < grace <= 3.0 for _name, _reason, grace in stopped)


@pytest.mark.asyncio
async def test_stop_parts_share_one_grace_each_getting_what_is_left() -> None:
    progress = RunProgress(("run",))
    seen: list[tuple[str, float]] = []

    def waiting(name: str, waits_s: float) -> Any:
        async def stop(stopping: Stopping) -> None:
            seen.append((name, stopping.grace_s))
            await asyncio.sleep(min(waits_s, stopping.grace_s))

        return stop

    run = progress.enter("run")
    run.add("memory", waiting("memory", 0.0))
    run.add("background hooks", waiting("background hooks", 10.0))  # waits out all that is left
    run.add("bots", waiting("bots", 0.3))
    stopping = Stopping("shutdown", 0.4)
    for part in progress.stop_order():
        await part.stop(stopping)

    assert [name for name, _grace in seen] == ["memory", "background hooks", "bots"]
    assert 0.3 < seen[0][1] <= 0.4 and 0.3 < seen[1][1] <= 0.4
    assert seen[2][1] == 0.0  # the one before it used the grace up: no second grace
