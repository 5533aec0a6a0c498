"""The unreadable-message notice: which messages are news enough for one (the pipeline's clock allowance)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from mindroom.bots import ingress
from mindroom.matrix.crypto.unreadable_notices import UnreadableNotices
from mindroom.matrix.events import CLOCK_SKEW_MS, MatrixEvent

START_MS = 1_700_000_000_000
ROUTER = "@mindroom_router:hs"


@dataclass
class Router:
    """The router's side of the notices: its identity, the room's members, and what it sent."""

    bot_name: str = "router"
    user_id: str = ROUTER
    server_name: str = "hs"
    started_ms: int = START_MS
    sent: list[tuple[str, str]] = field(default_factory=list)

    async def room_members(self, room_id: str) -> list[str]:
        return [ROUTER, "@ann:hs"]

    async def send_message(self, room_id: str, body: str, **where: object) -> str:
        self.sent.append((room_id, body))
        return f"$notice{len(self.sent)}"


def _unreadable(ts: int) -> MatrixEvent:
    return MatrixEvent("!r", f"$at{ts}", "@ann:hs", "m.room.encrypted", {}, ts, encrypted=True)


def test_unreadable_notices_use_the_pipelines_clock_allowance():
    assert ingress.CLOCK_SKEW_MS is CLOCK_SKEW_MS  # one constant: the pipeline and the notices agree


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("ts", "answered"),
    [
        pytest.param(START_MS - CLOCK_SKEW_MS, True, id="at-skew-limit"),
        pytest.param(START_MS - CLOCK_SKEW_MS - 1, False, id="just-outside-skew"),
        pytest.param(START_MS + 5, True, id="after-start"),
    ],
)
async def test_unreadable_notices_answer_messages_within_the_clock_allowance(ts: int, answered: bool):
    router = Router()

    await UnreadableNotices(router, "mindroom_").answer(_unreadable(ts))

    assert bool(router.sent) is answered
