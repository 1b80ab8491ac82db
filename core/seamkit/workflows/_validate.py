"""Validation of a :class:`~seamkit.workflows._model.Workflow` before any step runs: every problem
at once, each with a stable code, a message naming the obligation and the steps, and the steps.

Codes:

- ``DUPLICATE_STEP``: two steps with one name (both origins named).
- ``NO_START_STEP``: no step consumes the start event: nothing would ever run.
- ``STEP_WOULD_STALL``: a step waits for an event that no step able to run emits and that does
  not arrive from outside: it would wait there forever. The proof is a least fixed point: the
  events available are the start event and the external ones; a step can run once every event it
  consumes is available, and then each event it may emit is available; the steps never reached
  are the ones that would stall (a cycle that only feeds itself included).
- ``EVENT_NOT_CONSUMED``: an event a step may emit is consumed by no step and is not an outcome.
- ``OUTCOME_NEVER_EMITTED``: a declared outcome that no step emits.
- ``NO_OUTCOME``: the workflow declares no outcome: it could never end with one.
- ``CONFIG_MISSING``: a step's component lacks required configuration.
- ``INVALID_GATE``: a gate that routes yes and no to one event, routes only one of them, or
  emits several types without saying which answer goes where.
- ``INVALID_STEP``: a step that consumes one event type twice.

What validation cannot see is checked as the workflow runs: a step emitting an event it does not
declare fails; events left waiting for a partner when nothing else can run end the run as
``WORKFLOW_STALLED`` (a step that may emit either of two events that a later step both waits for).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from seamkit.errors import WorkflowInvalid
from seamkit.workflows._model import START, Step, Workflow

__all__ = ["WorkflowInvalid", "WorkflowProblem", "reachable", "validate"]


@dataclass(frozen=True, slots=True)
class WorkflowProblem:
    """One problem: ``code`` (see the module doc), ``message`` and the ``steps`` it names."""

    code: str
    message: str
    steps: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def reachable(steps: Iterable[Step], available: Iterable[str]) -> tuple[set[str], set[str]]:
    """The least fixed point of the module doc: ``(names of the steps that can run, event types
    that can occur)`` starting from the ``available`` event types. A worklist over events with a
    count of each step's unmet events: linear in the size of the graph."""
    events = set(available)
    steps = list(steps)
    unmet = [len(set(s.consumes) - events) for s in steps]
    waiting: dict[str, list[int]] = {}
    for i, s in enumerate(steps):
        for e in set(s.consumes) - events:
            waiting.setdefault(e, []).append(i)
    ran: set[str] = set()
    ready = [i for i, n in enumerate(unmet) if n == 0]
    while ready:
        s = steps[ready.pop()]
        ran.add(s.name)
        for e in s.emits:
            if e in events:
                continue
            events.add(e)
            for j in waiting.get(e, ()):
                unmet[j] -= 1
                if unmet[j] == 0:
                    ready.append(j)
    return ran, events


def _names(steps: Iterable[str]) -> str:
    """Step names for a message: ``'a', 'b'``."""
    return ", ".join(repr(s) for s in steps)


def validate(workflow: Workflow) -> list[WorkflowProblem]:
    """Every problem of ``workflow`` (see the module doc), in a stable order; ``[]`` when it is
    valid."""
    out: list[WorkflowProblem] = []
    steps = workflow.steps
    seen: dict[str, Step] = {}
    for s in steps:
        first = seen.get(s.name)
        if first is not None:
            out.append(WorkflowProblem("DUPLICATE_STEP", f"two steps are called {s.name!r}: "
                                       f"{first.origin or 'the first'} and {s.origin or 'the second'}",
                                       (s.name,)))
        else:
            seen[s.name] = s
    if not any(START in s.consumes for s in steps):
        out.append(WorkflowProblem("NO_START_STEP", f"no step consumes the {START!r} event, so nothing would run "
                                   f"(give the first step consumes: [{START}])"))
    outside = {START, *workflow.external}
    ran, events = reachable(steps, outside)
    producers: dict[str, list[str]] = {}
    for s in steps:
        for e in s.emits:
            producers.setdefault(e, []).append(s.name)
    for s in steps:
        if s.name in ran:
            continue
        for e in s.consumes:
            if e in events:
                continue
            makers = producers.get(e, [])
            why = (f"only steps that would stall themselves emit it ({_names(makers)})" if makers
                   else "no step emits it and it does not arrive from outside")
            out.append(WorkflowProblem("STEP_WOULD_STALL", f"step {s.where()} waits for {e!r}, but {why}: "
                                       "it would stall there (emit it from a step that can run, or declare it "
                                       "external)", (s.name, *makers)))
    consumed = {e for s in steps for e in s.consumes}
    outcomes = set(workflow.outcomes)
    for e, makers in producers.items():
        if e not in consumed and e not in outcomes:
            out.append(WorkflowProblem("EVENT_NOT_CONSUMED", f"event {e!r} emitted by {_names(makers)} is consumed "
                                       "by no step and is not a declared outcome (add it to outcomes, or a step "
                                       "that consumes it)", tuple(makers)))
    if not workflow.outcomes:
        out.append(WorkflowProblem("NO_OUTCOME", "the workflow declares no outcome: name the event types it ends "
                                   "with (outcomes: [...])"))
    for e in workflow.outcomes:
        if e not in producers and e not in workflow.external:
            out.append(WorkflowProblem("OUTCOME_NEVER_EMITTED", f"the declared outcome {e!r} is emitted by no step "
                                       "(add a step that emits it, or remove it from outcomes)"))
    for s in steps:
        twice = sorted({e for e in s.consumes if s.consumes.count(e) > 1})
        if twice:
            out.append(WorkflowProblem("INVALID_STEP", f"step {s.where()} consumes {', '.join(map(repr, twice))} "
                                       "more than once: a step waits for one event of each type", (s.name,)))
        if s.kind == "workflow" and isinstance(s.inner, Workflow):
            out += [WorkflowProblem(p.code, f"in the workflow {s.inner.name!r} of step {s.where()}: {p.message}",
                                    (s.name, *p.steps)) for p in validate(s.inner)]
        if s.config_missing:
            out.append(WorkflowProblem("CONFIG_MISSING", f"step {s.where()} lacks required configuration: "
                                       + ", ".join(s.config_missing), (s.name,)))
        if s.kind == "gate":
            if s.on_yes is not None and s.on_yes == s.on_no:
                out.append(WorkflowProblem("INVALID_GATE", f"gate {s.where()} routes yes and no to one event "
                                           f"{s.on_yes!r}: route them to two events", (s.name,)))
            elif (s.on_yes is None) != (s.on_no is None):
                out.append(WorkflowProblem("INVALID_GATE", f"gate {s.where()} routes only a "
                                           f"{'yes' if s.on_yes is not None else 'no'}: give both on_yes and on_no "
                                           "(a plain yes or no picks one), or neither", (s.name,)))
            elif s.on_yes is None and len(s.emits) != 1:  # no routes (one route is the branch above)
                out.append(WorkflowProblem("INVALID_GATE", f"gate {s.where()} emits {len(s.emits)} event types: "
                                           "give on_yes and on_no, or emit one type", (s.name,)))
    return out


def check(workflow: Workflow) -> None:
    """Raise :class:`WorkflowInvalid` when :func:`validate` finds any problem (the engine calls it
    before any step runs)."""
    problems = validate(workflow)
    if problems:
        raise WorkflowInvalid(workflow.name, problems)
