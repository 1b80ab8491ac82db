"""Workflow validation (``seamkit.workflows._validate``): one table row per rule, each message naming
the obligation and the steps; every problem reported at once; and a property: on random step graphs
the validator's stall verdict equals the steps a direct simulation never gets to run."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seamkit.workflows import START, Step, Workflow, WorkflowInvalid, run_workflow, validate


async def _noop(ctx: Any, data: Any) -> None:
    return None


def s(name: str, consumes: Any = (START,), emits: Any = (), **kw: Any) -> Step:
    return Step(name, _noop, consumes, emits, **kw)


def wf(*steps: Step, outcomes: Any = ("done",), external: Any = ()) -> Workflow:
    return Workflow("w", steps, outcomes, external)


RULES = [
    ("DUPLICATE_STEP", wf(s("a", emits="done", origin="w.yaml:4"), s("a", emits="done", origin="w.yaml:9")),
     ["two steps are called 'a': w.yaml:4 and w.yaml:9"], ("a",)),
    ("NO_START_STEP", wf(s("a", consumes="x", emits="done"), external=("x",)),
     ["no step consumes the 'start' event"], ()),
    ("STEP_WOULD_STALL", wf(s("a", emits="x"), s("b", consumes=("x", "y"), emits="done")),
     ["step 'b' waits for 'y', but no step emits it and it does not arrive from outside: it would stall there"],
     ("b",)),
    ("STEP_WOULD_STALL", wf(s("a", emits="done"), s("b", consumes="loop", emits="loop")),
     ["step 'b' waits for 'loop', but only steps that would stall themselves emit it ('b')"], ("b",)),
    ("EVENT_NOT_CONSUMED", wf(s("a", emits=("done", "extra"))),
     ["event 'extra' emitted by 'a' is consumed by no step and is not a declared outcome"], ("a",)),
    ("OUTCOME_NEVER_EMITTED", wf(s("a", emits="done"), outcomes=("done", "escalated")),
     ["the declared outcome 'escalated' is emitted by no step"], ()),
    ("NO_OUTCOME", wf(s("a", emits="x"), s("b", consumes="x"), outcomes=()),
     ["the workflow declares no outcome"], ()),
    ("CONFIG_MISSING", wf(s("a", emits="done", config_missing=("agent.model",), origin="w.yaml:3")),
     ["step 'a' (w.yaml:3) lacks required configuration: agent.model"], ("a",)),
    ("INVALID_GATE", wf(Step("g", None, START, ("done", "other"), kind="gate"), s("b", consumes="other", emits="done")),
     ["gate 'g' emits 2 event types: give on_yes and on_no"], ("g",)),
]


@pytest.mark.parametrize(("code", "workflow", "fragments", "steps"), RULES, ids=[r[0] + str(i) for i, r in
                                                                               enumerate(RULES)])
def test_each_rule_names_its_obligation_and_steps(code: str, workflow: Workflow, fragments: list[str],
                                                 steps: tuple[str, ...]) -> None:
    found = [p for p in validate(workflow) if p.code == code]
    assert found, validate(workflow)
    problem = found[0]
    for fragment in fragments:
        assert fragment in problem.message, problem.message
    assert set(steps) <= set(problem.steps)


def test_a_valid_workflow_has_no_problem() -> None:
    ok = wf(s("plan", emits="topic"), s("research", consumes="topic", emits="finding"),
            s("write", consumes="finding", emits="done", join=True))
    assert validate(ok) == []


def test_external_events_arrive_from_outside() -> None:
    assert validate(wf(s("a", consumes=(START, "approval"), emits="done"), external=("approval",))) == []


async def test_every_problem_is_reported_at_once_before_anything_runs() -> None:
    ran: list[str] = []

    async def record(ctx: Any, data: Any) -> str:
        ran.append("a")
        return "x"

    bad = wf(Step("a", record, START, "x"), Step("a", record, START, "x"), s("b", consumes="nowhere", emits="done"),
             s("c", consumes="x", emits="spare"), outcomes=("done", "never"))
    with pytest.raises(WorkflowInvalid) as err:
        await run_workflow(bad, "go")
    codes = sorted(p.code for p in err.value.problems)
    assert codes == ["DUPLICATE_STEP", "EVENT_NOT_CONSUMED", "OUTCOME_NEVER_EMITTED", "STEP_WOULD_STALL"]
    assert "has 4 problems" in str(err.value) and ran == []


# --------------------------------------------------------------------------- the property


EVENTS = ["start", "e1", "e2", "e3", "e4", "e5", "x"]


@st.composite
def graphs(draw: Any) -> tuple[list[Step], set[str]]:
    n = draw(st.integers(1, 8))
    steps = []
    for i in range(n):
        consumes = tuple(draw(st.lists(st.sampled_from(EVENTS), min_size=1, max_size=3, unique=True)))
        emits = tuple(draw(st.lists(st.sampled_from(EVENTS[1:]), max_size=3, unique=True)))
        steps.append(Step(f"s{i}", _noop, consumes, emits))
    external = set(draw(st.lists(st.sampled_from(EVENTS[1:]), max_size=2, unique=True)))
    return steps, external


def simulate(steps: list[Step], external: set[str]) -> set[str]:
    """The steps that can ever run, by firing steps one at a time over a multiset of events where
    each step, once run, makes every event it may emit available (a different algorithm from the
    validator's fixed point: a worklist over events)."""
    available = {"start", *external}
    waiting = {e: [st_ for st_ in steps if e in st_.consumes] for e in EVENTS}
    ran: set[str] = set()
    work = list(available)
    while work:
        e = work.pop()
        for candidate in waiting[e]:
            if candidate.name not in ran and set(candidate.consumes) <= available:
                ran.add(candidate.name)
                for out in candidate.emits:
                    if out not in available:
                        available.add(out)
                        work.append(out)
    return ran


@settings(max_examples=300, deadline=None)
@given(graphs())
def test_the_stall_verdict_equals_a_reachability_check(graph: tuple[list[Step], set[str]]) -> None:
    steps, external = graph
    problems = validate(Workflow("w", tuple(steps), ("x",), tuple(external)))
    stalled = {p.steps[0] for p in problems if p.code == "STEP_WOULD_STALL"}
    assert stalled == {x.name for x in steps} - simulate(steps, external)


def test_a_gate_routing_only_yes_or_only_no_is_invalid() -> None:
    for routes in ({"on_yes": "done"}, {"on_no": "done"}):
        g = Step("g", None, START, ("done",), kind="gate", **routes)  # type: ignore[arg-type]
        [problem] = validate(wf(g))
        assert problem.code == "INVALID_GATE" and "give both on_yes and on_no" in problem.message


def test_a_nested_workflow_is_validated_with_the_outer_one() -> None:
    from seamkit.workflows import workflow_step

    inner = wf(s("a", emits="x"), s("b", consumes=("x", "never"), emits="done"))
    outer = wf(workflow_step("sub", inner, emits="done"))
    [problem] = validate(outer)
    assert problem.code == "STEP_WOULD_STALL" and problem.steps[0] == "sub"
    assert "in the workflow 'w' of step 'sub': step 'b' waits for 'never'" in problem.message


def test_a_step_consuming_one_type_twice_is_invalid() -> None:
    [problem] = validate(wf(s("a", consumes=(START, START), emits="done")))
    assert problem.code == "INVALID_STEP" and "consumes 'start' more than once" in problem.message
