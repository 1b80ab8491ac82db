"""The evaluator contract (``seamkit._evals``): scores, attempts, and ``evaluate``'s rules."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from seamkit._agent.agent import Agent
from seamkit._evals import Attempt, EvalCase, EvalContext, Evaluator, Score, evaluate
from seamkit._hookspecs import KIND_BY_HOOK
from seamkit._plugins.ports_check import kind_port
from seamkit._tools import tool
from seamkit.testing import ScriptedModel, make_test_ctx
from seamkit.values import LLMResult


async def _no_chat(model: Any, request: Any) -> LLMResult:
    raise AssertionError("no model call expected")


def ectx() -> EvalContext:
    return EvalContext(make_test_ctx(), _no_chat)


class Contains:
    name = "contains"

    def __init__(self, word: str) -> None:
        self.word = word

    async def evaluate(self, attempt: Attempt, ctx: EvalContext) -> Score:
        ok = self.word in attempt.text
        return Score(self.name, "pass" if ok else "fail", reason=f"{self.word!r} {'in' if ok else 'not in'} the answer")


async def an_attempt() -> Attempt:
    @tool(side_effecting=False)
    def lookup(city: str) -> str:
        """Look up the weather in a city."""
        return f"sunny in {city}"

    model = ScriptedModel([{"tool_calls": [{"name": "lookup", "arguments": {"city": "Oslo"}}]}, "It is sunny."])
    result = await Agent(model, tools=[lookup]).run("weather in Oslo?")
    return Attempt(EvalCase("c1", "weather in Oslo?"), 0, result, None, 0.25)


async def test_an_attempt_reads_the_run() -> None:
    a = await an_attempt()
    assert a.text == "It is sunny." and a.output == "It is sunny."
    assert [(c.name, dict(c.arguments)) for c in a.tool_calls] == [("lookup", {"city": "Oslo"})]
    assert [r.content for r in a.tool_results] == ["sunny in Oslo"]
    assert a.result is not None and a.usage is a.result.usage


def test_an_attempt_of_a_failed_run_has_nothing_to_read() -> None:
    a = Attempt(EvalCase("c", "x"), 1, None, "ProviderError(timeout): slow", 3.0)
    assert (a.text, a.output, a.transcript, a.tool_calls, a.cost) == ("", None, (), (), None)


async def test_a_check_passes_and_fails() -> None:
    a = await an_attempt()
    assert (await evaluate(Contains("sunny"), a, ectx())).passed
    failed = await evaluate(Contains("rain"), a, ectx())
    assert failed.status == "fail" and not failed.passed and "'rain' not in" in failed.reason


async def test_a_raising_evaluator_is_an_error_score_not_a_crash() -> None:
    class Broken:
        name = "broken"

        async def evaluate(self, attempt: Attempt, ctx: EvalContext) -> Score:
            raise KeyError("expected")

    score = await evaluate(Broken(), await an_attempt(), ectx())
    assert score.status == "error" and not score.passed
    assert score.evaluator == "broken" and score.reason == "the evaluator raised KeyError: 'expected'"


async def test_an_evaluator_returning_something_else_is_an_error_score() -> None:
    class Sloppy:
        name = "sloppy"

        async def evaluate(self, attempt: Attempt, ctx: EvalContext) -> Any:
            return True

    score = await evaluate(Sloppy(), await an_attempt(), ectx())
    assert score.status == "error" and "returned bool, not a Score" in score.reason


async def test_cancellation_propagates_through_evaluate() -> None:
    class Slow:
        name = "slow"

        async def evaluate(self, attempt: Attempt, ctx: EvalContext) -> Score:
            await asyncio.sleep(30)
            raise AssertionError("not reached")

    task = asyncio.ensure_future(evaluate(Slow(), await an_attempt(), ectx()))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_a_score_value_is_in_the_unit_interval(value: float) -> None:
    if 0.0 <= value <= 1.0:
        assert Score("x", "pass", value=value).value == value
    else:
        with pytest.raises(ValueError, match=r"in \[0, 1\]"):
            Score("x", "pass", value=value)


def test_a_score_status_is_one_of_three() -> None:
    with pytest.raises(ValueError, match="pass, fail or error"):
        Score("x", "ok")  # type: ignore[arg-type]
    assert Score("j", "error").usage.cost in (None, Decimal(0))


def test_evaluator_is_a_registry_kind_with_its_port() -> None:
    assert KIND_BY_HOOK["seamkit_register_evaluators"] == "evaluator"
    port = kind_port("evaluator")
    assert port is not None and isinstance(Contains("a"), port.protocol)
    assert isinstance(Contains("a"), Evaluator) and not isinstance(object(), Evaluator)
