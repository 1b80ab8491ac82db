"""The eval runner: bounded concurrency, repeats, failures recorded (never a crash), the budget
stop, the judge's calls through the suite's middlewares, thresholds and the exit code."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import evalrun_testlib
import pytest
from seamkit._evals import Attempt, EvalContext, Score
from seamkit.composition import build_agents
from seamkit.values import Message
from seamkit_evals.results import AttemptResult, percentile
from seamkit_evals.runner import EvalRunner, classify_error
from seamkit_evals.suite import Suite, Thresholds, load_suite

Write = Callable[[str, str], Path]


def agent_file(write: Write, model: str) -> None:
    write("agent.yaml", f"seamkit: 1\nagent:\n  name: a\n  model: {model}\n  checkpoints: null\n")


def suite_of(write: Write, body: str, n_cases: int = 2) -> Suite:
    cases = "".join(f"  - {{id: c{i}, input: question {i}}}\n" for i in range(n_cases))
    return load_suite(write("suite.yaml", f"version: 1\nagent: agent.yaml\n{body}\ncases:\n{cases}"))


def agent_of(suite: Suite) -> Any:
    return build_agents(suite.composition)[suite.agent_name]


class GatedAgent:
    """An agent whose runs wait until the test opens their gate; ``started`` lists the runs begun."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.gates: dict[str, asyncio.Event] = {}
        self.checkpointer = None

    async def run(self, task: Any, *, ctx: Any, variables: Any, metadata: Any) -> Any:
        key = f"{metadata['eval_case']}/{metadata['eval_repeat']}"
        self.started.append(key)
        gate = self.gates.setdefault(key, asyncio.Event())
        await gate.wait()
        raise RuntimeError("gated runs have no result")

    def open(self, key: str) -> None:
        self.gates.setdefault(key, asyncio.Event()).set()


async def settle() -> None:
    """Let every ready task run until none can go further (each pass lets tasks advance one step)."""
    for _ in range(50):
        await asyncio.sleep(0)


async def test_no_more_than_concurrency_attempts_run_at_once(components: None, write: Write) -> None:
    agent_file(write, "{use: scripted, turns: [x]}")
    suite = suite_of(write, "concurrency: 2", n_cases=5)
    agent = GatedAgent()
    task = asyncio.ensure_future(EvalRunner(suite, agent).run())
    await settle()
    assert agent.started == ["c0/0", "c1/0"]  # two at once, the others wait for a slot
    agent.open("c1/0")
    await settle()
    assert agent.started == ["c0/0", "c1/0", "c2/0"]
    for key in ("c0/0", "c2/0", "c3/0", "c4/0"):
        agent.open(key)
        await settle()
    report = await task
    assert len(agent.started) == 5 and report.summary.errors == 5


async def test_concurrency_given_to_the_runner_overrides_the_suites(components: None, write: Write) -> None:
    agent_file(write, "{use: scripted, turns: [x]}")
    suite = suite_of(write, "concurrency: 1", n_cases=4)
    agent = GatedAgent()
    task = asyncio.ensure_future(EvalRunner(suite, agent, concurrency=3).run())
    await settle()
    assert len(agent.started) == 3
    for key in ("c0/0", "c1/0", "c2/0", "c3/0"):
        agent.open(key)
    await task


async def test_each_case_runs_repeat_times(components: None, write: Write) -> None:
    agent_file(write, "{use: priced, text: hello there, cost: '0.1'}")
    suite = suite_of(write, "repeat: 3\nevaluators: [{use: has_text, text: hello}]")
    report = await EvalRunner(suite, agent_of(suite)).run()
    assert [[a.repeat for a in c.attempts] for c in report.cases] == [[0, 1, 2], [0, 1, 2]]
    assert report.summary.attempts == 6 and report.summary.pass_rate == 1.0 and report.exit_code == 0
    # Decimal sums are exact: six attempts at 0.1
    assert report.summary.cost_usd == Decimal("0.6") and report.summary.input_tokens == 60
    assert all(a.latency_s >= 0 for c in report.cases for a in c.attempts)
    assert [m.role for m in report.cases[0].attempts[0].transcript] == ["user", "assistant"]
    again = await EvalRunner(suite, agent_of(suite), repeat=1).run()
    assert again.summary.attempts == 2


async def test_a_raising_evaluator_is_an_error_score_and_the_rest_still_run(components: None, write: Write) -> None:
    agent_file(write, "{use: priced, text: hello}")
    suite = suite_of(write, "evaluators: [explode, {use: has_text, text: hello}]")
    report = await EvalRunner(suite, agent_of(suite)).run()
    for c in report.cases:
        [a] = c.attempts
        boom, ok = a.scores
        assert (boom.status, boom.reason) == ("error", "the evaluator raised RuntimeError: the evaluator blew up")
        assert ok.passed and a.status == "fail"
    assert report.summary.evaluators["explode"].pass_rate == 0.0
    assert report.summary.evaluators["has_text"].pass_rate == 1.0
    assert report.exit_code == 1  # no thresholds stated: every attempt must pass


async def test_a_failing_run_is_recorded_with_its_failure_class(components: None, write: Write) -> None:
    agent_file(write, "{use: priced, error: rate_limited}")
    suite = suite_of(write, "evaluators: [{use: contains, text: hello}, {use: max_latency, seconds: 60}]")
    report = await EvalRunner(suite, agent_of(suite)).run()
    a = report.cases[0].attempts[0]
    assert a.status == "error" and a.error == "ProviderError(rate_limited): priced: the provider is down"
    # the evaluators judge the failed run too, and fail it
    assert [(s.evaluator, s.status) for s in a.scores] == [("contains", "fail"), ("max_latency", "fail")]
    assert all(s.reason.startswith(f"the run failed: {a.error}") for s in a.scores)
    assert a.cost is None and report.summary.unpriced == 2 and report.summary.errors == 2
    assert report.exit_code == 1


def test_errors_are_classified() -> None:
    from seamkit.errors import FailureClass, ProviderError

    assert classify_error(ProviderError("slow\nmore", FailureClass.TIMEOUT)) == "ProviderError(timeout): slow"
    assert classify_error(ValueError()) == "ValueError"
    assert len(classify_error(KeyError("x" * 900))) == 500


async def test_the_budget_stops_starting_attempts(components: None, write: Write) -> None:
    agent_file(write, "{use: priced, text: hi, cost: '0.01'}")
    suite = suite_of(write, "budget: 0.025\nconcurrency: 1", n_cases=5)
    report = await EvalRunner(suite, agent_of(suite)).run()
    # 0.01, 0.02 (under 0.025), 0.03 reaches it: the last two never start
    assert [len(c.attempts) for c in report.cases] == [1, 1, 1, 0, 0]
    assert [c.not_run for c in report.cases] == [0, 0, 0, 1, 1]
    assert report.stopped == "budget" and report.summary.not_run == 2 and report.summary.cost_usd == Decimal("0.03")
    assert report.exit_code == 1


async def test_the_judge_calls_through_the_suites_middlewares(components: None, write: Write) -> None:
    agent_file(write, "{use: priced, text: fine, cost: '0.5'}")
    suite = suite_of(write, "middlewares: [recorder]\n"
                            "evaluators: [{use: stub_judge, model: {use: priced, text: PASS, cost: '0.25'}}]")
    runner = EvalRunner(suite, agent_of(suite))
    report = await runner.run()
    calls = evalrun_testlib.STATE["chat_calls"]
    assert len(calls) == 2  # one judgement per attempt, each through the recorder
    assert all(ancestors == (runner.eval_ctx.run_id,) for _, ancestors in calls)  # children of the eval's run
    a = report.cases[0].attempts[0]
    assert a.scores[0].passed and a.scores[0].usage.cost == Decimal("0.25")
    assert a.cost == Decimal("0.75") and report.summary.cost_usd == Decimal("1.50")  # runs and judges


async def test_thresholds_decide_the_exit_code(components: None, write: Write) -> None:
    agent_file(write, "{use: priced, text: hello, cost: '0.01'}")
    suite = suite_of(write, "evaluators: [{use: has_text, text: hello}, {use: has_text, text: nope, name: strict}]\n"
                            "thresholds: {pass_rate: 0, evaluators: {has_text: 1.0}, max_cost_usd: '0.02'}")
    report = await EvalRunner(suite, agent_of(suite)).run()
    assert [(t.name, t.met) for t in report.thresholds] == [
        ("pass_rate", True), ("evaluators.has_text", True), ("max_cost_usd", True)]
    assert report.summary.pass_rate == 0.0 and report.exit_code == 0  # stated thresholds met, though all failed
    strict = dataclasses.replace(suite, thresholds=Thresholds(evaluators={"strict": 0.5}, max_p95_latency_s=60.0))
    report = await EvalRunner(strict, agent_of(strict)).run()
    first = report.thresholds[0]
    assert (first.name, first.actual, first.met) == ("evaluators.strict", 0.0, False)
    assert report.thresholds[1].met and report.exit_code == 1
    over = dataclasses.replace(suite, thresholds=Thresholds(max_cost_usd=Decimal("0.019")))
    report = await EvalRunner(over, agent_of(over)).run()
    assert report.thresholds[0].actual == Decimal("0.02") and not report.thresholds[0].met


async def test_an_interrupted_eval_reports_what_finished(components: None, write: Write) -> None:
    agent_file(write, "{use: scripted, turns: [x]}")
    suite = suite_of(write, "concurrency: 1", n_cases=3)
    agent = GatedAgent()
    runner = EvalRunner(suite, agent)
    task = asyncio.ensure_future(runner.run())
    await settle()
    agent.open("c0/0")
    await settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    report = runner.report("interrupted")
    assert [len(c.attempts) for c in report.cases] == [1, 0, 0] and report.summary.not_run == 2
    assert report.exit_code == 130


async def test_only_the_chosen_cases_run(components: None, write: Write) -> None:
    agent_file(write, "{use: priced}")
    suite = suite_of(write, "", n_cases=3)
    report = await EvalRunner(suite, agent_of(suite), case_ids=["c2", "c0"]).run()
    assert [c.case.id for c in report.cases] == ["c0", "c2"]


def test_latency_percentiles_are_nearest_rank() -> None:
    assert percentile([], 95) is None
    assert percentile([3.0], 50) == 3.0
    values = [float(v) for v in range(1, 21)]  # 1..20
    assert percentile(values, 50) == 10.0 and percentile(values, 95) == 19.0 and percentile(values, 100) == 20.0


def test_an_attempt_result_passes_only_when_every_score_passes() -> None:
    from seamkit.values import Usage

    ok, bad = Score("a", "pass"), Score("b", "fail")
    assert AttemptResult("c", 0, (ok,), Usage(), 0.1).status == "pass"
    assert AttemptResult("c", 0, (ok, bad), Usage(), 0.1).status == "fail"
    assert AttemptResult("c", 0, (), Usage(), 0.1, error="X").status == "error"
    assert not AttemptResult("c", 0, (ok,), Usage(), 0.1, error="X").passed  # a failed run never passes
    assert AttemptResult("c", 0, (), Usage(), 0.1).passed  # no evaluators: the run completing passes


async def test_an_evaluator_sees_the_attempt(components: None, write: Write) -> None:
    agent_file(write, "{use: priced, text: the answer}")
    suite = suite_of(write, "", n_cases=1)
    seen: list[Attempt] = []

    class Spy:
        name = "spy"

        async def evaluate(self, attempt: Attempt, ctx: EvalContext) -> Score:
            seen.append(attempt)
            return Score(self.name, "pass")

    from seamkit_evals.suite import SuiteCase

    spied = dataclasses.replace(suite, cases=tuple(SuiteCase(c.case, (Spy(),)) for c in suite.cases))
    await EvalRunner(spied, agent_of(spied)).run()
    [attempt] = seen
    assert attempt.text == "the answer" and attempt.case.id == "c0" and attempt.error is None
    assert attempt.transcript[0] == Message.user("question 0")
