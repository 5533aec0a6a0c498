"""`Backoff`: waits grow by the factor to the cap, spread by the jitter, and a run of failures starts over on reset."""

from __future__ import annotations

import pytest

from mindroom.backoff import Backoff
from mindroom.matrix.delivery import HOMESERVER_BACKOFF, REFUSED_RETRY_S, HomeserverRetries
from mindroom.tool_system.mcp.connection import MCP_RETRY


def test_backoff_doubles_from_the_first_wait_to_the_cap_exactly_without_jitter():
    assert [Backoff(0.2, 1.0).delay(n) for n in range(1, 6)] == [0.2, 0.4, 0.8, 1.0, 1.0]
    assert [MCP_RETRY.delay(n) for n in range(1, 7)] == [5, 10, 20, 40, 60, 60]


def test_backoff_counts_no_failure_as_the_first():
    assert Backoff(0.5, 30.0).delay(0) == Backoff(0.5, 30.0).delay(-3) == 0.5


def test_backoff_a_long_run_of_failures_stays_at_the_cap_even_with_a_large_factor():
    assert Backoff(1.0, 60.0, factor=1e300).delay(10_000) == 60.0
    assert Backoff(0.5, 30.0).delay(10**9) == 30.0


def test_backoff_jitter_spreads_each_wait_within_its_range_after_the_cap():
    spread = Backoff(0.5, 8.0, jitter=(0.8, 1.2))
    firsts = {spread.delay(1) for _ in range(200)}
    capped = [spread.delay(50) for _ in range(200)]

    assert all(0.4 <= wait <= 0.6 for wait in firsts) and len(firsts) > 1
    assert all(6.4 <= wait <= 9.6 for wait in capped)
    assert max(capped) > 8.0  # jitter applies after the cap, as before


@pytest.mark.parametrize(
    "numbers",
    [
        {"first_s": 0.0, "max_s": 1.0},
        {"first_s": 2.0, "max_s": 1.0},
        {"first_s": 1.0, "max_s": 2.0, "factor": 0.5},
        {"first_s": 1.0, "max_s": 2.0, "jitter": (1.2, 0.8)},
        {"first_s": 1.0, "max_s": 2.0, "jitter": (0.0, 1.0)},
    ],
)
def test_backoff_refuses_numbers_that_would_not_back_off(numbers):
    with pytest.raises(ValueError, match="backoff needs"):
        Backoff(**numbers)


def test_retries_count_failures_and_start_over_on_reset():
    retries = Backoff(0.2, 1.0).retries()

    assert [retries.next_wait() for _ in range(4)] == [0.2, 0.4, 0.8, 1.0]
    retries.reset()
    assert retries.next_wait() == 0.2


def test_homeserver_retries_wait_about_a_second_while_refused_and_back_off_otherwise():
    retries = HomeserverRetries()

    refused = [retries.wait(refused=True) for _ in range(20)]
    backing_off = [retries.wait(refused=False) for _ in range(12)]

    assert all(0.9 * REFUSED_RETRY_S <= wait <= REFUSED_RETRY_S for wait in refused)
    assert 0.5 <= backing_off[0] <= 0.55  # the refusals did not count
    assert all(HOMESERVER_BACKOFF.max_s <= wait <= HOMESERVER_BACKOFF.max_s * 1.1 for wait in backing_off[7:])
