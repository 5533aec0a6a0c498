"""The built-in `calculator` tool: arithmetic and common math functions, evaluated without `eval`.

Every operation is bounded before it runs (integer sizes, exponents, `round` digits, factorials, nesting),
so no expression the model writes costs more than milliseconds. The tool also runs isolated (a worker
process with a time and memory limit) in case a bound is ever missed.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from mindroom.tool_system.spec import AgentToolEnvironment, IsolationLimits, ToolError, ToolSpec

__all__ = [
    "CALCULATOR_LIMITS",
    "CALCULATOR_TOOL_NAMES",
    "MAX_DEPTH",
    "MAX_EXPONENT",
    "MAX_EXPRESSION_CHARS",
    "MAX_FACTORIAL",
    "MAX_INT_BITS",
    "MAX_ROUND_DIGITS",
    "Number",
    "calculate",
    "calculator_tools",
    "evaluate",
]

CALCULATOR_TOOL_NAMES = ("calculate",)

MAX_EXPRESSION_CHARS = 1000
MAX_INT_BITS = 4096
MAX_EXPONENT = 10000
MAX_FACTORIAL = 500
# An int of MAX_INT_BITS has about 1233 decimal digits; rounding to more digits than that is a no-op.
MAX_ROUND_DIGITS = 1300
# Deep enough for any sum that fits in MAX_EXPRESSION_CHARS, shallow enough for the recursive evaluator.
MAX_DEPTH = 600
CALCULATOR_LIMITS = IsolationLimits(timeout_s=5.0, memory_bytes=256 * 1024 * 1024)

Number = int | float

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf}


def _factorial(value: Number) -> int:
    if not float(value).is_integer() or value < 0 or value > MAX_FACTORIAL:
        raise ToolError(f"factorial needs a whole number from 0 to {MAX_FACTORIAL}")
    return math.factorial(int(value))


def _round(value: Number, ndigits: Number | None = None) -> Number:
    # round(1, -10**8) would compute 10**(10**8) first: bound the digits before rounding.
    if ndigits is None:
        return round(value)
    if not isinstance(ndigits, int) or abs(ndigits) > MAX_ROUND_DIGITS:
        raise ToolError(f"round needs a whole number of digits from -{MAX_ROUND_DIGITS} to {MAX_ROUND_DIGITS}")
    return round(value, ndigits)


_FUNCTIONS: dict[str, Callable[..., Number]] = {
    "abs": abs,
    "round": _round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "log10": math.log10,
    "log2": math.log2,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "atan2": math.atan2,
    "hypot": math.hypot,
    "floor": math.floor,
    "ceil": math.ceil,
    "degrees": math.degrees,
    "radians": math.radians,
    "factorial": _factorial,
}


def _checked(value: Any) -> Number:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ToolError("only numbers are supported")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ToolError("the result is too large")
    return value


def _power(base: Number, exponent: Number) -> Number:
    too_large = abs(exponent) > MAX_EXPONENT or (
        isinstance(base, int) and isinstance(exponent, int) and base.bit_length() * exponent > 2 * MAX_INT_BITS
    )
    if too_large and abs(base) > 1:
        raise ToolError("the exponent is too large")
    result = operator.pow(base, exponent)
    if isinstance(result, complex):
        raise ToolError("the result is not a real number")
    return _checked(result)


def _eval(node: ast.AST) -> Number:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant):
        return _checked(node.value)
    if isinstance(node, ast.Name):
        if node.id not in _CONSTANTS:
            raise ToolError(f"unknown name {node.id!r}")
        return _CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _checked(_UNARY[type(node.op)](_eval(node.operand)))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow):
            return _power(left, right)
        return _checked(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        function = _FUNCTIONS.get(node.func.id)
        if function is None:
            raise ToolError(f"unknown function {node.func.id!r} (known: {', '.join(sorted(_FUNCTIONS))})")
        return _checked(function(*(_eval(arg) for arg in node.args)))
    raise ToolError(f"unsupported syntax: {type(node).__name__}")


def _depth(node: ast.AST) -> int:
    deepest, level = 0, [(node, 1)]
    while level:
        current, depth = level.pop()
        deepest = max(deepest, depth)
        level.extend((child, depth + 1) for child in ast.iter_child_nodes(current))
    return deepest


def evaluate(expression: str) -> Number:
    """The value of an arithmetic expression; `ToolError` for anything that is not plain math."""
    if not isinstance(expression, str):
        raise ToolError("the expression must be text")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError) as exc:
        raise ToolError(f"not a valid expression: {getattr(exc, 'msg', exc)}") from None
    except (MemoryError, RecursionError):
        raise ToolError("the expression is nested too deeply") from None
    if _depth(tree) > MAX_DEPTH:
        raise ToolError(f"the expression is nested more than {MAX_DEPTH} levels deep")
    try:
        return _eval(tree)
    except ToolError:
        raise
    except RecursionError:
        raise ToolError("the expression is nested too deeply") from None
    except (ArithmeticError, ValueError, TypeError) as exc:
        raise ToolError(f"{type(exc).__name__}: {exc}") from None


def _format(value: Number) -> str:
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e16 else format(value, ".15g")
    return str(value)


def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression and return the result.

    Supports + - * / // % ** and parentheses, the constants pi, e and tau, and the functions
    abs, round, min, max, sqrt, exp, log, log10, log2, sin, cos, tan, asin, acos, atan, atan2,
    hypot, floor, ceil, degrees, radians and factorial.

    Args:
        expression: The expression, for example "2 * (3 + 4) ** 2" or "sqrt(2) / 2".
    """
    return _format(evaluate(expression))


def calculator_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `calculator` group: `calculate(expression)`, run isolated (module-level, so a worker can import it)."""
    return (ToolSpec(name="calculate", function=calculate, isolated=True, limits=CALCULATOR_LIMITS),)
