"""The typing notice of a turn: shown only when the model takes a while, and then always cleared."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from mindroom.bots.reply import TYPING_DELAY_S, typing_notice

pytestmark = pytest.mark.asyncio


class _Channel:
    """Records what the turn asked the homeserver to show."""

    def __init__(self) -> None:
        self.entity = SimpleNamespace(name="helper")
        self.shown: list[bool] = []

    async def typing(self, on: bool) -> None:
        self.shown.append(on)


async def test_a_quick_answer_shows_no_typing_notice() -> None:
    channel = _Channel()
    async with typing_notice(channel):  # type: ignore[arg-type]
        await asyncio.sleep(TYPING_DELAY_S / 10)
    assert channel.shown == []


async def test_a_slow_answer_shows_the_notice_then_clears_it() -> None:
    channel = _Channel()
    async with typing_notice(channel):  # type: ignore[arg-type]
        await asyncio.sleep(TYPING_DELAY_S + 0.2)
        assert channel.shown == [True]
    assert channel.shown == [True, False]


async def _fail_slowly(channel: _Channel) -> None:
    async with typing_notice(channel):  # type: ignore[arg-type]
        await asyncio.sleep(TYPING_DELAY_S + 0.2)
        raise RuntimeError("model failed")


async def test_a_failed_turn_still_clears_the_notice() -> None:
    channel = _Channel()
    with pytest.raises(RuntimeError):
        await _fail_slowly(channel)
    assert channel.shown == [True, False]
