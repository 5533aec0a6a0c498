"""`!auto_approve` through the pipeline: a person opens, shows and ends their window, and clients are told; and
a card's timed approval, given and stopped by reactions."""

from __future__ import annotations

import pytest

from mindroom.bots.approvals.auto_approve_command import AUTO_APPROVE_EVENT_TYPE
from mindroom.bots.approvals.desk import APPROVAL_CONTENT_KEY
from mindroom.hooks.context import MessageEnvelope
from mindroom.testing.model_server import Text, ToolCall
from tests.bots.bench import ALICE, BOB, LOBBY, Bench, until

pytestmark = pytest.mark.asyncio

HELPER = {"helper": {"display_name": "Helper", "rooms": ["lobby"]}}


async def command(bench: Bench, body: str, *, sender: str = ALICE, thread: str | None = "$root", **extra) -> str:
    """Send `body` in the lobby's thread `thread`; returns the router's answer."""
    router = bench.client("router")
    before = len(router.messages)
    await bench.deliver(bench.server.message(LOBBY, sender, body, thread_root=thread, extra_content=extra or None))
    await bench.settle()
    assert len(router.messages) == before + 1, [m.body for m in router.messages]
    return router.messages[-1].body


async def test_auto_approve_opens_shows_and_ends_a_window_in_the_thread(make_bench):
    bench = await make_bench(HELPER)
    timed = bench.desk.timed

    opened = await command(bench, "!auto_approve 30")

    assert opened.startswith("⚠️ Auto-approve for all your tool calls is on in this thread until ")
    window = timed.window(LOBBY, "$root", ALICE)
    assert window is not None and round(window.expires_at - window.set_at) == 1800
    assert timed.window(LOBBY, "$root", BOB) is None
    state = bench.server.state[(LOBBY, AUTO_APPROVE_EVENT_TYPE, bench.user_id("router"))]
    assert [(w["thread_id"], w["requester_id"]) for w in state["windows"]] == [("$root", ALICE)]
    assert (await command(bench, "!auto_approve")).startswith("⚠️ Auto-approve for all your tool calls is on in this")

    assert (await command(bench, "!auto_approve off")).startswith("✅ Auto-approve for all your tool calls is off")
    assert timed.window(LOBBY, "$root", ALICE) is None
    assert bench.server.state[(LOBBY, AUTO_APPROVE_EVENT_TYPE, bench.user_id("router"))] == {"windows": []}
    assert await command(bench, "!auto_approve off") == "Auto-approve for all your tool calls is not on in this thread."
    assert (await command(bench, "!auto_approve")).startswith("Auto-approve for all your tool calls is off in this")


@pytest.mark.parametrize(
    ("given", "seconds"),
    [("2h", 7200), ("90", 5400), ("5 min", 300), ("1", 60), ("24 hours", 86400)],
)
async def test_auto_approve_reads_minutes_and_hours(make_bench, given: str, seconds: int):
    bench = await make_bench(HELPER)

    await command(bench, f"!auto_approve {given}", thread=None)

    window = bench.desk.timed.window(LOBBY, None, ALICE)  # outside a thread: the whole room
    assert window is not None and round(window.expires_at - window.set_at) == seconds


@pytest.mark.parametrize("given", ["0", "25h", "1441", "soon", "-5", "1.5h"])
async def test_auto_approve_refuses_a_duration_outside_a_minute_to_a_day(make_bench, given: str):
    bench = await make_bench(HELPER)

    answer = await command(bench, f"!auto_approve {given}")

    assert answer.startswith("❌ Choose a duration from 1 minute to 24 hours")
    assert bench.desk.timed.window(LOBBY, "$root", ALICE) is None


async def test_auto_approve_an_agent_cannot_turn_it_on_for_a_person(make_bench):
    bench = await make_bench(HELPER)
    run = bench.commands.get("auto_approve").run
    on_behalf = MessageEnvelope(
        source_event_id="$ask",
        room_id=LOBBY,
        thread_id="$root",
        resolved_thread_id="$root",
        requester_id=ALICE,
        sender_id=bench.user_id("helper"),
        body="!auto_approve 30",
        attachment_ids=(),
        mentioned_agents=(),
        agent_name="router",
        source_kind="message",
    )

    answer = await run(bench.bots["router"], bench.daemon.live, on_behalf, "30")

    assert answer == "❌ Only a person can turn on auto-approve, for themselves."
    assert bench.desk.timed.window(LOBBY, "$root", ALICE) is None


# -- timed approval from a card, through the pipeline ------------------------------------------------------

RULED = {"helper": {"display_name": "Helper", "rooms": ["lobby"], "tools": ["calculator"]}}
RULES = {"rules": [{"match": "calculate", "action": "require_approval"}]}


async def ask_in_thread(bench: Bench, model_server, body: str, root: str | None) -> str:
    """Alice asks in the thread `root` (None: starts one); the helper calls `calculate`; returns her message id."""
    model_server.script(ToolCall("calculate", {"expression": "6 * 7"}), Text("It is 42."))
    question = bench.server.message(LOBBY, ALICE, body, thread_root=root)
    await bench.deliver(question)
    return question.event_id


def cards(bench: Bench) -> list:
    return [m for m in bench.client("helper").messages if APPROVAL_CONTENT_KEY in m.content]


def answers(bench: Bench) -> list[str]:
    return [m.body for m in bench.client("helper").messages if m.body == "It is 42."]


async def test_auto_approve_a_card_reacted_with_ten_minutes_lets_the_next_call_through_until_stopped(
    make_bench, model_server
):
    bench = await make_bench(RULED, tool_approval=RULES)
    root = await ask_in_thread(bench, model_server, "six times seven?", None)
    await until(lambda: cards(bench))
    [card] = cards(bench)
    assert card.content[APPROVAL_CONTENT_KEY]["auto_approve_options"] == [300, 600, 1800]

    await bench.deliver(bench.server.reaction(LOBBY, BOB, card.event_id, "🔟"))  # not the requester's to give
    await bench.deliver(bench.server.reaction(LOBBY, ALICE, card.event_id, "🔟"))
    await bench.settle()
    assert answers(bench) == ["It is 42."]
    assert bench.client("helper").edits[-1].content["m.new_content"][APPROVAL_CONTENT_KEY]["auto_approval"]

    await ask_in_thread(bench, model_server, "and again?", root)
    await bench.settle()
    assert answers(bench) == ["It is 42."] * 2 and len(cards(bench)) == 1  # no card this time

    await bench.deliver(bench.server.reaction(LOBBY, ALICE, card.event_id, "❌"))  # stops the grant
    await bench.settle()
    await ask_in_thread(bench, model_server, "once more?", root)
    await until(lambda: len(cards(bench)) == 2)
    await bench.deliver(bench.server.reaction(LOBBY, ALICE, cards(bench)[1].event_id, "✅"))
    await bench.settle()
    assert answers(bench) == ["It is 42."] * 3
