"""Room members: which membership events are announced, and how (once, by the router, at least once)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mindroom.bots.ingress import CLOCK_SKEW_MS, IngressDrop
from mindroom.bots.members import MemberChange, MemberHandler, classify_member_event
from mindroom.bots.pipeline_capabilities import RunClock
from mindroom.bots.recovery import recover_interrupted
from mindroom.bots.runtime import LiveState
from mindroom.config.main import Config
from mindroom.config.plugin import PluginEntryConfig
from mindroom.daemon.wiring import RunningDaemon
from mindroom.hooks import EVENT_ROOM_MEMBER_JOINED, EVENT_ROOM_MEMBER_LEFT, HookRegistry, hook
from mindroom.matrix import MatrixEvent, MatrixEventKind
from tests.bots.support import close_stores, unit_daemon

ROUTER = "@mindroom_router:localhost"
HELPER = "@mindroom_helper:localhost"
RETIRED = "@mindroom_retired:localhost"  # an agent this daemon no longer runs: still one of its accounts
BOTS = {"router": ROUTER, "helper": HELPER}
ALICE = "@alice:localhost"
MOD = "@mod:localhost"
LOBBY = "!lobby:localhost"
START_MS = 1_700_000_000_000
NEITHER = IngressDrop("not a join or a leave")
PROFILE = {"membership": "join", "displayname": "Alice", "avatar_url": "mxc://localhost/a"}


def member(
    membership: str,
    prev: dict[str, Any] | None = None,
    *,
    user: str = ALICE,
    sender: str | None = None,
    ts: int = START_MS + 1000,
    event_id: str = "$member",
    **content: Any,
) -> MatrixEvent:
    return MatrixEvent(
        LOBBY,
        event_id,
        sender or user,
        "m.room.member",
        {"membership": membership, **content},
        ts,
        state_key=user,
        prev_content=prev,
    )


def classify(event: MatrixEvent, *, replay: bool = False) -> MemberChange | IngressDrop:
    return classify_member_event(
        event,
        started_at_ms=START_MS,
        bot_user_ids=set(BOTS.values()),
        server_name="localhost",
        account_prefix="mindroom_",
        replay=replay,
    )


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        pytest.param(member("join"), "joined", id="first-join"),
        pytest.param(member("join", {"membership": "invite"}), "joined", id="invited-then-joined"),
        pytest.param(member("join", {"membership": "leave"}), "joined", id="rejoined"),
        pytest.param(member("join", PROFILE, displayname="Ally"), IngressDrop("profile change"), id="profile-change"),
        pytest.param(member("leave", PROFILE), "left", id="left"),
        pytest.param(member("leave", PROFILE, sender=MOD), IngressDrop("removed by someone else"), id="kicked"),
        pytest.param(member("ban", PROFILE, sender=MOD), NEITHER, id="banned"),
        pytest.param(member("leave", {"membership": "invite"}), NEITHER, id="invite-refused"),
        pytest.param(member("leave"), NEITHER, id="leave-without-prev-content"),
        pytest.param(member("invite", sender=MOD), NEITHER, id="invited"),
        pytest.param(member("knock"), NEITHER, id="knock"),
        pytest.param(member("join", user=HELPER), IngressDrop("a bot's membership"), id="agent-joins"),
        pytest.param(member("leave", PROFILE, user=ROUTER), IngressDrop("a bot's membership"), id="router-leaves"),
        pytest.param(member("join", user=RETIRED), IngressDrop("a bot's membership"), id="other-daemon-account"),
        pytest.param(member("join", user="@mindroom_x:elsewhere"), "joined", id="same-prefix-other-server"),
        pytest.param(member("join", ts=START_MS - CLOCK_SKEW_MS - 1), IngressDrop("older than this run"), id="old"),
        pytest.param(member("join", ts=START_MS - CLOCK_SKEW_MS), "joined", id="within-clock-skew"),
        pytest.param(
            MatrixEvent(LOBBY, "$m", ALICE, "m.room.message", {"membership": "join"}, START_MS + 1),
            IngressDrop("not a membership event"),
            id="not-a-member-event",
        ),
    ],
)  # fmt: skip
def test_classify_member_event(event: MatrixEvent, expected: MemberChange | IngressDrop) -> None:
    assert classify(event) == expected


def test_classify_member_event_replay_is_due_though_older_than_this_run() -> None:
    old = member("leave", PROFILE, ts=START_MS - 60_000)

    assert classify(old) == IngressDrop("older than this run")
    assert classify(old, replay=True) == "left"


# -- the handler ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class StandInClient:
    server_name: str = "localhost"
    account_prefix: str = "mindroom_"


class StandInBindings:
    def fields(self) -> dict[str, Any]:
        return {}


@dataclass(slots=True)
class StandInEntity:
    name: str
    is_router: bool
    client: StandInClient = field(default_factory=StandInClient)
    spawned: list[asyncio.Task[None]] = field(default_factory=list)

    def bindings(self, live: LiveState, turn: str | None = None) -> StandInBindings:
        return StandInBindings()

    def spawn(self, work: Any, what: str) -> None:
        self.spawned.append(asyncio.ensure_future(work))


def plugin(*callbacks: Any) -> Any:
    attributes = {
        "name": "members",
        "discovered_hooks": callbacks,
        "entry_config": PluginEntryConfig(path="./plugins/members"),
        "plugin_order": 0,
    }
    return type("PluginStub", (), attributes)()


@pytest.fixture
def seen() -> list[tuple[str, Any]]:
    return []


@pytest.fixture
def daemon(tmp_path: Path, seen: list[tuple[str, Any]]) -> Iterator[RunningDaemon]:
    @hook(EVENT_ROOM_MEMBER_JOINED)
    async def joined(ctx: Any) -> None:
        seen.append(("joined", ctx))

    @hook(EVENT_ROOM_MEMBER_LEFT)
    async def left(ctx: Any) -> None:
        seen.append(("left", ctx))

    config = Config.model_validate({"agents": {"helper": {"display_name": "Helper", "rooms": ["lobby"]}}})
    registry = HookRegistry.from_plugins([plugin(joined, left)])
    daemon = unit_daemon(
        tmp_path, LiveState(config=config, registry=registry), bots=BOTS, rooms={"lobby": LOBBY}, started_at_ms=START_MS
    )
    yield daemon
    close_stores(daemon)


def router() -> Any:
    return StandInEntity("router", True)


def handler(daemon: RunningDaemon, clock: RunClock | None = None) -> MemberHandler:
    """The membership handler as the orchestrator wires it (`clock`: a later run's)."""
    return MemberHandler(daemon.cell, clock or daemon.clock, daemon.directory, daemon.stores.journal)


@pytest.mark.asyncio
async def test_join_fires_once_with_the_profile_from_the_content(daemon: RunningDaemon, seen: list[Any]) -> None:
    event = member("join", {"membership": "invite"}, displayname="Alice", avatar_url="mxc://localhost/a")

    await handler(daemon)(router(), event)
    await handler(daemon)(router(), event)  # the same event again (a re-fetched batch)

    assert [name for name, _ in seen] == ["joined"]
    ctx = seen[0][1]
    assert (ctx.agent_name, ctx.room_id, ctx.event_id, ctx.correlation_id) == ("router", LOBBY, "$member", "$member")
    assert (ctx.user_id, ctx.sender_id, ctx.membership, ctx.prev_membership) == (ALICE, ALICE, "join", "invite")
    assert (ctx.display_name, ctx.avatar_url) == ("Alice", "mxc://localhost/a")
    assert daemon.stores.journal.seen("router", "$member")
    assert daemon.stores.journal.pending("router") == []


@pytest.mark.asyncio
async def test_leave_takes_name_and_avatar_from_before_it(daemon: RunningDaemon, seen: list[Any]) -> None:
    await handler(daemon)(router(), member("leave", PROFILE))

    [(name, ctx)] = seen
    assert name == "left"
    assert (ctx.membership, ctx.prev_membership) == ("leave", "join")
    assert (ctx.display_name, ctx.avatar_url) == ("Alice", "mxc://localhost/a")


@pytest.mark.asyncio
async def test_only_the_router_announces(daemon: RunningDaemon, seen: list[Any]) -> None:
    await handler(daemon)(StandInEntity("helper", False), member("join"))

    assert seen == []
    assert not daemon.stores.journal.seen("helper", "$member")


@pytest.mark.asyncio
async def test_ignored_events_and_events_nobody_hooks_are_not_journaled(daemon: RunningDaemon) -> None:
    await handler(daemon)(router(), member("join", PROFILE, event_id="$profile"))
    daemon.cell.swap(LiveState(config=daemon.live.config, registry=HookRegistry.empty()))
    await handler(daemon)(router(), member("join", event_id="$unheard"))

    assert not daemon.stores.journal.seen("router", "$profile")
    assert not daemon.stores.journal.seen("router", "$unheard")


@pytest.mark.asyncio
async def test_a_crash_mid_hook_delivers_the_event_again_after_the_restart(
    daemon: RunningDaemon, seen: list[Any]
) -> None:
    entity = router()
    event = member("join", displayname="Alice")
    daemon.stores.journal.claim("router", event.event_id, dataclasses.asdict(event))  # the hooks never returned
    next_run = handler(daemon, RunClock(START_MS + 60_000))  # the next run: the event is older than it

    await next_run(entity, event)  # the sync hands it over again: already claimed, not delivered
    assert seen == []
    await recover_interrupted(entity, daemon.stores.journal, {MatrixEventKind.MEMBER: next_run})
    await asyncio.gather(*entity.spawned)

    assert [(name, ctx.display_name) for name, ctx in seen] == [("joined", "Alice")]
    assert daemon.stores.journal.pending("router") == []


@pytest.mark.asyncio
async def test_a_replayed_event_that_no_longer_qualifies_is_completed(daemon: RunningDaemon, seen: list[Any]) -> None:
    event = member("join", user="@mindroom_newagent:localhost")
    daemon.stores.journal.claim("router", event.event_id, dataclasses.asdict(event))

    await handler(daemon)(router(), event, replay=True)

    assert seen == []
    assert daemon.stores.journal.pending("router") == []
