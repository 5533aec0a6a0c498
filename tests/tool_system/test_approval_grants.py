"""Timed approval values: the offered durations, `!auto_approve` durations, and what a grant is bound to."""

from __future__ import annotations

import pytest

from mindroom.config.main import Config
from mindroom.tool_system.approval_grants import (
    AUTO_APPROVE_OPTIONS,
    approval_binding,
    grant_operation,
    parse_auto_approve_duration,
    valid_auto_approve_seconds,
)


def test_valid_auto_approve_seconds_only_an_offered_int():
    assert [valid_auto_approve_seconds(value) for value in AUTO_APPROVE_OPTIONS] == [True, True, True]
    assert not any(valid_auto_approve_seconds(value) for value in (60, 600.0, True, "600", None, 3600))


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1", 60),
        ("30", 1800),
        (" 30 ", 1800),
        ("30m", 1800),
        ("30 min", 1800),
        ("45 minutes", 2700),
        ("1 minute", 60),
        ("2h", 7200),
        ("2 HR", 7200),
        ("1 hour", 3600),
        ("24 hours", 86400),
        ("1440", 86400),
    ],
)
def test_parse_auto_approve_duration_reads_minutes_and_hours(text: str, seconds: int):
    assert parse_auto_approve_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "0h", "1441", "25h", "99999", "123456", "1.5h", "-5", "soon", "2d", "h"])
def test_parse_auto_approve_duration_refuses_what_is_not_a_minute_to_a_day(text: str):
    assert parse_auto_approve_duration(text) is None


def test_grant_operation_binds_the_tool_and_the_whole_config():
    config = Config.model_validate({"agents": {"helper": {"display_name": "Helper"}}})
    same = Config.model_validate({"agents": {"helper": {"display_name": "Helper"}}})
    changed = Config.model_validate({"agents": {"helper": {"display_name": "Helper", "role": "reviews"}}})

    assert grant_operation(config, "think") == grant_operation(same, "think")
    assert grant_operation(config, "think") != grant_operation(config, "analyze")
    assert grant_operation(config, "think") != grant_operation(changed, "think")
    assert approval_binding(config) == approval_binding(same) != approval_binding(changed)
