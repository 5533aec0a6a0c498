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

QUICK = IsolationLimits(timeout_s=5.0, memory_bytes=256 * 1024 * 1024)


@pytest.fixture
def pool():
    pool = IsolatedWorkerPool(size=2)
    yield pool
    pool.close()


def ref(function):
    return function_reference(function)


class Heartbeat:
    """Ticks on the event loop every 10 ms and records how late each tick was."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            await asyncio.sleep(0.01)
            self.lags.append(loop.time() - started - 0.01)

    async def __aenter__(self):
        self._task = asyncio.create_task(self._run())
        await asyncio.sleep(0.05)
        return self

    async def __aexit__(self, *exc):
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    @property
    def max_lag_ms(self) -> float:
        return max(self.lags) * 1000


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
    burner_pid = await pool.call(ref(isolated_tools.worker_pid), {}, limits)

    async with Heartbeat() as heartbeat:
        started = time.monotonic()
        with pytest.raises(ToolError, match=r"ran longer than 1 s and was stopped"):
            await pool.call(ref(isolated_tools.burn), {}, limits)
        elapsed = time.monotonic() - started

    # Bounds loose enough for a loaded 2-core machine; a tool on the loop would freeze it for the whole call.
    assert 1.0 <= elapsed < 3.0
    assert heartbeat.max_lag_ms < 250, f"the loop lagged {heartbeat.max_lag_ms:.0f} ms"
    assert await _stopped(burner_pid)
    replacement = await pool.call(ref(isolated_tools.worker_pid), {}, limits)
    assert replacement not in {burner_pid, os.getpid()}


def _state(pid: int) -> str:
    try:
        return next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if "State:" in line)
    except FileNotFoundError:
        return "gone"


async def _stopped(pid: int) -> bool:
    """Whether `pid` is gone or a zombie within 2 s (SIGKILL takes effect asynchronously)."""
    for _ in range(200):
        state = _state(pid)
        if state == "gone" or "Z" in state:
            return True
        await asyncio.sleep(0.01)
    return False


async def test_isolation_stops_a_cpu_burner_at_its_cpu_limit(pool):
    limits = IsolationLimits(timeout_s=30.0, memory_bytes=256 * 1024 * 1024, cpu_s=1.0)
    started = time.monotonic()

    with pytest.raises(ToolError, match=r"more than 1 s of CPU time"):
        await pool.call(ref(isolated_tools.burn), {}, limits)

    assert time.monotonic() - started < 10
    assert await pool.call(ref(isolated_tools.echo), {"text": "back"}, limits) == "back"


async def test_isolation_stops_a_memory_hog_and_recovers(pool):
    limits = IsolationLimits(timeout_s=20.0, memory_bytes=200 * 1024 * 1024)

    async with Heartbeat() as heartbeat:
        with pytest.raises(ToolError, match=r"ran out of memory \(limit 200 MiB\)"):
            await pool.call(ref(isolated_tools.hog), {}, limits)

    assert heartbeat.max_lag_ms < 100
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
    await asyncio.gather(*(pool.call(ref(isolated_tools.nap), {"seconds": 0.2}, QUICK) for _ in range(2)))  # warm both
    started = time.monotonic()

    results = await asyncio.gather(*(pool.call(ref(isolated_tools.nap), {"seconds": 1.0}, QUICK) for _ in range(4)))

    assert results == ["rested"] * 4
    assert 2.0 <= time.monotonic() - started < 3.5  # two at a time: one at a time takes 4 s, all at once 1 s


async def test_isolation_kills_the_worker_of_a_cancelled_call(pool):
    limits = IsolationLimits(timeout_s=30.0, memory_bytes=256 * 1024 * 1024)
    busy = asyncio.create_task(pool.call(ref(isolated_tools.nap), {"seconds": 20}, limits))
    await asyncio.sleep(0.5)
    (worker,) = pool._alive

    busy.cancel()
    with pytest.raises(asyncio.CancelledError):
        await busy

    assert worker.process.wait(timeout=5) is not None
    assert await pool.call(ref(isolated_tools.echo), {"text": "ok"}, limits) == "ok"


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
        text = await call_tool(burner, "helper", {})

    assert text.startswith("[TOOL CALL FAILED]\nTool: burn\nError: the tool ran longer than 0.5 s and was stopped")
    # A burn in process would stall the loop for the whole 0.5 s; a loaded machine adds a little jitter.
    assert heartbeat.max_lag_ms < 300


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
        "@isolated(timeout_s=3, memory_mb=200)\ndef crunch(n: int) -> str:\n"
        '    """Double n in a worker."""\n    return f"{twice(n)} in {os.getpid()}"\n\n'
        'def plain() -> str:\n    """In process."""\n    return "plain"\n',
    )

    crunch, plain = plugin_tool_specs(plugin)

    assert (crunch.isolated, crunch.limits) == (True, IsolationLimits(timeout_s=3, memory_bytes=200 * 1024 * 1024))
    assert not plain.isolated and isolation_limits(plain.function) is None
    value, _, pid = (await call_tool(crunch, "helper", {"n": 21})).partition(" in ")
    assert value == "42" and int(pid) != os.getpid()
