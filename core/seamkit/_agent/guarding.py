"""Running an agent's guards at one point of a run (the contract is :mod:`seamkit._guardrails`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from seamkit._guardrails import METHODS, Guard, GuardContext, GuardrailTripped, Point, Verdict
from seamkit._lazy import lazy_module
from seamkit.errors import BudgetExceeded, RunCancelled
from seamkit.values import ToolCall, ToolResult, freeze

if TYPE_CHECKING:
    import asyncio
else:  # imported on first use: a third of a usable agent's import time (issue 19)
    asyncio = lazy_module("asyncio", globals())

__all__ = ["Report", "check", "guards_by_point"]

#: ``report(guard, point, what, text)``: ``what`` is ``rewrite``, ``flag``, ``block`` (an advisory
#: guard's) or ``failed`` (an advisory guard's); the run records it.
Report = Callable[[Guard, Point, str, str], None]

#: What a rewrite must hand back at each point (``output``: anything).
_REWRITE_TYPES: Mapping[str, type | tuple[type, ...]] = {"input": str, "tool": Mapping, "tool_result": str}

# Errors that are not the guard's verdict: they end the run as themselves (a cancelled run, a budget
# spent by a guard's own model call), whether the guard is advisory or not.
_PASS_THROUGH = (RunCancelled, BudgetExceeded, GuardrailTripped)


def guards_by_point(guards: Sequence[Guard]) -> dict[str, tuple[Guard, ...]]:
    """The guards acting at each point (in the agent's order); points without guards are absent."""
    out: dict[str, list[Guard]] = {}
    for g in guards:
        for p in g.at or ():  # always set once built (None only before __post_init__)
            out.setdefault(p, []).append(g)
    return {p: tuple(gs) for p, gs in out.items()}


async def check(guards: Sequence[Guard], point: Point, value: Any, context: GuardContext, report: Report,
                validate: Callable[[Any], Any] | None = None) -> Any:
    """Run ``guards`` at ``point`` on ``value`` (the task's text, a
    :class:`~seamkit.values.ToolCall`, a :class:`~seamkit.values.ToolResult` or the output), in
    order, each seeing the value as the previous rewrote it; returns the value to use (a rewritten
    call or result is a new ``ToolCall`` / ``ToolResult``).

    Raises :class:`~seamkit._guardrails.GuardrailTripped` for a block of a guard that is not
    advisory, and (``failed=True``) when such a guard raises or returns anything but a
    :class:`~seamkit._guardrails.Verdict`, or a rewrite of the wrong type (fail closed). An
    advisory guard's block or failure is reported and skipped. ``validate`` (the output point: the
    answer's type or schema) takes each rewritten value and returns it as the run will use it, or
    raises: the guard that rewrote it then failed. Cancellation,
    :class:`~seamkit.errors.RunCancelled` and :class:`~seamkit.errors.BudgetExceeded` propagate."""
    method = METHODS[point]
    for g in guards:
        try:
            verdict = await getattr(g.guardrail, method)(value, context)
            problem = _problem(verdict, point)
            if problem is not None:
                raise TypeError(problem)
            new = value
            if verdict.action == "rewrite":
                new = _rewritten(point, value, verdict.value)
                if validate is not None:
                    new = validate(new)
        except asyncio.CancelledError:
            raise
        except _PASS_THROUGH:
            raise
        except Exception as exc:
            why = f"{type(exc).__name__}: {exc}"
            if g.advisory:
                report(g, point, "failed", why)
                continue
            raise GuardrailTripped(g.name, point, why, failed=True) from exc
        for flag in verdict.flags:
            report(g, point, "flag", flag)
        if verdict.action == "block":
            if g.advisory:
                report(g, point, "block", verdict.reason)
                continue
            raise GuardrailTripped(g.name, point, verdict.reason)
        if verdict.action == "rewrite":
            report(g, point, "rewrite", verdict.reason)
            value = new
    return value


def _rewritten(point: str, value: Any, new: Any) -> Any:
    """The checked value after a rewrite: a call with the new arguments, a result with the new
    content, else the new value itself."""
    if point == "tool":
        return ToolCall(value.id, value.name, freeze(new))
    if point == "tool_result":
        return ToolResult(value.call_id, value.name, new, value.is_error)
    return new


def _problem(verdict: Any, point: str) -> str | None:
    if not isinstance(verdict, Verdict):
        return f"{METHODS[point]} returned {type(verdict).__name__}, not a Verdict"
    if verdict.action not in ("allow", "block", "rewrite"):
        return f"unknown verdict action {verdict.action!r}"
    want = _REWRITE_TYPES.get(point)
    if verdict.action == "rewrite" and want is not None and not isinstance(verdict.value, want):
        shape = "a mapping of arguments" if point == "tool" else "text (str)"
        return f"a rewrite at the {point} point must be {shape}, got {type(verdict.value).__name__}"
    return None
