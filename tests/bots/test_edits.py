"""`EditBursts`: the newest edit of a question wins; only an edit that came during another's turn waits."""

from __future__ import annotations

import asyncio
import time

import pytest

from mindroom.bots import edits
from mindroom.bots.edits import EDIT_QUIET_S, EditBursts


def test_edit_bursts_a_newer_edit_supersedes_and_the_record_ends_with_the_newest_turn():
    bursts = EditBursts()
    with bursts.arrived("helper", "$q", "$e1") as first:
        assert first is not None and not first.burst and not first.superseded()
        with bursts.arrived("helper", "$q", "$e2") as second, bursts.arrived("helper", "$other", "$e3") as other:
            assert second is not None and second.burst and first.superseded()
            assert other is not None and not other.burst
        assert first.superseded()  # the newer one's turn ended; this one still gave way
    assert bursts.newest(("helper", "$q")) is None
    with bursts.arrived("helper", None, "$plain") as none:
        assert none is None


@pytest.mark.asyncio
async def test_edit_bursts_a_lone_edit_does_not_wait(monkeypatch):
    monkeypatch.setattr(edits, "EDIT_QUIET_S", 3600.0)  # a lone edit that waited would wait an hour
    bursts = EditBursts()
    with bursts.arrived("helper", "$q", "$e1") as alone:
        assert alone is not None
        assert await asyncio.wait_for(alone.settled(), 60)  # the guard fails a wait instead of hanging the suite


@pytest.mark.asyncio
async def test_edit_bursts_only_an_edit_of_a_burst_waits_for_a_quiet_moment():
    bursts = EditBursts()
    with bursts.arrived("helper", "$q", "$e1") as alone:
        assert alone is not None
        started = time.monotonic()
        assert await alone.settled()
        with bursts.arrived("helper", "$q", "$e2") as newer:
            assert newer is not None and not await alone.settled()
            assert await newer.settled()
            assert time.monotonic() - started >= EDIT_QUIET_S * 0.9
