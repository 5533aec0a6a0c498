"""Timed approvals on both backends: what a grant and a window cover, when they end, and that a restart keeps them."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from mindroom.state.backend import StateBackend
from mindroom.state.grants import ApprovalGrant, AutoApproveWindow, GrantStore

pytestmark = pytest.mark.asyncio

ROOM, OTHER_ROOM = "!lobby:hs", "!ops:hs"
ALICE, BOB = "@alice:hs", "@bob:hs"
NOW = time.time()
"""The test's "now", set again as each test starts (a restarted store drops what ended by the real clock)."""

Opener = Callable[[], StateBackend]


@pytest.fixture(autouse=True)
def _now(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(globals(), "NOW", time.time())


async def _grants(opener: Opener, opened: list[StateBackend]) -> GrantStore:
    backend = opener()
    opened.append(backend)
    await backend.acquire()
    return (await backend.open_stores()).grants


async def _restarted(opener: Opener, opened: list[StateBackend]) -> GrantStore:
    await opened[-1].close()
    return await _grants(opener, opened)


def grant(grant_id: str = "g1", *, expires_at: float | None = None, **changes: object) -> ApprovalGrant:
    fields = {
        "grant_id": grant_id,
        "room_id": ROOM,
        "thread_id": "$root",
        "card_event_id": f"$card-{grant_id}",
        "requester_id": ALICE,
        "agent": "helper",
        "tool_name": "think",
        "operation": "binding:think",
        "created_at": NOW,
        "expires_at": NOW + 600 if expires_at is None else expires_at,
        "revoked_at": None,
    }
    return ApprovalGrant(**{**fields, **changes})  # type: ignore[arg-type]


async def test_grants_cover_only_their_scope_until_they_expire_and_survive_a_restart(opener, opened):
    store = await _grants(opener, opened)
    store.add_grant(grant())
    store.add_grant(grant("old", expires_at=NOW - 1, tool_name="shell", operation="binding:shell"))

    store = await _restarted(opener, opened)

    found = store.active_grant(ROOM, "$root", ALICE, "helper", "binding:think", NOW)
    assert found == grant()
    assert store.grant_for_card("$card-g1") == grant()
    assert store.grant_for_card("$card-old") is not None  # kept past its end, so its card still finds it
    assert store.active_grant(ROOM, "$root", ALICE, "helper", "binding:shell", NOW) is None  # expired
    for scope in [
        (OTHER_ROOM, "$root", ALICE, "helper", "binding:think"),
        (ROOM, "$other", ALICE, "helper", "binding:think"),
        (ROOM, "$root", BOB, "helper", "binding:think"),
        (ROOM, "$root", ALICE, "coder", "binding:think"),
        (ROOM, "$root", ALICE, "helper", "new-binding:think"),  # the config changed since
    ]:
        assert store.active_grant(*scope, NOW) is None, scope
    assert store.active_grant(ROOM, "$root", ALICE, "helper", "binding:think", NOW + 600) is None


async def test_grants_are_revoked_once_and_stay_revoked_after_a_restart(opener, opened):
    store = await _grants(opener, opened)
    store.add_grant(grant())

    assert store.revoke_grant("g1", NOW + 5) is True
    assert store.revoke_grant("g1", NOW + 6) is False
    assert store.revoke_grant("missing", NOW) is False
    store = await _restarted(opener, opened)

    assert store.active_grant(ROOM, "$root", ALICE, "helper", "binding:think", NOW + 10) is None
    revoked = store.grant_for_card("$card-g1")
    assert revoked is not None and revoked.revoked_at == NOW + 5


async def test_grants_an_expired_one_cannot_be_revoked(opener, opened):
    store = await _grants(opener, opened)
    store.add_grant(grant(expires_at=NOW + 1))

    assert store.revoke_grant("g1", NOW + 2) is False


async def test_windows_are_one_per_person_and_conversation_and_survive_a_restart(opener, opened):
    store = await _grants(opener, opened)
    store.set_window(AutoApproveWindow(ROOM, "$root", ALICE, NOW, NOW + 60))
    store.set_window(AutoApproveWindow(ROOM, "$root", ALICE, NOW + 1, NOW + 1800))  # replaces the first
    store.set_window(AutoApproveWindow(ROOM, None, BOB, NOW, NOW + 600))
    store.set_window(AutoApproveWindow(OTHER_ROOM, "$x", ALICE, NOW, NOW + 600))
    store.set_window(AutoApproveWindow(ROOM, "$gone", BOB, NOW - 100, NOW - 1))  # already over

    store = await _restarted(opener, opened)

    assert store.window(ROOM, "$root", ALICE, NOW) == AutoApproveWindow(ROOM, "$root", ALICE, NOW + 1, NOW + 1800)
    assert store.window(ROOM, None, ALICE, NOW) is None
    assert store.window(ROOM, "$root", BOB, NOW) is None
    assert [(w.thread_id, w.requester_id) for w in store.room_windows(ROOM, NOW)] == [(None, BOB), ("$root", ALICE)]
    assert store.window(ROOM, "$root", ALICE, NOW + 1800) is None  # ended


async def test_windows_end_once_and_an_ended_one_is_gone_after_a_restart(opener, opened):
    store = await _grants(opener, opened)
    store.set_window(AutoApproveWindow(ROOM, "$root", ALICE, NOW, NOW + 600))

    assert store.end_window(ROOM, "$root", ALICE, NOW) is True
    assert store.end_window(ROOM, "$root", ALICE, NOW) is False
    store = await _restarted(opener, opened)

    assert store.window(ROOM, "$root", ALICE, NOW) is None
    assert store.room_windows(ROOM, NOW) == []
