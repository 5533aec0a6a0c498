"""A real start on Synapse, phase by phase: the daemon enters the phases docs/operations.md lists, in that order,
and its stop takes back what each phase started, the phases backwards, as the same section says."""

from __future__ import annotations

import asyncio

import pytest
from structlog.testing import capture_logs

from tests.daemon.startup.test_plan import documented_startup
from tests.integration.conftest import E2E

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def test_startup_enters_the_documented_phases_and_stops_them_backwards(each_delivery: E2E):
    e2e = each_delivery
    human = await e2e.human()
    agent, room = e2e.name("helper"), e2e.name("room")
    daemon = await e2e.start(e2e.basic_config([human.user_id], {agent: {"display_name": "Helper", "rooms": [room]}}))
    phases, parts = documented_startup()

    assert daemon.progress is not None and list(daemon.progress.phases) == phases
    receiving = e2e.delivery == "appservice"  # only then is there a listener to stop before the bots
    assert [part.name for part in daemon.progress.stop_order()] == [
        part for part in parts if part != "appservice" or receiving
    ]
    with capture_logs() as logs:
        await asyncio.wait_for(daemon.stop(), 60)

    events = [entry["event"] for entry in logs]
    assert events[0] == "daemon stopping" and events[-1] == "daemon stopped"
    assert "a part did not stop cleanly" not in events
    assert daemon.progress is None and daemon.running is None and daemon.bots == {} and daemon.state is None
