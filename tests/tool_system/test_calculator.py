"""The built-in calculator: plain math evaluated without `eval`, everything else refused."""

import math

import pytest

from mindroom.tool_system.calculator import calculator_tools, evaluate
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
