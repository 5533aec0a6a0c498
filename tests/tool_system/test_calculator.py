"""The built-in calculator: plain math evaluated without `eval`, everything else refused, every cost bounded."""

import math
import subprocess
import sys

import pytest

from mindroom.tool_system.calculator import CALCULATOR_LIMITS, calculator_tools, evaluate
from mindroom.tool_system.calls import call_tool
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError


def calculate():
    (spec,) = calculator_tools(AgentToolEnvironment(agent_name="a", workspace=None))  # type: ignore[arg-type]
    return spec.function


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("2 + 3 * 4", "14"),
        ("(2 + 3) * 4", "20"),
        ("7 / 2", "3.5"),
        ("7 // 2", "3"),
        ("-7 % 3", "2"),
        ("2 ** 10", "1024"),
        ("sqrt(16)", "4"),
        ("round(2.567, 2)", "2.57"),
        ("round(2.5)", "2"),
        ("round(123456, -3)", "123000"),
        ("max(1, 5, 3) - min(4, 2)", "3"),
        ("factorial(5)", "120"),
        ("1e3 + 0.5", "1000.5"),
        ("sin(0) + cos(0)", "1"),
    ],
)
def test_calculator_evaluates_arithmetic(expression, expected):
    assert calculate()(expression) == expected


def test_calculator_knows_constants():
    assert evaluate("pi") == math.pi
    assert evaluate("2 * e") == 2 * math.e


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("__import__('os').system('true')", "unsupported syntax"),
        ("__import__('os')", "unknown function"),
        ("open('x')", "unknown function"),
        ("x + 1", "unknown name"),
        ("'a' * 3", "only numbers"),
        ("[1, 2]", "unsupported syntax"),
        ("(1).__class__", "unsupported syntax"),
        ("1 / 0", "ZeroDivisionError"),
        ("sqrt(-1)", "ValueError"),
        ("2 ** 100000", "too large"),
        ("(2 ** 4000) * (2 ** 4000)", "too large"),
        ("factorial(10000)", "factorial"),
        ("1 +", "not a valid expression"),
        ("1" * 2000, "longer than"),
    ],
)
def test_calculator_refuses_everything_but_math(expression, problem):
    with pytest.raises(ToolError, match=problem):
        calculate()(expression)


def test_calculator_evaluates_long_sums_and_big_roundings():
    assert calculate()("+".join(["1"] * 500)) == "500"
    assert calculate()("round(2 ** 4000, -1200)").endswith("0" * 1200)


# Each of these ran for minutes (or forever) on the event loop before the arguments were bounded.
EXPENSIVE = [
    ("round(1, -10**8)", "round needs a whole number of digits"),
    ("round(1, 10**8)", "round needs a whole number of digits"),
    ("round(10**1000, -10**6)", "round needs a whole number of digits"),
    ("round(1.5, 10**9)", "round needs a whole number of digits"),
    ("round(1, 2.5)", "round needs a whole number of digits"),
    ("-" * 999 + "1", "nested more than"),
    ("9 ** 9 ** 9", "exponent is too large"),
    ("factorial(10 ** 9)", "factorial needs"),
    ("(2 ** 4000) ** 3", "too large"),
]


@pytest.mark.parametrize(("expression", "problem"), EXPENSIVE)
def test_calculator_refuses_expensive_arguments_before_computing_them(expression, problem):
    # The peak of memory allocated while evaluating: computing any of these would take megabytes to gigabytes.
    code = (
        "import sys, tracemalloc\nfrom mindroom.tool_system.calculator import evaluate\ntracemalloc.start()\n"
        "try:\n    evaluate(sys.argv[1])\nexcept Exception as exc:\n    print(exc)\n"
        "print(tracemalloc.get_traced_memory()[1])\n"
    )
    try:  # in a child process, so an unbounded operation fails this test instead of hanging the suite
        done = subprocess.run([sys.executable, "-c", code, expression], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{expression!r} was still being evaluated after 120 s")
    refusal, peak_bytes = done.stdout.strip().rsplit("\n", 1)

    assert problem in refusal
    assert int(peak_bytes) < 1_000_000


@pytest.mark.asyncio
async def test_calculator_runs_isolated_and_refuses_round_bombs_through_the_tool_path():
    (spec,) = calculator_tools(AgentToolEnvironment(agent_name="a", workspace=None))  # type: ignore[arg-type]
    assert spec.isolated and spec.limits == CALCULATOR_LIMITS
    await call_tool(spec, "a", {"expression": "1 + 1"})  # the worker is warm from here on

    text = await call_tool(spec, "a", {"expression": "round(1, -10**8)"})

    # Refused by the calculator's own check (this message), not stopped at the worker's limits (another one).
    assert text == (
        "[TOOL CALL FAILED]\nTool: calculate\nError: round needs a whole number of digits from -1300 to 1300"
    )
    assert await call_tool(spec, "a", {"expression": "6 * 7"}) == "42"
