"""The daemon's parts for the built-in tools: found through the calling turn's data directory, withdrawn with their
run, and never another run's; the caller is read from the turn, never from arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from mindroom.constants import RuntimePaths
from mindroom.tool_system.builtin.parts import DaemonParts, daemon_parts, provide_daemon_parts, tool_caller
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import ToolError


def turn(storage: Path, **fields):
    paths = RuntimePaths(storage / "config.yaml", storage, {})
    values = {"agent_name": "helper", "room_id": "!r:hs", "thread_id": "$t", "requester_id": "@alice:hs", **fields}
    return bind_runtime_context(ToolRuntimeContext(runtime_paths=paths, **values))


def test_parts_are_those_of_the_turns_data_directory(tmp_path: Path):
    mine, other = DaemonParts(), DaemonParts()
    withdraw_mine = provide_daemon_parts(tmp_path / "a", mine)
    withdraw_other = provide_daemon_parts(tmp_path / "b", other)
    try:
        with turn(tmp_path / "a"):
            assert daemon_parts() is mine
        with turn(tmp_path / "b"):
            assert daemon_parts() is other
        with turn(tmp_path / "c"), pytest.raises(ToolError, match="starting or stopping"):
            daemon_parts()
    finally:
        withdraw_mine()
        withdraw_other()
    with turn(tmp_path / "a"), pytest.raises(ToolError, match="starting or stopping"):
        daemon_parts()


def test_parts_withdrawn_by_an_earlier_run_stay_for_the_next(tmp_path: Path):
    first, second = DaemonParts(), DaemonParts()
    withdraw_first = provide_daemon_parts(tmp_path, first)
    withdraw_second = provide_daemon_parts(tmp_path / ".", second)  # the same folder, named otherwise
    withdraw_first()
    try:
        with turn(tmp_path):
            assert daemon_parts() is second
    finally:
        withdraw_second()


def test_parts_outside_a_turn_are_refused():
    with pytest.raises(ToolError, match="conversation"):
        daemon_parts()
    with pytest.raises(ToolError, match="conversation"):
        tool_caller()


def test_caller_is_the_turns_agent_room_thread_and_person(tmp_path: Path):
    with turn(tmp_path, correlation_id="c1", session_id="s1"):
        caller = tool_caller()

    assert (caller.agent_name, caller.room_id, caller.thread_id, caller.requester_id) == (
        "helper",
        "!r:hs",
        "$t",
        "@alice:hs",
    )
    assert (caller.session_id, caller.correlation_id) == ("s1", "c1")


def test_caller_needs_a_room_unless_told_otherwise(tmp_path: Path):
    with turn(tmp_path, room_id=None), pytest.raises(ToolError, match="Matrix room"):
        tool_caller()
    with turn(tmp_path, room_id=None):
        assert tool_caller(room_needed=False).room_id == ""
