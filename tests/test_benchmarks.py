"""The benchmarks still run: each script in `benchmarks/`, at a tiny size, as a real subprocess, exits 0 and prints
its figures. A benchmark is not run by CI otherwise, so a broken one (a moved endpoint, a renamed setting) would
only be seen the next time someone measures.

Most start a real Synapse (and the daemon as a subprocess) and so are marked `integration`; the sizes are the
smallest that still take every path of the script (both delivery modes, every phase), not meaningful figures.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
HELPERS = {"echo_bot.py": "the bare bot the end-to-end benchmarks start and measure against"}
_OWN_ENVIRONMENT = ("MINDROOM_", "MATRIX_", "BENCH_", "FAULT_", "FAILOVER_")
NUMBER = r"[-+]?[0-9.]+"


@dataclass(frozen=True)
class Smoke:
    """One benchmark's tiny run: its size (environment), and the figures its output must show (regexes)."""

    script: str
    env: dict[str, str]
    figures: tuple[str, ...]
    synapse: bool = True
    timeout_s: float = 300.0


SMOKES = [
    Smoke(
        "hook_dispatch.py",
        {"BENCH_SMOKE": "1", "BENCH_ROUNDS": "1", "BENCH_EMITS": "20"},
        (
            rf"^observer\s+1\s+{NUMBER}\s+{NUMBER}",
            rf"^gate\s+20\s+{NUMBER}\s+{NUMBER}",
            rf"^collector of 10 hooks sleeping 100 ms each: {NUMBER} ms",
        ),
        synapse=False,
    ),
    Smoke(
        "redaction.py",
        {"BENCH_ROUNDS": "1", "BENCH_CALLS": "5", "BENCH_REGISTERED": "2"},
        (rf"^  redact_message, english with links: {NUMBER} µs$", rf"^redact_text, english with links: {NUMBER} µs$"),
        synapse=False,
    ),
    Smoke(
        "model_call_hooks.py",
        {"BENCH_SMOKE": "1", "BENCH_ROUNDS": "1", "BENCH_CALLS": "50", "BENCH_HTTP_CALLS": "5"},
        (
            rf"^seam, no hooks\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}$",
            rf"^rewriting gate\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}$",
            rf"^HTTP round-trip, rewriting gate\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}$",
        ),
        synapse=False,
    ),
    Smoke(
        "usage_recording.py",
        {"BENCH_ROUNDS": "1", "BENCH_MESSAGES": "300"},
        (rf"^unpriced, no budgets\s+{NUMBER} µs", rf"^priced, budgets\s+{NUMBER} µs"),
        synapse=False,
    ),
    Smoke(
        "soak.py",
        {"BENCH_SOAK_MESSAGES": "4", "BENCH_SOAK_CHECKPOINT": "2"},
        (
            rf"^sync: sent 4 at 15/s \(achieved {NUMBER}/s\); answered 4$",
            rf"^appservice: sent 4 at 15/s \(achieved {NUMBER}/s\); answered 4$",
            rf"^\s+4 messages  RSS\s+{NUMBER} MB  fds\s+{NUMBER}  tasks\s+{NUMBER}$",
            rf"^  RSS growth {NUMBER} MB",
        ),
    ),
    Smoke(
        "e2e_latency.py",
        {"BENCH_MESSAGES": "2", "BENCH_BURST": "4", "BENCH_VOICE": "1"},
        (
            rf"^\(b\) daemon, 1 agent, 12 hooks\s+{NUMBER}\s+{NUMBER}$",
            rf"^CPU per message: daemon {NUMBER} ms",
            rf"^voice replies set, text messages: p50 {NUMBER}x \(b\), CPU {NUMBER} ms/msg .* speech requests 0 ",
            r"^burst: 4 sent over 4 rooms / 4 agents, 4 answered, 0 answered twice",
        ),
    ),
    Smoke(
        "e2e_pairs.py",
        {"BENCH_ROUNDS": "1", "BENCH_MESSAGES": "1"},
        (rf"^this\s+median p50\s+{NUMBER} ms",),
    ),
    Smoke(
        "voice_replies.py",
        {"BENCH_ROUNDS": "1", "BENCH_MESSAGES": "1"},
        (
            rf"^no-speech\s+median p50\s+{NUMBER} ms",
            rf"^speech\s+median p50\s+{NUMBER} ms",
            r"^speech requests made by text turns: 0$",
        ),
    ),
    Smoke(
        "thread_summaries.py",
        {"BENCH_ROUNDS": "1", "BENCH_MESSAGES": "2"},
        (rf"^none\s+median p50\s+{NUMBER} ms", rf"^every\s+median p50\s+{NUMBER} ms"),
    ),
    Smoke(
        "e2e_encrypted.py",
        {"BENCH_MESSAGES": "1"},
        (rf"^daemon encrypted\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}$", rf"^encryption adds {NUMBER} ms"),
    ),
    Smoke(
        "agents_per_room.py",
        {"BENCH_AGENTS": "1", "BENCH_MESSAGES": "2"},
        (rf"^\s+1 sync\s+{NUMBER}", rf"^\s+1 appservice\s+{NUMBER}", r"^appservice: 1 vs 1 agents: daemon CPU"),
    ),
    Smoke(
        "tools_cost.py",
        {"BENCH_MESSAGES": "1", "BENCH_MCP_CALLS": "2"},
        (
            rf"^  direct with the MCP client: {NUMBER} ms; through the daemon's tool path: {NUMBER} ms$",
            rf"^  agent without tools: {NUMBER} ms; agent with ten unused tools: {NUMBER} ms$",
        ),
    ),
    Smoke(
        "reload_under_load.py",
        {"BENCH_MESSAGES": "4", "BENCH_SECONDS": "3"},
        (r"^plugin code v2\s+yes", r"^answered: 4, lost: 0, duplicated: 0$"),
    ),
    Smoke(
        "recovery.py",
        {"BENCH_ROUNDS": "1", "BENCH_OUTAGE_S": "1"},
        (rf"^  daemon:\s+{NUMBER} s", r"^answers in flight during the outages: 3 sent, 0 lost, 0 doubled$"),
    ),
    Smoke(
        "knowledge.py",
        {"BENCH_FILES": "20", "BENCH_FILE_BYTES": "500", "BENCH_QUERIES": "3", "BENCH_MESSAGES": "1"},
        (rf"^sqlite\s+hybrid\s+{NUMBER}", rf"^answer p50 over 1 pairs: plain {NUMBER} ms"),
    ),
    Smoke(
        "fault_matrix.py",
        {"FAULT_MESSAGES": "1", "FAULT_MODES": "observer,gate", "FAULT_KINDS": "raise", "FAULT_OUTAGE_S": "1"},
        (
            r"^observer\s+raise\s+1/1\s+0\s",
            r"^gate\s+raise\s+1/1\s+0\s",
            r"^outage \(Synapse down 1 s, answers in flight\): sent 10, answered 10, lost 0, doubled 0$",
            r"^kill -9 mid-work, then restart: sent 8, answered 8, lost 0, doubled 0$",
        ),
    ),
    Smoke(
        "failover.py",
        {"FAILOVER_ONLY": "1", "FAILOVER_MESSAGES": "4", "FAILOVER_KILL_AT": "1"},
        (
            rf"^failover \(postgresql\): kill -9 at message 2 of 4, .* takeover .* {NUMBER} s",
            r"^  sent 4, answered 4, lost 0, doubled 0",
        ),
    ),
]


def test_benchmarks_every_script_has_a_smoke_run() -> None:
    scripts = {path.name for path in BENCHMARKS.glob("*.py")}
    assert {smoke.script for smoke in SMOKES} | set(HELPERS) == scripts


def _environment(smoke: Smoke) -> dict[str, str]:
    """The test's environment without the daemon's and the benchmarks' own settings, then the tiny size."""
    inherited = {name: value for name, value in os.environ.items() if not name.startswith(_OWN_ENVIRONMENT)}
    return {**inherited, **smoke.env}


@pytest.mark.parametrize(
    "smoke",
    [pytest.param(s, id=s.script, marks=[pytest.mark.integration] if s.synapse else []) for s in SMOKES],
)
def test_benchmark_runs_at_a_tiny_size_and_prints_its_figures(smoke: Smoke, tmp_path: Path) -> None:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / smoke.script)],
        env=_environment(smoke),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=smoke.timeout_s,
        check=False,
    )
    said = f"{smoke.script} exited {done.returncode} after {time.monotonic() - started:.0f} s\n"
    said += f"stdout (end):\n{done.stdout[-4000:]}\nstderr (end):\n{done.stderr[-4000:]}"
    assert done.returncode == 0, said
    missing = [figure for figure in smoke.figures if not re.search(figure, done.stdout, re.MULTILINE)]
    assert not missing, f"no {missing} in the output of {said}"
