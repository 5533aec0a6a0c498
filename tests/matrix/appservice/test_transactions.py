"""Splitting appservice transactions among the bots: memberships followed in order, holds, retries."""

from __future__ import annotations

from typing import Any

import pytest

from mindroom.matrix.appservice.transactions import InboxPart, TransactionRouter


class Inbox:
    """A bot's receiving end as the router sees it (the router only reads the ids)."""

    def __init__(self, user_id: str, device_id: str = "DEV") -> None:
        self.user_id = user_id
        self.device_id = device_id

    async def receive(self, part: InboxPart) -> None:  # pragma: no cover - the router never calls it
        raise AssertionError


def _message(room_id: str, event_id: str, sender: str = "@ann:hs") -> dict[str, Any]:
    return {"room_id": room_id, "event_id": event_id, "sender": sender, "type": "m.room.message", "content": {}}


def _member(room_id: str, event_id: str, user_id: str, membership: str, *, before: str | None = None) -> dict:
    event: dict[str, Any] = {
        "room_id": room_id,
        "event_id": event_id,
        "sender": "@ann:hs",
        "type": "m.room.member",
        "state_key": user_id,
        "content": {"membership": membership},
    }
    if before is not None:
        event["unsigned"] = {"prev_content": {"membership": before}}
    return event


def _router(*bots: tuple[str, set[str]]) -> TransactionRouter:
    router = TransactionRouter()
    for user_id, rooms in bots:
        router.register(user_id)
        router.set_rooms(user_id, rooms)
        router.attach(Inbox(user_id))
    return router


def _ids(part: InboxPart) -> list[str]:
    return [raw["event_id"] for _, raw, _ in part.entries]


def test_transactions_an_event_reaches_only_the_bots_in_its_room():
    router = _router(("@a:hs", {"!one"}), ("@b:hs", {"!two"}), ("@c:hs", {"!one", "!two"}))

    parts = router.split("1", {"events": [_message("!one", "$1"), _message("!two", "$2"), _message("!x", "$3")]})

    assert {user: _ids(part) for user, (_, part) in parts.items()} == {
        "@a:hs": ["$1"],
        "@b:hs": ["$2"],
        "@c:hs": ["$1", "$2"],
    }


def test_transactions_a_bot_hears_its_join_and_what_follows_but_not_what_came_before():
    router = _router(("@a:hs", set()), ("@router:hs", {"!one"}))
    events = [_message("!one", "$before"), _member("!one", "$join", "@a:hs", "join"), _message("!one", "$after")]

    parts = router.split("1", {"events": events})

    assert _ids(parts["@a:hs"][1]) == ["$join", "$after"]
    assert _ids(parts["@router:hs"][1]) == ["$before", "$join", "$after"]
    assert router.rooms_of("@a:hs") == {"!one"}


def test_transactions_a_kicked_bot_hears_of_it_and_then_nothing_more():
    router = _router(("@a:hs", {"!one"}))
    events = [_member("!one", "$kick", "@a:hs", "leave"), _message("!one", "$after")]

    parts = router.split("1", {"events": events})

    assert _ids(parts["@a:hs"][1]) == ["$kick"]
    assert router.rooms_of("@a:hs") == frozenset()


def test_transactions_an_invite_is_answered_not_delivered_and_the_join_after_it_fetches_the_gap():
    router = _router(("@a:hs", set()))
    invite = _member("!dm", "$invite", "@a:hs", "invite")

    first = router.split("1", {"events": [invite]})["@a:hs"][1]
    second = router.split("2", {"events": [_member("!dm", "$join", "@a:hs", "join", before="invite")]})["@a:hs"][1]

    assert first.invites == [("!dm", "@ann:hs")]
    assert first.entries == []
    assert [(raw["event_id"], after_invite) for _, raw, after_invite in second.entries] == [("$join", True)]


def test_transactions_to_device_messages_and_key_counts_go_to_their_device_device_lists_to_all():
    router = _router(("@a:hs", {"!one"}), ("@b:hs", set()))
    body = {
        "events": [],
        "de.sorunome.msc2409.to_device": [
            {"type": "m.room.encrypted", "to_user_id": "@a:hs", "to_device_id": "DEV", "content": {}},
            {"type": "m.room.encrypted", "to_user_id": "@a:hs", "to_device_id": "PHONE", "content": {}},
        ],
        "org.matrix.msc3202.device_one_time_keys_count": {"@b:hs": {"DEV": {"signed_curve25519": 3}}},
        "org.matrix.msc3202.device_lists": {"changed": ["@ann:hs"], "left": []},
    }

    parts = router.split("1", body)

    a, b = parts["@a:hs"][1], parts["@b:hs"][1]
    assert [message["to_device_id"] for message in a.to_device] == ["DEV"]
    assert a.key_counts is None
    assert b.key_counts == {"signed_curve25519": 3}
    assert a.device_lists == b.device_lists == {"changed": ["@ann:hs"], "left": []}


def test_transactions_a_key_count_is_given_when_it_changes_not_with_every_transaction():
    router = _router(("@a:hs", {"!one"}), ("@b:hs", {"!one"}))

    def counts(a: int, b: int) -> dict[str, Any]:
        return {
            "org.matrix.msc3202.device_one_time_keys_count": {
                "@a:hs": {"DEV": {"signed_curve25519": a}},
                "@b:hs": {"DEV": {"signed_curve25519": b}},
            }
        }

    first = router.split("1", {"events": [], **counts(50, 50)})
    repeated = router.split("2", {"events": [_message("!one", "$1")], **counts(50, 50)})
    changed = router.split("3", {"events": [], **counts(49, 50)})
    router.attach(Inbox("@b:hs"))  # b's bot restarted: its new inbox hears the count once more
    after_restart = router.split("4", {"events": [], **counts(49, 50)})

    assert {user: part.key_counts for user, (_, part) in first.items()} == {
        "@a:hs": {"signed_curve25519": 50},
        "@b:hs": {"signed_curve25519": 50},
    }
    assert {user: part.key_counts for user, (_, part) in repeated.items()} == {"@a:hs": None, "@b:hs": None}
    assert {user: part.key_counts for user, (_, part) in changed.items()} == {"@a:hs": {"signed_curve25519": 49}}
    assert {user: part.key_counts for user, (_, part) in after_restart.items()} == {"@b:hs": {"signed_curve25519": 50}}


def test_transactions_a_crypto_view_holds_room_state_and_the_device_data_but_not_messages():
    part = InboxPart(
        entries=[("!one", _message("!one", "$m"), False), ("!one", _member("!one", "$j", "@bob:hs", "join"), False)],
        to_device=[{"type": "m.room_key"}],
        key_counts={"signed_curve25519": 0},
    )

    view = part.crypto_view()

    assert view is not None
    assert [raw["event_id"] for raw in view["rooms"]["join"]["!one"]["timeline"]["events"]] == ["$j"]
    assert view["to_device"] == {"events": [{"type": "m.room_key"}]}
    assert view["device_one_time_keys_count"] == {"signed_curve25519": 0}
    assert InboxPart(entries=[("!one", _message("!one", "$m"), False)]).crypto_view() is None


def test_transactions_wait_for_a_signed_in_bot_until_it_receives():
    router = _router(("@router:hs", {"!one"}))
    router.register("@a:hs")
    router.set_rooms("@a:hs", {"!one"})
    body = {"events": [_message("!one", "$1")]}
    elsewhere = {"events": [_message("!two", "$2")]}

    assert router.waiting_for(body) == ["@a:hs"]
    assert router.waiting_for(elsewhere) == []
    router.attach(Inbox("@a:hs"))
    assert router.waiting_for(body) == []


def test_transactions_a_restarting_bot_is_waited_for_and_a_stopped_one_is_not():
    router = _router(("@a:hs", {"!one"}))
    inbox = router.split("0", {"events": [_message("!one", "$0")]})["@a:hs"][0]
    body = {"events": [_message("!one", "$1")]}

    router.detach(inbox, hold=True)
    assert router.waiting_for(body) == ["@a:hs"]
    router.release("@a:hs")  # its client closed
    assert router.waiting_for(body) == []


def test_transactions_a_bot_that_failed_is_not_waited_for():
    router = _router(("@a:hs", {"!one"}))
    inbox = router.split("0", {"events": [_message("!one", "$0")]})["@a:hs"][0]

    router.detach(inbox, hold=False)

    assert router.waiting_for({"events": [_message("!one", "$1")]}) == []


def test_transactions_a_bot_held_too_long_is_given_up(monkeypatch: pytest.MonkeyPatch):
    now = [100.0]
    monkeypatch.setattr("mindroom.matrix.appservice.transactions.time.monotonic", lambda: now[0])
    router = TransactionRouter(hold_limit_s=10.0)
    router.register("@a:hs")
    router.set_rooms("@a:hs", {"!one"})
    body = {"events": [_message("!one", "$1")]}

    assert router.waiting_for(body) == ["@a:hs"]
    now[0] += 11
    assert router.waiting_for(body) == []


def test_transactions_a_retry_leaves_out_the_bots_that_already_received_it():
    router = _router(("@a:hs", {"!one"}), ("@b:hs", {"!one"}))
    body = {"events": [_message("!one", "$1")]}

    router.received("1", "@a:hs")

    assert set(router.split("1", body)) == {"@b:hs"}
    assert set(router.split("2", body)) == {"@a:hs", "@b:hs"}


def test_transactions_each_room_of_a_receiving_bot_has_one_reader_and_a_held_bot_reads_none():
    router = _router(("@a:hs", {"!one"}), ("@b:hs", {"!one", "!two"}))
    router.register("@held:hs")
    router.set_rooms("@held:hs", {"!three"})

    assert router.readers() == {"!one": "@a:hs", "!two": "@b:hs"}
