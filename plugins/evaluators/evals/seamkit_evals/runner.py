"""Running a suite: every case x repeat against one agent, with bounded concurrency.

:class:`EvalRunner` holds what has finished so far, so that an interrupted eval (Ctrl-C) still
has a report: :meth:`EvalRunner.report` says how many attempts were not run.

- The agent is built once (by the caller, through the composition builder); each attempt runs in
  its own :class:`~seamkit._runtime.context.RunContext` with the eval's scope. At most
  ``concurrency`` attempts run at once (an ``asyncio.Semaphore``).
- Latency: the agent run alone, on a monotonic clock, in seconds.
- A run that raises is recorded (its error classified: ``ProviderError(rate_limited): ...``),
  never a crash of the eval, and judged like any attempt (the evaluators see ``result=None`` and
  the error; the built-ins fail it). An attempt whose run raised never passes. An evaluator that
  raises is an ``error`` score (:func:`seamkit._evals.evaluate`).
- Evaluators of one attempt run concurrently. A judge's model calls go through the suite's
  ``middlewares`` (an :class:`~seamkit._runtime.invoker.Invoker` with no tools), in a child
  context of the eval's, so a ``budget`` middleware there caps the judges of the whole eval.
- ``budget``: once the known cost of the finished attempts (runs and judges) reaches it, no
  further attempt starts; those are reported as not run. Attempts already running finish, so
  the eval passes its budget by at most what they cost.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from seamkit.errors import ProviderError
from seamkit.plugin import Attempt, EvalContext, Evaluator, RunContext, Score, evaluate
from seamkit.values import ChatRequest, FrozenDict, LLMResult, Scope, Usage

from seamkit_evals.results import (
    AttemptResult,
    CaseResult,
    EvalReport,
    StopReason,
    ThresholdCheck,
    summarize,
)
from seamkit_evals.suite import Suite, SuiteCase, Thresholds

__all__ = ["EvalRunner", "check_thresholds", "classify_error", "run_suite"]

Progress = Callable[[int, int], None]
"""``progress(done, total)``: called after each attempt finishes (or is skipped)."""


def classify_error(exc: BaseException) -> str:
    """``ProviderError(rate_limited): openai: slow down`` for a provider's failure (its failure class),
    ``TypeName: first line`` otherwise; at most 500 characters."""
    text = str(exc)
    if isinstance(exc, ProviderError):  # its str repeats the class: "priced: rate_limited: down"
        head = f"{type(exc).__name__}({exc.failure_class.value})"
        text = (f"{exc.provider}: " if exc.provider else "") + str(exc.args[0] if exc.args else "")
    else:
        head = type(exc).__name__
    first = text.splitlines()[0] if text else ""
    return (f"{head}: {first}" if first else head)[:500]


def check_thresholds(thresholds: Thresholds, report_summary: Any) -> tuple[ThresholdCheck, ...]:
    """Each stated threshold against the summary: ``pass_rate`` and evaluators' pass rates are
    met at or above their limit, ``max_cost_usd`` and ``max_p95_latency_s`` at or below theirs;
    nothing measured (no attempt ran) is not met."""
    s = report_summary
    out: list[ThresholdCheck] = []
    if thresholds.pass_rate is not None:
        out.append(ThresholdCheck("pass_rate", thresholds.pass_rate, s.pass_rate,
                                  s.pass_rate is not None and s.pass_rate >= thresholds.pass_rate))
    for name, limit in thresholds.evaluators.items():
        stats = s.evaluators.get(name)
        rate = stats.pass_rate if stats is not None else None
        out.append(ThresholdCheck(f"evaluators.{name}", limit, rate, rate is not None and rate >= limit))
    if thresholds.max_cost_usd is not None:
        out.append(ThresholdCheck("max_cost_usd", thresholds.max_cost_usd, s.cost_usd,
                                  s.attempts > 0 and s.cost_usd <= thresholds.max_cost_usd))
    if thresholds.max_p95_latency_s is not None:
        p95 = s.latency_p95_s
        out.append(ThresholdCheck("max_p95_latency_s", thresholds.max_p95_latency_s, p95,
                                  p95 is not None and p95 <= thresholds.max_p95_latency_s))
    return tuple(out)


class _Judges:
    """``EvalContext.chat``: a request to a model through the judge middlewares, one
    :class:`~seamkit._runtime.invoker.Invoker` per model object."""

    def __init__(self, middlewares: Sequence[Any]) -> None:
        self.middlewares = tuple(middlewares)
        self._invokers: dict[int, tuple[Any, Any]] = {}  # id(model) -> (model, invoker); the model kept alive

    def context(self, ctx: RunContext) -> Callable[[Any, ChatRequest], Any]:
        async def chat(model: Any, request: ChatRequest) -> LLMResult:
            from seamkit import Invoker, ToolRegistry

            held = self._invokers.get(id(model))
            if held is None or held[0] is not model:
                held = (model, Invoker(model, ToolRegistry(), self.middlewares))
                self._invokers[id(model)] = held
            result: LLMResult = await held[1].chat(request, ctx)
            return result

        return chat


class EvalRunner:
    """Runs ``suite`` against ``agent`` (an :class:`~seamkit._agent.agent.Agent`).

    ``concurrency`` / ``repeat`` override the suite's; ``case_ids`` keeps only those cases (in
    the suite's order); ``progress`` is told of each finished attempt; ``scope`` is the scope of
    every attempt's run. :meth:`run` runs the eval and returns the report; :meth:`report` makes
    one from what has finished so far (after an interruption)."""

    def __init__(self, suite: Suite, agent: Any, *, concurrency: int | None = None, repeat: int | None = None,
                 case_ids: Sequence[str] | None = None, progress: Progress | None = None,
                 scope: Scope | None = None) -> None:
        self.suite = suite
        self.agent = agent
        self.concurrency = concurrency or suite.concurrency
        self.repeat = repeat or suite.repeat
        if self.concurrency < 1 or self.repeat < 1:
            raise ValueError("concurrency and repeat are at least 1")
        cases = suite.cases
        if case_ids is not None:
            wanted = set(case_ids)
            cases = tuple(c for c in cases if c.case.id in wanted)
        self.cases: tuple[SuiteCase, ...] = cases
        self.progress = progress
        self.scope = scope
        self.eval_ctx = RunContext(scope=scope) if scope is not None else RunContext()
        self._judges = _Judges(suite.middlewares)
        self._results: dict[tuple[int, int], AttemptResult] = {}
        self._spent = Decimal(0)
        self._budget_hit = False
        self._started_at = datetime.now(UTC)
        self._t0 = time.monotonic()
        self._done = 0

    @property
    def total(self) -> int:
        return len(self.cases) * self.repeat

    async def run(self) -> EvalReport:
        """Run every attempt; returns the report (``stopped="budget"`` when the budget stopped it)."""
        self._started_at = datetime.now(UTC)
        self._t0 = time.monotonic()
        sem = asyncio.Semaphore(self.concurrency)
        try:
            async with asyncio.TaskGroup() as tg:
                for i in range(len(self.cases)):
                    for k in range(self.repeat):
                        tg.create_task(self._guarded(sem, i, k))
        finally:
            await self._close_agent()
        return self.report()

    def report(self, stopped: StopReason | None = None) -> EvalReport:
        """The report of what has finished; ``stopped`` says why the eval ended early (``None``:
        the budget, when it was reached, else nothing)."""
        cases = tuple(
            CaseResult(sc.case, tuple(self._results[(i, k)] for k in range(self.repeat) if (i, k) in self._results),
                       sum((i, k) not in self._results for k in range(self.repeat)))
            for i, sc in enumerate(self.cases)
        )
        summary = summarize(cases)
        if stopped is None and self._budget_hit and summary.not_run:
            stopped = "budget"
        comp = self.suite.composition
        return EvalReport(
            suite_file=str(self.suite.file), agent_file=str(comp.file) if comp.file is not None else "",
            agent_name=self.suite.agent_name, started_at=self._started_at.isoformat(timespec="seconds"),
            duration_s=time.monotonic() - self._t0, cases=cases, summary=summary,
            thresholds=check_thresholds(self.suite.thresholds, summary), stopped=stopped,
            thresholds_stated=self.suite.thresholds.stated,
        )

    async def _guarded(self, sem: asyncio.Semaphore, i: int, k: int) -> None:
        async with sem:
            budget = self.suite.budget
            if budget is not None and self._spent >= budget:
                self._budget_hit = True
            else:
                result = await self._attempt(self.cases[i], k)
                self._results[(i, k)] = result
                cost = result.cost
                if cost is not None:
                    self._spent += cost
        self._done += 1
        if self.progress is not None:
            self.progress(self._done, self.total)

    async def _attempt(self, sc: SuiteCase, k: int) -> AttemptResult:
        case = sc.case
        ctx = RunContext(scope=self.scope) if self.scope is not None else RunContext()
        task: Any = case.input
        t0 = time.monotonic()
        result = None
        error = None
        try:
            result = await self.agent.run(task, ctx=ctx, variables=dict(case.variables) or None,
                                          metadata={"eval_suite": str(self.suite.file), "eval_case": case.id,
                                                    "eval_repeat": k})
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as exc:  # any failure of the run is recorded, never a crash of the eval
            error = classify_error(exc)
        latency = time.monotonic() - t0
        attempt = Attempt(case, k, result, error, latency)
        # a failed run is judged too: every evaluator sees it (result None, error set) and fails it
        # (the built-ins say "the run failed: ..."); one that raises on it is an error score
        judge_ctx = self.eval_ctx.child()
        ectx = EvalContext(judge_ctx, self._judges.context(judge_ctx), FrozenDict({"suite": str(self.suite.file)}))
        scores = tuple(await asyncio.gather(*(self._score(e, attempt, ectx) for e in sc.evaluators)))
        return AttemptResult(case.id, k, scores, attempt.usage if result is not None else Usage(), latency, error,
                             attempt.output, attempt.transcript)

    @staticmethod
    async def _score(evaluator: Evaluator, attempt: Attempt, ctx: EvalContext) -> Score:
        return await evaluate(evaluator, attempt, ctx)

    async def _close_agent(self) -> None:
        cp = getattr(self.agent, "checkpointer", None)
        if cp is not None:
            try:
                await cp.aclose()
            except Exception:  # closing the store is best effort: the report matters more
                pass


async def run_suite(suite: Suite, agent: Any, **options: Any) -> EvalReport:
    """Run ``suite`` against ``agent`` (see :class:`EvalRunner` for ``options``)."""
    return await EvalRunner(suite, agent, **options).run()

