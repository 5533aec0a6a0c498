"""`!auto_approve`: a person lets their tool calls in one conversation run without approval cards for a while.

- `!auto_approve 30` (minutes; also `30m`, `30min`), `!auto_approve 2h` (also `hr`, `hours`): from 1 minute
  to 24 hours. It covers every agent's calls that would ask the sender, in this thread (sent outside a
  thread: anywhere in the room), and approves the sender's cards already waiting there.
- `!auto_approve off` ends it (grants given on cards keep running until they end or are stopped there).
- `!auto_approve` alone says whether it is on, and until when.

Only a person may turn it on, for themselves: a message an agent sends on someone's behalf cannot. The
window is kept in the state (it survives restarts and reloads), and the room's open windows are published
as the room state event `io.mindroom.auto_approve` (state key: the answering bot), for clients to show.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from mindroom.bots.approvals.desk import ApprovalDesk
from mindroom.bots.approvals.timed_approvals import TimedApprovals, until_text
from mindroom.bots.commands.table import Command
from mindroom.bots.runtime import Entity, LiveState
from mindroom.hooks.context import MessageEnvelope
from mindroom.logging_config import get_logger
from mindroom.tool_system.approval_grants import parse_auto_approve_duration

__all__ = ["AUTO_APPROVE_EVENT_TYPE", "auto_approve_command"]

logger = get_logger(__name__)

AUTO_APPROVE_EVENT_TYPE = "io.mindroom.auto_approve"
"""The room state event listing the room's open windows (MindRoom's name)."""
_USAGE = (
    "Usage: `!auto_approve <minutes>`, `!auto_approve <hours>h`, `!auto_approve off`,"
    " or `!auto_approve` to show the current window"
)


async def _publish(entity: Entity, timed: TimedApprovals, room_id: str) -> None:
    """Tell clients the room's open windows; a refused write is logged and undoes nothing."""
    content = {
        "windows": [
            {"thread_id": w.thread_id, "requester_id": w.requester_id, "expires_at": until_text(w.expires_at)}
            for w in timed.room_windows(room_id)
        ]
    }
    client = entity.client
    try:
        written = await client.put_room_state(room_id, AUTO_APPROVE_EVENT_TYPE, client.user_id, content)
    except Exception as exc:  # the window holds whether or not clients are told
        logger.warning("auto-approve windows not published", room_id=room_id, error=str(exc))
        return
    if not written:
        logger.warning("auto-approve windows not published", room_id=room_id, error="refused")


def auto_approve_command(desk: ApprovalDesk, bot_user_ids: Callable[[], Collection[str]]) -> Command:
    """`!auto_approve` on `desk` (which keeps timed approvals), for the orchestrator to register."""
    timed = desk.timed
    if timed is None:
        msg = "!auto_approve needs an approval desk that keeps timed approvals"
        raise ValueError(msg)

    async def run(entity: Entity, live: LiveState, envelope: MessageEnvelope, args: str) -> str:
        person = envelope.sender_id
        if person != envelope.requester_id or person in bot_user_ids():
            return "❌ Only a person can turn on auto-approve, for themselves."
        room_id, thread_id = envelope.room_id, envelope.thread_id
        place = "this thread" if thread_id is not None else "this room"
        requested = args.strip().lower()
        if not requested:
            window = timed.window(room_id, thread_id, person)
            if window is None:
                return f"Auto-approve for all your tool calls is off in {place}.\n\n{_USAGE}"
            return (
                f"⚠️ Auto-approve for all your tool calls is on in {place} until {until_text(window.expires_at)}."
                "\n\nUse `!auto_approve off` to end it."
            )
        if requested == "off":
            if not timed.close_window(room_id, thread_id, person):
                return f"Auto-approve for all your tool calls is not on in {place}."
            await _publish(entity, timed, room_id)
            return (
                f"✅ Auto-approve for all your tool calls is off in {place}; they follow the usual approval rules"
                " again. A tool you allowed for a while from an approval card stays allowed until its time ends"
                " or you stop it on that card."
            )
        seconds = parse_auto_approve_duration(requested)
        if seconds is None:
            return f"❌ Choose a duration from 1 minute to 24 hours, such as `30` or `2h`.\n\n{_USAGE}"
        window = timed.open_window(room_id, thread_id, person, seconds)
        await _publish(entity, timed, room_id)
        approved = await desk.approve_waiting(room_id, thread_id, person)
        approved_text = f" Approved {approved} waiting tool call{'s' if approved != 1 else ''}." if approved else ""
        return (
            f"⚠️ Auto-approve for all your tool calls is on in {place} until {until_text(window.expires_at)}:"
            f" they run without asking for approval.{approved_text}\n\nUse `!auto_approve off` to end it."
        )

    return Command("auto_approve", "your tool calls here run without approval for a while (30, 2h, off)", run)
