"""The ``calculator`` tool: exact arithmetic on one expression, without ``eval``.

The expression is parsed with :func:`ast.parse` (``mode="eval"``) and only a whitelist of nodes is
evaluated: numbers, ``+ - * / // % **``, unary ``+``/``-``, parentheses, the functions
:data:`FUNCTIONS` and the constants :data:`CONSTANTS`. Rational arithmetic is exact
(:class:`fractions.Fraction`: ``0.1 + 0.2`` is ``0.3`` and ``1/3*3`` is ``1``); irrational
operations (``sqrt(2)``, ``2 ** 0.5``, ``pi``, ``log``...) switch to binary floating point.

Abuse guards: the expression length (``max_length`` characters), the nesting depth
(:data:`MAX_DEPTH`), and the size of every intermediate number (``max_digits`` decimal digits of
numerator or denominator); a power whose result would exceed it is refused *before* it is
computed, so ``9**9**9`` fails at once instead of hanging.
"""

from __future__ import annotations

import ast
import math
import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from seamkit.plugin import FunctionTool, tool

from seamkit_tools_basic.config import CalculatorConfig
from seamkit_tools_basic.errors import CalculatorError

__all__ = ["CONSTANTS", "FUNCTIONS", "MAX_DEPTH", "Calculator", "build_calculator", "evaluate"]

Number = Fraction | float

MAX_DEPTH = 400
"""Deepest nesting of the expression tree (operators, calls, unary signs) that is evaluated."""

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}
"""Names usable in expressions (floating point)."""

_OPS: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
}
_REFUSED_OPS: dict[type[ast.operator], str] = {
    ast.BitXor: "'^' is not supported; use ** for powers",
    ast.BitAnd: "'&' is not supported",
    ast.BitOr: "'|' is not supported",
    ast.LShift: "'<<' is not supported",
    ast.RShift: "'>>' is not supported",
    ast.MatMult: "'@' is not supported",
}
_NODE_NAMES: dict[type[ast.AST], str] = {
    ast.Compare: "comparisons",
    ast.BoolOp: "'and'/'or'",
    ast.IfExp: "conditional expressions",
    ast.Attribute: "attribute access",
    ast.Subscript: "indexing",
    ast.Tuple: "tuples (give one expression)",
    ast.List: "lists",
    ast.Dict: "dicts",
    ast.Set: "sets",
    ast.Lambda: "lambda",
    ast.JoinedStr: "strings",
    ast.ListComp: "comprehensions",
    ast.GeneratorExp: "comprehensions",
    ast.NamedExpr: "assignment",
    ast.Starred: "'*' unpacking",
    ast.Await: "await",
}


def _describe(value: Number) -> str:
    """``value`` as an operand in a message: parenthesised when negative or a fraction."""
    if isinstance(value, Fraction):
        text = str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    else:
        text = repr(value)
    return f"({text})" if value < 0 or "/" in text else text


class Calculator:
    """Evaluates arithmetic expressions safely. ``max_length``: longest expression in characters;
    ``max_digits``: largest intermediate number in decimal digits. Calling ``evaluate(expr)``
    returns an ``int`` when the value is integral, else a ``float``; it raises
    :class:`~seamkit_tools_basic.errors.CalculatorError` (a ``ToolError``) for anything else."""

    def __init__(self, *, max_length: int = 500, max_digits: int = 1000) -> None:
        self.max_length = max_length
        self.max_digits = max_digits
        self._max_bits = math.ceil(max_digits * math.log2(10))
        self._functions: dict[str, Callable[..., Number]] = {
            "abs": self._abs,
            "round": self._round,
            "min": self._min,
            "max": self._max,
            "sqrt": self._sqrt,
            "floor": self._floor,
            "ceil": self._ceil,
            "exp": self._float_fn(math.exp, 1),
            "log": self._log,
            "log10": self._float_fn(math.log10, 1),
            "sin": self._float_fn(math.sin, 1),
            "cos": self._float_fn(math.cos, 1),
            "tan": self._float_fn(math.tan, 1),
        }

    # -- entry point ---------------------------------------------------------------------------

    def evaluate(self, expression: str) -> int | float:
        """The value of ``expression``: ``int`` when integral (and, for floating-point results,
        below 2**53), else ``float``. Raises :class:`CalculatorError` naming the problem."""
        if not isinstance(expression, str):
            raise CalculatorError("the expression must be a string")
        if len(expression) > self.max_length:
            raise CalculatorError(f"expression too long ({len(expression)} characters; the limit is {self.max_length})")
        text = expression.strip()
        if not text:
            raise CalculatorError("empty expression")
        if "\x00" in text:
            raise CalculatorError("the expression contains a NUL character")
        try:
            with warnings.catch_warnings():
                # e.g. "1if" or "1_": a warning for Python, not a valid arithmetic expression here
                warnings.simplefilter("error", SyntaxWarning)
                tree = ast.parse(text, mode="eval")
        except SyntaxError as exc:
            where = f" at column {exc.offset}" if exc.offset else ""
            raise CalculatorError(f"not a valid expression{where}: {exc.msg}") from None
        except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
            raise CalculatorError(f"not a valid expression: {exc}") from None
        try:
            value = self._eval(tree.body, 0)
            return self._output(value)
        except CalculatorError:
            raise
        except ZeroDivisionError:
            raise CalculatorError("division by zero") from None
        except OverflowError:
            raise CalculatorError("result too large") from None
        except RecursionError:
            raise CalculatorError(f"expression nested too deeply (limit {MAX_DEPTH} levels)") from None

    # -- tree walk -------------------------------------------------------------------------------

    def _eval(self, node: ast.AST, depth: int) -> Number:
        if depth > MAX_DEPTH:
            raise CalculatorError(f"expression nested too deeply (limit {MAX_DEPTH} levels)")
        if isinstance(node, ast.Constant):
            return self._constant(node.value)
        if isinstance(node, ast.BinOp):
            op = type(node.op)
            if op in _REFUSED_OPS:
                raise CalculatorError(_REFUSED_OPS[op])
            if op not in _OPS:
                raise CalculatorError(f"operator {type(node.op).__name__} is not supported")
            left = self._eval(node.left, depth + 1)
            right = self._eval(node.right, depth + 1)
            return self._binop(_OPS[op], left, right)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub):
                return -self._eval(node.operand, depth + 1)
            if isinstance(node.op, ast.UAdd):
                return +self._eval(node.operand, depth + 1)
            sym = "not" if isinstance(node.op, ast.Not) else "~"
            raise CalculatorError(f"'{sym}' is not supported")
        if isinstance(node, ast.Name):
            if node.id in CONSTANTS:
                return CONSTANTS[node.id]
            if node.id in self._functions:
                raise CalculatorError(f"{node.id!r} is a function; call it, e.g. {node.id}(2)")
            raise CalculatorError(
                f"unknown name {node.id!r}; known constants: {', '.join(CONSTANTS)}; "
                f"functions: {', '.join(self._functions)}"
            )
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        for kind, label in _NODE_NAMES.items():
            if isinstance(node, kind):
                raise CalculatorError(f"{label} not supported in arithmetic expressions")
        raise CalculatorError(f"unsupported syntax: {type(node).__name__}")

    def _constant(self, value: Any) -> Number:
        if isinstance(value, bool):
            raise CalculatorError("True/False are not numbers here")
        if isinstance(value, int):
            return self._check(Fraction(value))
        if isinstance(value, float):
            if not math.isfinite(value):
                raise CalculatorError("number literal too large")
            # The shortest repr is the decimal the user wrote (for ordinary literals): exact.
            return self._check(Fraction(repr(value)))
        if isinstance(value, complex):
            raise CalculatorError("complex numbers are not supported")
        if isinstance(value, (str, bytes)):
            raise CalculatorError("text is not a number; write digits, e.g. 2 + 3")
        raise CalculatorError(f"unsupported literal {value!r}")

    def _call(self, node: ast.Call, depth: int) -> Number:
        if not isinstance(node.func, ast.Name):
            raise CalculatorError("only the built-in functions can be called: " + ", ".join(self._functions))
        name = node.func.id
        fn = self._functions.get(name)
        if fn is None:
            raise CalculatorError(f"unknown function {name!r}; available: {', '.join(self._functions)}")
        if node.keywords:
            raise CalculatorError(f"{name}() takes no keyword arguments")
        args = [self._eval(a, depth + 1) for a in node.args]
        try:
            return self._check(fn(*args))
        except TypeError:
            raise CalculatorError(f"wrong number of arguments for {name}()") from None
        except ValueError as exc:
            raise CalculatorError(f"{name}({', '.join(_describe(a) for a in args)}): {exc}") from None

    # -- arithmetic ------------------------------------------------------------------------------

    def _check(self, value: Any) -> Number:
        """Refuse results that are too large, infinite, NaN or complex."""
        if isinstance(value, int) and not isinstance(value, bool):
            value = Fraction(value)
        if isinstance(value, Fraction):
            if value.numerator.bit_length() > self._max_bits or value.denominator.bit_length() > self._max_bits:
                raise CalculatorError(f"result too large (more than {self.max_digits} digits)")
            return value
        if isinstance(value, float):
            if math.isnan(value):
                raise CalculatorError("result is not a number (NaN)")
            if math.isinf(value):
                raise CalculatorError("result too large for floating point")
            return value
        if isinstance(value, complex):
            raise CalculatorError("result is not a real number")
        raise CalculatorError(f"unexpected value {value!r}")

    @staticmethod
    def _float(value: Number) -> float:
        try:
            return float(value)
        except OverflowError:
            raise CalculatorError("number too large for floating point") from None

    def _binop(self, op: str, a: Number, b: Number) -> Number:
        if op == "**":
            return self._pow(a, b)
        if isinstance(a, float) or isinstance(b, float):
            a, b = self._float(a), self._float(b)
        if op == "+":
            r = a + b
        elif op == "-":
            r = a - b
        elif op == "*":
            r = a * b
        elif op == "/":
            r = a / b
        elif op == "//":
            r = a // b
        else:
            r = a % b
        return self._check(r)

    def _pow(self, base: Number, exp: Number) -> Number:
        if isinstance(base, Fraction) and isinstance(exp, Fraction) and exp.denominator == 1:
            n = exp.numerator
            if n != 0 and base != 0:
                # Size of the result in bits, estimated from logs; refuse before computing.
                magnitude = max(math.log2(abs(base.numerator)), math.log2(base.denominator))
                # (int vs float comparison is exact in Python, even for a huge exponent)
                if magnitude > 0 and abs(n) > (self._max_bits + 64) / magnitude:
                    raise CalculatorError(
                        f"result too large: {_describe(base)} ** {_describe(exp)} has more than "
                        f"{self.max_digits} digits"
                    )
            if base == 0 and n < 0:
                raise CalculatorError("division by zero (zero to a negative power)")
            return self._check(base**n)
        fb, fe = self._float(base), self._float(exp)
        if fb == 0.0 and fe < 0:
            raise CalculatorError("division by zero (zero to a negative power)")
        try:
            r = fb**fe
        except OverflowError:
            raise CalculatorError("result too large for floating point") from None
        if isinstance(r, complex):
            raise CalculatorError(
                f"{_describe(base)} ** {_describe(exp)} is not a real number (negative base, fractional power)"
            )
        return self._check(r)

    def _output(self, value: Number) -> int | float:
        if isinstance(value, Fraction):
            if value.denominator == 1:
                return value.numerator
            return self._float(value)
        if value.is_integer() and abs(value) < 2**53:
            return int(value)
        return value

    # -- functions -------------------------------------------------------------------------------

    @staticmethod
    def _abs(x: Number) -> Number:
        return abs(x)

    def _round(self, x: Number, ndigits: Number | None = None) -> Number:
        if ndigits is None:
            return Fraction(round(x))
        if not (isinstance(ndigits, Fraction) and ndigits.denominator == 1):
            raise ValueError("the number of digits must be an integer")
        n = int(ndigits)
        if abs(n) > self.max_digits:
            raise ValueError(f"at most {self.max_digits} digits")
        return round(x, n)

    @staticmethod
    def _min(*args: Number) -> Number:
        if not args:
            raise TypeError
        return min(args)

    @staticmethod
    def _max(*args: Number) -> Number:
        if not args:
            raise TypeError
        return max(args)

    def _sqrt(self, x: Number) -> Number:
        if x < 0:
            raise ValueError("square root of a negative number")
        if isinstance(x, Fraction):
            rn, rd = math.isqrt(x.numerator), math.isqrt(x.denominator)
            if rn * rn == x.numerator and rd * rd == x.denominator:
                return Fraction(rn, rd)
        return math.sqrt(self._float(x))

    @staticmethod
    def _floor(x: Number) -> Number:
        return Fraction(math.floor(x))

    @staticmethod
    def _ceil(x: Number) -> Number:
        return Fraction(math.ceil(x))

    def _log(self, x: Number, base: Number | None = None) -> Number:
        if x <= 0 or (base is not None and (base <= 0 or base == 1)):
            raise ValueError("logarithm of a non-positive number or to base 0 or 1")
        if base is None:
            return math.log(self._float(x))
        return math.log(self._float(x), self._float(base))

    def _float_fn(self, fn: Callable[[float], float], arity: int) -> Callable[..., Number]:
        def call(*args: Number) -> Number:
            if len(args) != arity:
                raise TypeError
            try:
                return fn(*(self._float(a) for a in args))
            except OverflowError:
                raise CalculatorError("result too large for floating point") from None

        return call


FUNCTIONS: tuple[str, ...] = tuple(Calculator()._functions)
"""Function names usable in expressions."""


def evaluate(expression: str, *, max_length: int = 500, max_digits: int = 1000) -> int | float:
    """Evaluate ``expression`` with a default :class:`Calculator` (see its limits). Raises
    :class:`~seamkit_tools_basic.errors.CalculatorError`."""
    return Calculator(max_length=max_length, max_digits=max_digits).evaluate(expression)


def build_calculator(config: CalculatorConfig | None = None) -> FunctionTool:
    """The ``calculator`` tool (not side-effecting) for ``config``."""
    cfg = config or CalculatorConfig()
    calc = Calculator(max_length=cfg.max_length, max_digits=cfg.max_digits)
    description = (
        "Evaluate one arithmetic expression exactly and return the number. Supports + - * / "
        "// (floor division) % (modulo) ** (power), unary minus, parentheses, the functions "
        f"{', '.join(calc._functions)} and the constants {', '.join(CONSTANTS)}. "
        "Fractions are exact (1/3*3 = 1); sqrt, log, trig and fractional powers use floating point. "
        f"At most {cfg.max_length} characters; numbers above {cfg.max_digits} digits are refused."
    )

    @tool(side_effecting=False, name="calculator", description=description, blocking=False)
    def calculator(expression: str) -> int | float:
        """Evaluate an arithmetic expression.

        Args:
            expression: The arithmetic expression to evaluate, e.g. "(2 + 3) * 4 / 7" or
                "sqrt(2) * round(pi, 3)". Use ** for powers, not ^.
        """
        return calc.evaluate(expression)

    return calculator
