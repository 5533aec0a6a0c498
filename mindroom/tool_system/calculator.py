"""The built-in `calculator` tool: arithmetic and common math functions, evaluated without `eval`."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = [
    "CALCULATOR_TOOL_NAMES",
    "MAX_EXPONENT",
    "MAX_EXPRESSION_CHARS",
    "MAX_FACTORIAL",
    "MAX_INT_BITS",
    "Number",
    "calculator_tools",
    "evaluate",
]

CALCULATOR_TOOL_NAMES = ("calculate",)

MAX_EXPRESSION_CHARS = 1000
MAX_INT_BITS = 4096
MAX_EXPONENT = 10000
MAX_FACTORIAL = 500

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


_FUNCTIONS: dict[str, Callable[..., Number]] = {
    "abs": abs,
    "round": round,
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


def evaluate(expression: str) -> Number:
    """The value of an arithmetic expression; `ToolError` for anything that is not plain math."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ToolError(f"not a valid expression: {exc.msg}") from None
    try:
        return _eval(tree)
    except ToolError:
        raise
    except (ArithmeticError, ValueError, TypeError) as exc:
        raise ToolError(f"{type(exc).__name__}: {exc}") from None


def _format(value: Number) -> str:
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e16 else format(value, ".15g")
    return str(value)


def calculator_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `calculator` group: `calculate(expression)`."""

    def calculate(expression: str) -> str:
        """Evaluate an arithmetic expression and return the result.

        Supports + - * / // % ** and parentheses, the constants pi, e and tau, and the functions
        abs, round, min, max, sqrt, exp, log, log10, log2, sin, cos, tan, asin, acos, atan, atan2,
        hypot, floor, ceil, degrees, radians and factorial.

        Args:
            expression: The expression, for example "2 * (3 + 4) ** 2" or "sqrt(2) / 2".
        """
        return _format(evaluate(expression))

    return (ToolSpec(name="calculate", function=calculate),)
