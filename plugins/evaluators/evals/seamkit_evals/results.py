"""What an eval produced: plain frozen values (the runner makes them, the reports read them).

- :class:`AttemptResult`: one run of one case and its scores.
- :class:`CaseResult`: a case's attempts, and how many of its attempts were not run.
- :class:`Summary`: pass rates, cost, tokens and latency over every attempt that ran.
- :class:`ThresholdCheck`: one stated threshold, met or not.
- :class:`EvalReport`: all of it, with :attr:`EvalReport.exit_code`.

Money is ``Decimal`` USD; an unknown cost is ``None``, never 0. Latencies are wall-clock seconds
(a monotonic clock) of the agent run alone, evaluators excluded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from seamkit.plugin import EvalCase, Score
from seamkit.values import EMPTY, Message, Usage

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "AttemptResult", "AttemptStatus",
           "CaseResult", "EvalReport", "EvaluatorStats", "StopReason", "Summary", "ThresholdCheck", "percentile",
           "summarize"]

AttemptStatus = Literal["pass", "fail", "error"]
#: Why an eval ended before running every attempt: its ``budget`` was spent, or Ctrl-C.
StopReason = Literal["budget", "interrupted"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


@dataclass(frozen=True, slots=True)
class AttemptResult:
    """One run of a case: ``case_id``, which ``repeat`` (from 0), the ``scores`` of its
    evaluators (in the suite's order: the suite's evaluators, then the case's), the agent run's
    ``usage`` (``Usage()`` when it raised), the ``latency_s`` of the run, the classified
    ``error`` when it raised (the attempt then never passes, whatever its scores), the ``output``
    and the ``transcript``."""

    case_id: str
    repeat: int
    scores: tuple[Score, ...]
    usage: Usage
    latency_s: float
    error: str | None = None
    output: Any = None
    transcript: tuple[Message, ...] = ()

    @property
    def status(self) -> AttemptStatus:
        """``error`` (the run raised), ``pass`` (every score passed), else ``fail``."""
        if self.error is not None:
            return "error"
        return "pass" if all(s.passed for s in self.scores) else "fail"

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def judge_usage(self) -> Usage:
        """What the evaluators' model calls used (judges; ``Usage()`` when none called one)."""
        total = Usage()
        for s in self.scores:
            total = total + s.usage
        return total

    @property
    def total_usage(self) -> Usage:
        """The run's usage plus the judges'."""
        return self.usage + self.judge_usage

    @property
    def cost(self) -> Decimal | None:
        """USD of the run and its judges; ``None`` when any part is unknown (or the run raised:
        what it spent before failing is not known)."""
        if self.error is not None:
            judged = self.judge_usage
            return judged.cost if judged.requests else None
        return self.total_usage.cost


@dataclass(frozen=True, slots=True)
class CaseResult:
    """A case, its ``attempts`` in repeat order, and ``not_run``: how many of its repeats were
    never started (the budget was spent, or the eval was interrupted)."""

    case: EvalCase
    attempts: tuple[AttemptResult, ...]
    not_run: int = 0

    @property
    def passed(self) -> int:
        return sum(a.passed for a in self.attempts)

    @property
    def pass_rate(self) -> float | None:
        return self.passed / len(self.attempts) if self.attempts else None

    @property
    def cost(self) -> Decimal | None:
        known = [a.cost for a in self.attempts]
        if not known or any(c is None for c in known):
            return None
        return sum((c for c in known if c is not None), Decimal(0))


@dataclass(frozen=True, slots=True)
class EvaluatorStats:
    """One evaluator name's scores over the eval: ``passed`` of ``total``."""

    passed: int
    total: int

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.total if self.total else None


@dataclass(frozen=True, slots=True)
class Summary:
    """Over every attempt that ran: counts by status, ``pass_rate`` (``None`` when none ran),
    per-evaluator stats by name, ``cost_usd`` (the exact sum of the known costs) with
    ``unpriced`` (how many attempts' cost is unknown, not counted), tokens (runs and judges), and
    the p50/p95 latency of the runs (nearest-rank; ``None`` when none ran)."""

    attempts: int
    passed: int
    failed: int
    errors: int
    not_run: int
    pass_rate: float | None
    evaluators: Mapping[str, EvaluatorStats]
    cost_usd: Decimal
    unpriced: int
    input_tokens: int
    output_tokens: int
    latency_p50_s: float | None
    latency_p95_s: float | None


@dataclass(frozen=True, slots=True)
class ThresholdCheck:
    """One stated threshold: its ``name`` (``pass_rate``, ``evaluators.NAME``, ``max_cost_usd``,
    ``max_p95_latency_s``), the ``limit`` and the ``actual`` value (``None`` when nothing ran to
    measure: then not met), and whether it was ``met``."""

    name: str
    limit: float | Decimal
    actual: float | Decimal | None
    met: bool


@dataclass(frozen=True, slots=True)
class EvalReport:
    """An eval's outcome: where it came from (``suite_file``, ``agent_file``, ``agent_name``),
    when (``started_at``, ISO 8601 UTC) and how long (``duration_s``), the ``cases``, the
    ``summary``, the ``thresholds`` checked, ``stopped`` (why it ended early, or ``None``) and
    ``thresholds_stated`` (whether the suite stated any)."""

    suite_file: str
    agent_file: str
    agent_name: str
    started_at: str
    duration_s: float
    cases: tuple[CaseResult, ...]
    summary: Summary
    thresholds: tuple[ThresholdCheck, ...] = ()
    stopped: StopReason | None = None
    thresholds_stated: bool = False

    @property
    def exit_code(self) -> int:
        """``130`` interrupted; ``1`` when attempts were not run (the budget was spent), a stated
        threshold is not met, or (no threshold stated) any attempt did not pass; else ``0``."""
        if self.stopped == "interrupted":
            return EXIT_INTERRUPTED
        if self.summary.not_run:
            return EXIT_FAILED
        if self.thresholds_stated:
            return EXIT_OK if all(t.met for t in self.thresholds) else EXIT_FAILED
        return EXIT_OK if self.summary.passed == self.summary.attempts else EXIT_FAILED


def percentile(values: Sequence[float], p: float) -> float | None:
    """The ``p``-th percentile (0 < p <= 100) of ``values`` by the nearest-rank method (a value
    that occurred, never an interpolation); ``None`` for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def summarize(cases: Sequence[CaseResult]) -> Summary:
    """The :class:`Summary` of ``cases``."""
    attempts = [a for c in cases for a in c.attempts]
    stats: dict[str, list[int]] = {}
    for a in attempts:
        for s in a.scores:
            row = stats.setdefault(s.evaluator, [0, 0])
            row[0] += s.passed
            row[1] += 1
    cost = Decimal(0)
    unpriced = 0
    tokens_in = tokens_out = 0
    for a in attempts:
        c = a.cost
        if c is None:
            unpriced += 1
        else:
            cost += c
        u = a.total_usage
        tokens_in += u.input_tokens
        tokens_out += u.output_tokens
    latencies = [a.latency_s for a in attempts]
    passed = sum(a.passed for a in attempts)
    errors = sum(a.error is not None for a in attempts)
    return Summary(
        attempts=len(attempts), passed=passed, failed=len(attempts) - passed - errors, errors=errors,
        not_run=sum(c.not_run for c in cases), pass_rate=passed / len(attempts) if attempts else None,
        evaluators={k: EvaluatorStats(p, t) for k, (p, t) in sorted(stats.items())} or EMPTY,
        cost_usd=cost, unpriced=unpriced, input_tokens=tokens_in, output_tokens=tokens_out,
        latency_p50_s=percentile(latencies, 50), latency_p95_s=percentile(latencies, 95),
    )
