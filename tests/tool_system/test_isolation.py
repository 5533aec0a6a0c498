"""Isolated tool calls: a worker process under hard limits, killed at its timeout, replaced, and never the loop."""

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from mindroom.plugins.loader import load_plugin_dir
from mindroom.tool_system.calls import call_tool
from mindroom.tool_system.catalog import plugin_tool_specs
from mindroom.tool_system.isolation import IsolatedWorkerPool, function_reference, isolation_limits
from mindroom.tool_system.spec import IsolationLimits, ToolError, ToolSpec
from tests.tool_system import isolated_tools

pytestmark = pytest.mark.asyncio

QUICK = IsolationLimits(timeout_s=60.0, memory_bytes=256 * 1024 * 1024)
"""For calls that must finish: far past what a cold worker needs to start, even on a loaded machine."""


@pytest.fixture
def pool():
    pool = IsolatedWorkerPool(size=2)
    yield pool
    pool.close()


def ref(function):
    return function_reference(function)


class Heartbeat:
    """Ticks on the event loop every 10 ms and notes when (a loop frozen by a call does not tick at all)."""

    def __init__(self) -> None:
        self.ticks: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(0.01)
            self.ticks.append(time.monotonic())

    async def __aenter__(self):
        self._task = asyncio.create_task(self._run())
        while not self.ticks:  # ticking before the measured call starts
            await asyncio.sleep(0.001)
        return self

    async def __aexit__(self, *exc):
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    def during(self, started: float, ended: float) -> int:
        """How many times the loop ticked between two moments."""
        return sum(1 for tick in self.ticks if started < tick < ended)


async def test_isolation_runs_the_call_in_another_process_and_keeps_the_worker_warm(pool):
    first = await pool.call(ref(isolated_tools.worker_pid), {}, QUICK)
    second = await pool.call(ref(isolated_tools.worker_pid), {}, QUICK)

    assert first != os.getpid()
    assert first == second
    assert await pool.call(ref(isolated_tools.echo), {"text": "ab", "times": 3}, QUICK) == "ababab"
    assert await pool.call(ref(isolated_tools.async_echo), {"text": "x"}, QUICK) == "x"


async def test_isolation_keeps_tool_prints_off_the_answer_pipe(pool):
    assert await pool.call(ref(isolated_tools.shout), {}, QUICK) == "answered"
    assert await pool.call(ref(isolated_tools.echo), {"text": "next"}, QUICK) == "next"


async def test_isolation_stops_a_cpu_burner_at_its_timeout_while_the_loop_keeps_ticking(pool):
    limits = IsolationLimits(timeout_s=1.0, memory_bytes=256 * 1024 * 1024)
    burner_pid = await pool.call(ref(isolated_tools.worker_pid), {}, QUICK)  # started: the 1 s is the burn's alone

    async with Heartbeat() as heartbeat:
        started = time.monotonic()
        with pytest.raises(ToolError, match=r"ran longer than 1 s and was stopped"):
            await pool.call(ref(isolated_tools.burn), {}, limits)  # `burn` never ends: returning is the stop
        ended = time.monotonic()

    assert ended - started >= 1.0  # not before its timeout
    # A tool on the loop would freeze it for the whole call: not one tick. Any load still leaves several.
    assert heartbeat.during(started, ended) >= 3
    assert await _stopped(burner_pid)
    replacement = await pool.call(ref(isolated_tools.worker_pid), {}, limits)
    assert replacement not in {burner_pid, os.getpid()}


def _state(pid: int) -> str:
    try:
        return next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if "State:" in line)
    except FileNotFoundError:
        return "gone"


async def _stopped(pid: int) -> bool:
    """Whether `pid` is gone or a zombie (SIGKILL takes effect asynchronously); waits up to 30 s."""
    for _ in range(3000):
        state = _state(pid)
        if state == "gone" or "Z" in state:
            return True
        await asyncio.sleep(0.01)
    return False


async def test_isolation_stops_a_cpu_burner_at_its_cpu_limit(pool):
    limits = IsolationLimits(timeout_s=600.0, memory_bytes=256 * 1024 * 1024, cpu_s=1.0)

    # Stopped by its CPU limit (this message), not by the call's far longer timeout (another message).
    with pytest.raises(ToolError, match=r"more than 1 s of CPU time"):
        await pool.call(ref(isolated_tools.burn), {}, limits)

    assert await pool.call(ref(isolated_tools.echo), {"text": "back"}, limits) == "back"


async def test_isolation_stops_a_memory_hog_and_recovers(pool):
    limits = IsolationLimits(timeout_s=20.0, memory_bytes=200 * 1024 * 1024)

    # Out of memory in its worker (this message), not in this process.
    with pytest.raises(ToolError, match=r"ran out of memory \(limit 200 MiB\)"):
        await pool.call(ref(isolated_tools.hog), {}, limits)

    assert await pool.call(ref(isolated_tools.echo), {"text": "fine"}, limits) == "fine"


async def test_isolation_reports_a_worker_that_dies_and_recovers(pool):
    with pytest.raises(ToolError, match=r"worker process died \(exit status 3\)"):
        await pool.call(ref(isolated_tools.crash), {}, QUICK)

    assert await pool.call(ref(isolated_tools.echo), {"text": "again"}, QUICK) == "again"


async def test_isolation_passes_tool_errors_and_failures_through(pool):
    with pytest.raises(ToolError, match=r"^not today$"):
        await pool.call(ref(isolated_tools.refuse), {}, QUICK)
    with pytest.raises(ToolError, match="ValidationError"):
        await pool.call(ref(isolated_tools.echo), {"text": "x", "times": "many"}, QUICK)
    with pytest.raises(ToolError, match="not plain JSON"):
        await pool.call(ref(isolated_tools.echo), {"text": object()}, QUICK)


async def test_isolation_runs_calls_side_by_side_up_to_the_pool_size(pool):
    spans = await asyncio.gather(*(pool.call(ref(isolated_tools.nap_span), {"seconds": 1.0}, QUICK) for _ in range(4)))

    # Each worker notes when its nap began and ended; at most two naps are ever under way at once, and two are.
    moments = sorted([(start, 1) for _pid, start, _end in spans] + [(end, -1) for _pid, _start, end in spans])
    running = [sum(step for _at, step in moments[: index + 1]) for index in range(len(moments))]
    assert max(running) == 2
    assert len({pid for pid, _start, _end in spans}) == 2


def _read_note(note: Path) -> int | None:
    try:
        return int(note.read_text())
    except FileNotFoundError:
        return None


async def _noted_pid(note: Path, limit_s: float = 60.0) -> int:
    """The pid a call wrote into `note` once it runs in its worker (waits up to `limit_s`)."""
    deadline = time.monotonic() + limit_s
    while (pid := _read_note(note)) is None:
        assert time.monotonic() < deadline, "the call never started in a worker"
        await asyncio.sleep(0.01)
    return pid


async def test_isolation_kills_the_worker_of_a_cancelled_call(pool, tmp_path):
    limits = IsolationLimits(timeout_s=60.0, memory_bytes=256 * 1024 * 1024)
    note = tmp_path / "worker.pid"
    busy = asyncio.create_task(pool.call(ref(isolated_tools.nap_noted), {"seconds": 50, "note": str(note)}, limits))
    worker = await _noted_pid(note)

    busy.cancel()
    with pytest.raises(asyncio.CancelledError):
        await busy

    assert await _stopped(worker)
    assert await pool.call(ref(isolated_tools.worker_pid), {}, limits) not in {worker, os.getpid()}


async def test_isolation_refuses_functions_a_worker_cannot_import():
    def local_tool() -> str:
        return "x"

    with pytest.raises(ValueError, match="module-level function"):
        function_reference(local_tool)
    with pytest.raises(ValueError, match="module-level function"):
        function_reference(lambda: 1)


async def test_isolation_call_tool_runs_isolated_specs_in_the_shared_pool():
    spec = ToolSpec(name="worker_pid", function=isolated_tools.worker_pid, isolated=True, limits=QUICK)
    burner = ToolSpec(name="burn", function=isolated_tools.burn, isolated=True, limits=IsolationLimits(timeout_s=0.5))

    assert int(await call_tool(spec, "helper", {})) != os.getpid()
    async with Heartbeat() as heartbeat:
        started = time.monotonic()
        text = await call_tool(burner, "helper", {})
        ended = time.monotonic()

    assert text.startswith("[TOOL CALL FAILED]\nTool: burn\nError: the tool ran longer than 0.5 s and was stopped")
    assert heartbeat.during(started, ended) >= 3  # a burn in process would freeze the loop: not one tick


def _plugin(tmp_path, body):
    folder = tmp_path / "crunch"
    folder.mkdir()
    (folder / "mindroom.plugin.json").write_text(json.dumps({"name": "crunch", "tools_module": "tools.py"}))
    (folder / "helpers.py").write_text("def twice(n):\n    return 2 * n\n")
    (folder / "tools.py").write_text(body)
    return load_plugin_dir(folder)


async def test_isolation_plugin_tools_opt_in_with_the_marker(tmp_path):
    plugin = _plugin(
        tmp_path,
        "import os\nfrom mindroom.tool_system.isolation import isolated\nfrom .helpers import twice\n\n"
        "@isolated(timeout_s=60, memory_mb=200)\ndef crunch(n: int) -> str:\n"
        '    """Double n in a worker."""\n    return f"{twice(n)} in {os.getpid()}"\n\n'
        'def plain() -> str:\n    """In process."""\n    return "plain"\n',
    )

    crunch, plain = plugin_tool_specs(plugin)

    assert (crunch.isolated, crunch.limits) == (True, IsolationLimits(timeout_s=60, memory_bytes=200 * 1024 * 1024))
    assert not plain.isolated and isolation_limits(plain.function) is None
    value, _, pid = (await call_tool(crunch, "helper", {"n": 21})).partition(" in ")
    assert value == "42" and int(pid) != os.getpid()
