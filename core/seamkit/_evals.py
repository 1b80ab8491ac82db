"""Evaluators: the contract for judging what an agent did (the checks, the LLM judge and the
``seamkit eval`` runner are the ``seamkit-evals`` plugin).

An eval runs each :class:`EvalCase` against an agent (possibly several times); each run is an
:class:`Attempt`, which every evaluator of the case judges into a :class:`Score`. Two tiers:

- a *check* is deterministic code (the text contains a word, the output equals the expected value,
  a tool was called). A check that raises is recorded as a score with status ``error``: failed,
  never a crash of the suite.
- a *judge* asks a model. It calls it through :meth:`EvalContext.chat`, which sends the request
  through the eval's middlewares (so it is traced, retried and charged to the eval's budget like
  any model call); a judgement that fails or cannot be read is a score with status ``error``, not
  a pass.

An evaluator is any object with a ``name`` and ``async evaluate(attempt, ctx) -> Score``
(:class:`Evaluator`); plugins register factories under the registry kind ``evaluator``
(hook ``seamkit_register_evaluators``). :func:`evaluate` runs one evaluator with those rules.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from seamkit.values import EMPTY, FrozenDict, LLMResult, Message, ToolCall, ToolResult, Usage

if TYPE_CHECKING:
    from seamkit._agent.result import AgentResult
    from seamkit._ports import LLMPort
    from seamkit._runtime.context import RunContext
    from seamkit.values import ChatRequest

__all__ = ["Attempt", "EvalCase", "EvalContext", "Evaluator", "Score", "ScoreStatus", "evaluate"]

ScoreStatus = Literal["pass", "fail", "error"]


@dataclass(frozen=True, slots=True)
class EvalCase:
    """One case of an eval: ``id`` (unique in its suite), the ``input`` given to the agent (the
    task: text, or messages), the ``expected`` value the evaluators compare with (free-form: a
    text, a typed output's fields, ``None``), prompt ``variables`` and free-form ``metadata``."""

    id: str
    input: str | tuple[Message, ...]
    expected: Any = None
    variables: FrozenDict = EMPTY
    metadata: FrozenDict = EMPTY


@dataclass(frozen=True, slots=True)
class Attempt:
    """One run of a case: the ``case``, which ``repeat`` it was (from 0), the agent's ``result``
    (``None`` when the run raised), the classified ``error`` when it raised (``"ProviderError
    (rate_limited): ..."``; ``None`` otherwise) and the wall-clock ``latency_s`` (seconds) of the
    run. The properties read the result: ``output``, ``text`` (the last assistant text),
    ``usage``, ``cost`` (USD ``Decimal``, ``None`` when unpriced or unknown), ``tool_calls`` and
    ``tool_results`` in the order made, and the ``transcript``."""

    case: EvalCase
    repeat: int
    result: AgentResult | None
    error: str | None
    latency_s: float

    @property
    def output(self) -> Any:
        return self.result.output if self.result is not None else None

    @property
    def text(self) -> str:
        for m in reversed(self.transcript):
            if m.role == "assistant" and m.text:
                return m.text
        return ""

    @property
    def transcript(self) -> tuple[Message, ...]:
        return self.result.transcript if self.result is not None else ()

    @property
    def usage(self) -> Usage:
        return self.result.usage if self.result is not None else Usage()

    @property
    def cost(self) -> Decimal | None:
        return self.usage.cost

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(c for m in self.transcript for c in m.content if isinstance(c, ToolCall))

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        return tuple(r for m in self.transcript for r in m.tool_results)


@dataclass(frozen=True, slots=True)
class Score:
    """One evaluator's judgement of one attempt: the ``evaluator``'s name, the ``status``
    (``pass``, ``fail``, or ``error``: the evaluator raised or its judgement could not be had or
    read, counted as not passed), an optional graded ``value`` in [0, 1], the ``reason`` (a
    sentence a person reads), and for a judge the ``usage`` of its model calls (``usage.cost``:
    USD ``Decimal`` or ``None``). Raises ``ValueError`` for a status it does not know or a value
    outside [0, 1]."""

    evaluator: str
    status: ScoreStatus
    value: float | None = None
    reason: str = ""
    usage: Usage = field(default_factory=Usage)

    def __post_init__(self) -> None:
        if self.status not in ("pass", "fail", "error"):
            raise ValueError(f"a score's status is pass, fail or error, got {self.status!r}")
        if self.value is not None and not (math.isfinite(self.value) and 0.0 <= self.value <= 1.0):
            raise ValueError(f"a score's value is in [0, 1], got {self.value!r}")

    @property
    def passed(self) -> bool:
        return self.status == "pass"


@dataclass(slots=True)
class EvalContext:
    """What an evaluator may use: ``run_ctx`` (the eval's :class:`~seamkit._runtime.context.RunContext`:
    scope, cancellation, services) and ``chat``, which sends a request to a model through the eval's
    middlewares: ``await chat(model, request) -> LLMResult``, raising
    :class:`~seamkit.errors.ProviderError` (classified) when the model fails or a budget
    middleware refuses the call."""

    run_ctx: RunContext
    chat: Callable[[LLMPort, ChatRequest], Awaitable[LLMResult]]
    meta: Mapping[str, Any] = EMPTY


@runtime_checkable
class Evaluator(Protocol):
    """Judges attempts. ``name``: shown in reports (the YAML ``name:``, else the registered
    name). ``evaluate(attempt, ctx)`` returns a :class:`Score`; whatever it raises is recorded by
    :func:`evaluate` as an ``error`` score."""

    name: str

    async def evaluate(self, attempt: Attempt, ctx: EvalContext) -> Score: ...


async def evaluate(evaluator: Evaluator, attempt: Attempt, ctx: EvalContext) -> Score:
    """``evaluator``'s score of ``attempt``, never raising for its failure: an exception, or a
    returned value that is not a :class:`Score`, is a score with status ``error`` naming it.
    Cancellation (``asyncio.CancelledError``, ``KeyboardInterrupt``) propagates."""
    name = getattr(evaluator, "name", type(evaluator).__name__)
    try:
        score = await evaluator.evaluate(attempt, ctx)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        detail = str(exc).splitlines()[0] if str(exc) else ""
        return Score(str(name), "error", reason=f"the evaluator raised {type(exc).__name__}" +
                     (f": {detail}"[:500] if detail else ""))
    if not isinstance(score, Score):
        return Score(str(name), "error", reason=f"the evaluator returned {type(score).__name__}, not a Score")
    return score
