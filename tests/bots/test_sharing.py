"""Work done once per event for all the entities that see it."""

from __future__ import annotations

from typing import Any

from mindroom.bots.sharing import EventMemo


def test_event_memo_reads_once_per_generation_and_keeps_the_newest():
    memo = EventMemo(keep=2)
    reads: list[str] = []
    first, second = object(), object()

    def read(value: str) -> Any:
        return lambda: reads.append(value) or value

    assert memo.once("$a", first, read("a1")) == "a1"
    assert memo.once("$a", first, read("a2")) == "a1"  # the same generation: read once
    assert memo.once("$a", second, read("a3")) == "a3"  # a reload: read again
    memo.once("$b", second, read("b"))
    memo.once("$c", second, read("c"))
    assert memo.once("$a", second, read("a4")) == "a4"  # the oldest was let go
    assert reads == ["a1", "a3", "b", "c", "a4"]


def test_event_memo_keys_may_name_what_is_read_of_an_event():
    memo = EventMemo()
    generation = object()

    memo.once(("$a", "mentions"), generation, lambda: ("helper",))

    assert memo.once(("$a", "present"), generation, lambda: ("helper", "scout")) == ("helper", "scout")
    assert memo.once(("$a", "mentions"), generation, lambda: ()) == ("helper",)
