"""Running a :class:`~seamkit.workflows._model.Workflow` on the runtime seamkit already has.

Each step that runs is an **activation**: a child run of the workflow's run (its own run id from
``RunContext.child()``, the workflow's run id as parent, a cancellation token cancelled with the
workflow's, budgets charged to the ancestors). The scheduler starts every activation whose events
are there (at most ``max_concurrency`` run at once) and, with a checkpointer, checkpoints the
workflow's state (:class:`WorkflowState`) when activations start (so a crash reruns the same
activation, with the same child run id) and after every step finishes. Resumed, a workflow runs
again exactly the activations that had not finished: an agent step continues its own child run
from its checkpoint, and effects a step ran through :meth:`StepContext.run_effect` are returned by
the effect ledger, never repeated.

A gate suspends the workflow (status ``suspended``) once nothing else can run;
``resume(run_id, answer=...)`` answers it. A step that raises fails the workflow: the others in
flight stop and run again on resume, each in the middle of an effect first finishing it (so its
receipt is ``completed`` and the rerun gets its value back, rather than ``uncertain``, which would
wait for a person); ``resume(run_id, allow_finished=True)`` runs the failed activation again once
its cause is fixed. Cancellation reaches every running step at once, effects in flight included
(their outcome is then unknown, as the ledger records); the workflow is left ``running``
(interrupted) for a plain resume.

Each activation is visible as ``step`` stream events (``data["event"]``: ``started``,
``finished``, ``suspended``, ``failed``, ``skipped``) with the step's ``name`` and
``step_kind``, the ``activation`` id, its ``child_run_id`` and the event types ``emitted``;
``StreamEvent.step`` counts the activations finished so far.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from seamkit._durability.ledger import EffectLedger
from seamkit._runtime.context import RunContext, new_run_id
from seamkit.errors import (
    CodecError,
    InfrastructureUnavailable,
    RunCancelled,
    RunNotResumable,
    WorkflowFailed,
)
from seamkit.values import FrozenDict, StreamEvent, Usage, freeze
from seamkit.workflows._model import START, Emit, Step, Workflow, emitted
from seamkit.workflows._validate import check

if TYPE_CHECKING:
    from seamkit._durability.checkpointer import Checkpointer, RunHandle

__all__ = [
    "Activation",
    "Branch",
    "Event",
    "StepContext",
    "WorkflowFailed",
    "WorkflowResult",
    "WorkflowState",
    "resume_workflow",
    "run_workflow",
    "workflow_state",
]

T = TypeVar("T")
log = logging.getLogger("seamkit.workflows")

Status = Literal["running", "waiting", "done", "failed", "skipped"]


@dataclass(frozen=True, slots=True)
class Branch:
    """Where an event is inside a fan-out: the fan-out's ``group`` (the id of the activation that
    fanned out), this branch's ``index`` and the number of branches, ``size``."""

    group: str
    index: int
    size: int


@dataclass(frozen=True, slots=True)
class Event:
    """One event: ``id`` (``e1``, ``e2``, ... in the run), ``type``, ``payload``, ``frame`` (the
    fan-out branches it is inside, outermost first), ``source`` (the emitting step; ``None`` from
    outside) and ``empty`` (a fan-out of no branches on its way to the join: steps pass it on
    without running)."""

    id: str
    type: str
    payload: Any = None
    frame: tuple[Branch, ...] = ()
    source: str | None = None
    empty: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "payload", freeze(self.payload))


@dataclass(frozen=True, slots=True)
class Activation:
    """One run of a step: ``id`` (``a1``, ``a2``, ...), ``step``, the events it consumed
    (``inputs``; empty once it finished, to keep checkpoints small), its child ``run_id``,
    ``status`` (``running``, ``waiting`` (a gate), ``done``, ``failed``, ``skipped``), the
    ``frame`` its events are emitted in, the event types it ``emitted`` (an empty event of a
    branch is not listed), its ``error`` and, for a gate, the person's ``answer``."""

    id: str
    step: str
    inputs: tuple[Event, ...]
    run_id: str
    status: Status = "running"
    frame: tuple[Branch, ...] = ()
    emitted: tuple[str, ...] = ()
    error: str | None = None
    answer: str | None = None


@dataclass(frozen=True, slots=True)
class WorkflowState:
    """A workflow run's state as checkpointed: events not consumed yet (``queue``: ``(step, event)``,
    each event delivered to every step that consumes its type), activations
    not finished (``active``: running, waiting gates, a failed one), finished ones (``finished``,
    in the order they finished), the outcome events (``outcomes``) and the id counter
    (``serial``)."""

    queue: tuple[tuple[str, Event], ...] = ()
    active: tuple[Activation, ...] = ()
    finished: tuple[Activation, ...] = ()
    outcomes: tuple[Event, ...] = ()
    serial: int = 0


@dataclass(frozen=True, slots=True)
class WorkflowResult:
    """How a workflow run ended. ``status``: ``done`` or ``suspended`` (gates wait: ``waiting``
    lists each waiting activation with its prompt; or outside events: ``awaiting``). ``outcome`` /
    ``output``: the type and payload of the last outcome event (``None`` while suspended);
    ``outcomes``: every outcome event, in order; ``steps``: every finished activation, in the
    order they finished; ``usage``: tokens and cost of the agent and nested workflow steps;
    ``warnings``: e.g. events left unconsumed when the outcome came; ``awaiting``: suspended for
    outside events, their types (hand them in on resume)."""

    run_id: str
    status: Literal["done", "suspended"]
    outcome: str | None
    output: Any
    outcomes: tuple[Event, ...] = ()
    steps: tuple[Activation, ...] = ()
    waiting: tuple[tuple[Activation, str], ...] = ()
    usage: Usage = field(default_factory=Usage)
    warnings: tuple[str, ...] = ()
    awaiting: tuple[str, ...] = ()


class StepContext:
    """What a step's function sees: ``run`` (its child :class:`~seamkit._runtime.context.RunContext`),
    ``step`` (the :class:`~seamkit.workflows._model.Step`), ``activation`` (its id),
    ``workflow_run_id``, ``resumed`` (this activation ran before, in an earlier attempt),
    :meth:`run_effect` and :meth:`add_usage`."""

    __slots__ = ("_usage", "activation", "resumed", "run", "step", "workflow_run_id")

    def __init__(self, run: RunContext, step: Step, activation: str, workflow_run_id: str, resumed: bool) -> None:
        self.run = run
        self.step = step
        self.activation = activation
        self.workflow_run_id = workflow_run_id
        self.resumed = resumed
        self._usage = Usage()

    async def run_effect(self, key: str, op: Callable[[], Awaitable[T]]) -> T:
        """Run ``op`` at most once for ``key`` within this activation, through the run's effect
        ledger (the key is ``<activation run id>:<key>``, the same when the activation runs again
        after a crash): see :meth:`~seamkit._runtime.context.RunContext.run_effect`."""
        return await self.run.run_effect(f"{self.run.run_id}:{key}", op)

    def add_usage(self, usage: Usage) -> None:
        """Count ``usage`` (an agent's) as the workflow's."""
        self._usage = self._usage + usage


class _ActivationLedger(EffectLedger):
    """The workflow's effect ledger as one activation sees it (its child run's ``effects``, also
    reaching an agent step's tool calls and a capability step's effects): the same receipts, and a
    count of the effects in flight, so that stopping the activation after another step failed can
    wait for them (:meth:`stop_after_effects`)."""

    __slots__ = ("_inner", "_stop", "in_flight")

    def __init__(self, ledger: EffectLedger) -> None:
        # the same store, tenant, in-process receipts and single flight as the workflow's ledger
        self.store = ledger.store
        self._scope = ledger._scope
        self._local = ledger._local
        self._flight = ledger._flight
        self._inner = ledger
        self.in_flight = 0
        self._stop: Callable[[], object] | None = None

    async def run(self, key: str, op: Callable[[], Awaitable[T]], *, idempotent: bool = False) -> T:
        self.in_flight += 1
        try:
            value = await self._inner.run(key, op, idempotent=idempotent)
        finally:
            self.in_flight -= 1
            stop = self._stop if not self.in_flight else None
            if stop is not None:
                stop()
        if stop is not None:
            await asyncio.sleep(0)  # the cancellation lands here: the step does not go on after the effect
        return value

    def stop_after_effects(self, stop: Callable[[], object]) -> bool:
        """Call ``stop`` once no effect is in flight; ``False`` (``stop`` not called, not kept)
        when none is in flight now."""
        if not self.in_flight:
            return False
        self._stop = stop
        return True


class _Scheduler:
    """Matching events to steps (see the model's module doc)."""

    def __init__(self, workflow: Workflow) -> None:
        self.workflow = workflow
        self.consumers: dict[str, list[str]] = {}
        for s in workflow.steps:
            for e in s.consumes:
                if s.name not in self.consumers.setdefault(e, []):
                    self.consumers[e].append(s.name)
        self.outcomes = set(workflow.outcomes)

    def ready(self, inbox: Mapping[str, list[Event]]) -> list[tuple[Step, list[Event], tuple[Branch, ...]]]:
        """Every (step, the events it takes, the frame it emits in) that can start now; the events
        taken are removed from the step's ``inbox``."""
        out: list[tuple[Step, list[Event], tuple[Branch, ...]]] = []
        for step in self.workflow.steps:
            queue = inbox.get(step.name)
            if not queue:
                continue
            if step.join:
                out += self._joins(step, queue)
            else:
                out += self._maps(step, queue)
        return out

    @staticmethod
    def _maps(step: Step, queue: list[Event]) -> list[tuple[Step, list[Event], tuple[Branch, ...]]]:
        out: list[tuple[Step, list[Event], tuple[Branch, ...]]] = []
        while True:
            # the oldest event of the first type decides the frame; the others must share it
            found = False
            for head in [e for e in queue if e.type == step.consumes[0]]:
                taken = [head]
                for t in step.consumes[1:]:
                    partner = next((e for e in queue if e.type == t and e.frame == head.frame and e not in taken),
                                   None)
                    if partner is None:
                        break
                    taken.append(partner)
                else:
                    for e in taken:
                        queue.remove(e)
                    out.append((step, taken, head.frame))
                    found = True
                    break
            if not found:
                return out

    @staticmethod
    def _joins(step: Step, queue: list[Event]) -> list[tuple[Step, list[Event], tuple[Branch, ...]]]:
        out: list[tuple[Step, list[Event], tuple[Branch, ...]]] = []
        while True:
            groups: dict[tuple[tuple[Branch, ...], str | None], dict[str, list[Event]]] = {}
            for e in queue:
                if e.type in step.consumes:
                    key = (e.frame[:-1], e.frame[-1].group) if e.frame else (e.frame, None)
                    groups.setdefault(key, {}).setdefault(e.type, []).append(e)
            for (outer, group), by_type in groups.items():
                taken = []
                for t in step.consumes:
                    events = by_type.get(t, [])
                    if group is None:  # not inside a fan-out: a group of one
                        if not events:
                            break
                        taken.append(events[0])
                        continue
                    if not events:
                        # an event from outside this fan-out (the question its branches answer)
                        context = next((e for e in queue if e.type == t and e.frame == outer), None)
                        if context is None:
                            break
                        taken.append(context)
                        continue
                    size = events[0].frame[-1].size
                    if size == 0:
                        taken.append(events[0])
                        continue
                    per_index: dict[int, Event] = {}
                    for e in events:
                        per_index.setdefault(e.frame[-1].index, e)
                    if size < 0 or len(per_index) < size:
                        break
                    taken += [per_index[i] for i in range(size)]
                else:
                    for e in taken:
                        queue.remove(e)
                    out.append((step, taken, outer))
                    break
            else:
                return out


def join_input(step: Step, events: Sequence[Event]) -> Any:
    """A join's input: the payloads of each consumed type in branch order (``[]`` for a fan-out of
    no branches; a branch that emitted nothing of a type is left out); a mapping type -> list when
    it consumes several types, where a type whose event came from outside the fan-out (the
    question the branches answer) gives its one payload instead of a list."""
    depth = max((len(e.frame) for e in events), default=0)
    per: dict[str, Any] = {t: [] for t in step.consumes}
    for e in events:
        if len(e.frame) < depth:
            per[e.type] = e.payload  # from outside the fan-out
        elif not e.empty:
            per[e.type].append(e.payload)
    return per[step.consumes[0]] if len(step.consumes) == 1 else per


def step_input(step: Step, events: Sequence[Event]) -> Any:
    """A step's input (see :data:`~seamkit.workflows._model.StepFn`)."""
    if step.join:
        return join_input(step, events)
    if len(step.consumes) == 1:
        return events[0].payload
    return {e.type: e.payload for e in events}


class WorkflowRun:
    """One run of a workflow, from its start or from a checkpoint's ``state`` (see the module doc);
    ``usage``, ``warnings`` and ``finished_texts`` (finished activations as codec texts) carry on
    from that checkpoint."""

    def __init__(self, workflow: Workflow, ctx: RunContext, state: WorkflowState, *, usage: Usage | None = None,
                 warnings: Sequence[str] = (), finished_texts: Sequence[str] = ()) -> None:
        self.workflow = workflow
        self.ctx = ctx
        self.inbox: dict[str, list[Event]] = {}
        for name, e in state.queue:
            self.inbox.setdefault(name, []).append(e)
        self.active: dict[str, Activation] = {a.id: a for a in state.active}
        self.finished = list(state.finished)
        # finished activations are checkpointed as their codec texts, each encoded once (the
        # checkpoint of a step does not encode again what earlier steps finished)
        self.finished_texts: list[str] = list(finished_texts)
        self.outcomes = list(state.outcomes)
        self.serial = state.serial
        self.usage = usage if usage is not None else Usage()
        self.warnings = list(warnings)
        self.handle: RunHandle | None = None
        self.scheduler = _Scheduler(workflow)
        self.steps = {s.name: s for s in workflow.steps}
        self.limit = asyncio.Semaphore(workflow.max_concurrency)
        self.tasks: dict[asyncio.Task[Any], str] = {}
        self.ledgers: dict[str, _ActivationLedger] = {}  # activation id -> its ledger, while it runs
        self.answers: dict[str, str] = {}  # gate activation id -> the person's answer
        self.lock = asyncio.Lock()

    # -- ids, state, events -------------------------------------------------------------------

    def _next(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}{self.serial}"

    def snapshot(self) -> WorkflowState:
        """The state as checkpointed, less the finished activations (``workflow_finished``)."""
        queue = tuple((name, e) for name, events in self.inbox.items() for e in events)
        return WorkflowState(queue, tuple(self.active.values()), (),
                             tuple(self.outcomes), self.serial)

    def checkpoint_state(self, **extra: Any) -> dict[str, Any]:
        """The checkpoint's ``state``: the workflow's name and graph digest, :meth:`snapshot`, the
        finished activations as codec texts, usage, warnings and scope, what a waiting gate waits
        for, and ``extra``."""
        from seamkit._durability import codec

        for a in self.finished[len(self.finished_texts):]:
            self.finished_texts.append(codec.dumps(a))
        state: dict[str, Any] = {"workflow": self.workflow.name, "workflow_graph": graph_digest(self.workflow),
                                 "workflow_state": self.snapshot(),
                                 "workflow_finished": list(self.finished_texts),
                                 "usage": self.usage, "warnings": list(self.warnings), "scope": self.ctx.scope}
        gates = [a for a in self.active.values() if a.status == "waiting"]
        if gates and not any(a.status == "running" for a in self.active.values()):
            state["waiting_for"] = "gate"
            state["status_detail"] = "waiting for the person: " + "; ".join(
                f"{a.step}: {self.steps[a.step].prompt or 'answer to continue'}" for a in gates if a.step in self.steps)
        state.update(extra)
        return state

    async def save(self, status: str, **extra: Any) -> None:
        """Checkpoint with ``status`` (nothing without a checkpointer); a checkpoint the store
        skipped is recorded as a warning."""
        if self.handle is None:
            return
        async with self.lock:
            saved = await self.handle.save(status, self.checkpoint_state(**extra), ())
        if not saved:
            why = self.handle.skipped[-1] if self.handle.skipped else "it held a secret"
            if why not in self.warnings:
                self.warnings.append(why)

    def emit_event(self, what: str, a: Activation, **data: Any) -> None:
        """Send a ``step`` stream event (``data["event"]`` = ``what``) about ``a`` to the observers."""
        step = self.steps.get(a.step)
        event = StreamEvent("step", self.ctx.run_id, len(self.finished), data=FrozenDict(
            event=what, name=a.step, activation=a.id, child_run_id=a.run_id,
            step_kind=step.kind if step is not None else None, **data))
        for observer in self.workflow.observers:
            observer.on_event(event)

    # -- the run ------------------------------------------------------------------------------

    def begin(self, payload: Any) -> None:
        """Deliver the start event carrying the workflow's input ``payload``."""
        self.deliver(Event(self._next("e"), START, payload))

    def deliver(self, e: Event) -> None:
        """Put ``e`` in the inbox of every step that consumes its type."""
        for name in self.scheduler.consumers.get(e.type, ()):
            self.inbox.setdefault(name, []).append(e)

    async def drive(self) -> WorkflowResult:
        """Run until the workflow is done or suspended. On any exception the steps in flight stop
        and the run is checkpointed (``running`` with ``interrupted`` when cancelled or
        interrupted, ``failed`` otherwise) before the exception propagates. The run's resources
        (``ctx.resources``: MCP sessions and the like, shared by every step) are created here unless
        the context brings them, and then closed here on every exit path."""
        from seamkit._runtime.context import owning_resources

        return await owning_resources(self.ctx, self._drive_closing)

    async def _drive_closing(self) -> WorkflowResult:
        try:
            return await self._drive()
        except BaseException as exc:
            # an unreachable broker (InfrastructureUnavailable) is no failure of the run: it stays resumable
            stopped = isinstance(exc, (RunCancelled, KeyboardInterrupt, asyncio.CancelledError,
                                       InfrastructureUnavailable))
            await self._stop(graceful=not stopped)
            if self.handle is not None:
                why = (f"{type(exc).__name__}: {exc}" if str(exc)
                       else f"{type(exc).__name__} (the run was stopped)")[:2000]
                try:
                    if stopped:
                        await self.handle.save("running", self.checkpoint_state(interrupted=why), (), lease=False)
                    else:
                        await self.save("failed", error=why)
                except BaseException as lost:  # the exception below is what the caller must see
                    log.warning("workflow run %s: its last checkpoint could not be written: %s", self.ctx.run_id,
                                f"{type(lost).__name__}: {lost}")
            raise

    async def _drive(self) -> WorkflowResult:
        # activations that had started before a crash, an interruption or a failure run again
        rerun = [a for a in self.active.values() if a.status in ("running", "failed")]
        for a in rerun:
            self.active[a.id] = dataclasses.replace(a, status="running", error=None)
        self._resolve_gates()
        self._start(rerun, resumed=True)
        finished = False  # activations finished since the last checkpoint
        while True:
            cancellation = self.ctx.cancellation
            cancellation.raise_if_cancelled()
            started = self._schedule()
            if not self.tasks and not started:
                break  # the end: _end() writes the last checkpoint
            if started or finished:
                # one checkpoint records what finished and the child run ids of what starts now,
                # before any of it runs
                await self.save("running")
                finished = False
            self._start(started, resumed=False)
            # a cancelled workflow stops its steps at once (drive() cancels the tasks in flight)
            stop = asyncio.ensure_future(cancellation.wait())
            try:
                done, _ = await asyncio.wait([*self.tasks, stop], return_when=asyncio.FIRST_COMPLETED)
            finally:
                stop.cancel()
            cancellation.raise_if_cancelled()
            failure: tuple[Activation, BaseException] | None = None
            for task in done:
                aid = self.tasks.pop(task)
                exc = task.exception() if not task.cancelled() else asyncio.CancelledError()
                if exc is None:
                    try:
                        self._finish(aid, task.result())
                        finished = True
                    except WorkflowFailed as bad:
                        exc = bad
                if exc is not None and failure is None:
                    failure = (self.active[aid], exc)
            if failure is not None:
                await self._fail(*failure)
        return await self._end()

    def _schedule(self) -> list[Activation]:
        started: list[Activation] = []
        while True:  # a skipped step's events may make another step ready
            ready = self.scheduler.ready(self.inbox)
            if not ready:
                return started
            self._activate(ready, started)

    def _activate(self, ready: list[tuple[Step, list[Event], tuple[Branch, ...]]], started: list[Activation]) -> None:
        limit = self.workflow.max_activations
        for step, events, frame in ready:
            if len(self.finished) + len(self.active) >= limit:
                raise WorkflowFailed(self.ctx.run_id, "ACTIVATION_LIMIT", f"more than {limit} steps ran in this "
                                     "run (a cycle that never ends?); raise Workflow.max_activations if it is meant")
            a = Activation(self._next("a"), step.name, tuple(events), new_run_id(), frame=frame)
            if any(e.empty for e in events) and not step.join:
                # a fan-out of no branches passes through to its join without running anything
                out = tuple(Event(self._next("e"), t, None, events[0].frame, step.name, empty=True)
                            for t in step.emits)
                for e in out:
                    self.deliver(e)
                done = dataclasses.replace(a, inputs=(), status="skipped", emitted=tuple(e.type for e in out))
                self.finished.append(done)
                self.emit_event("skipped", done)
                continue
            if step.kind == "gate":
                a = dataclasses.replace(a, status="waiting")
                self.active[a.id] = a
                self.emit_event("suspended", a, prompt=step.prompt)
                continue
            self.active[a.id] = a
            started.append(a)

    def _start(self, activations: Sequence[Activation], *, resumed: bool) -> None:
        for a in activations:
            task = asyncio.ensure_future(self._run_one(a, resumed))
            self.tasks[task] = a.id

    async def _run_one(self, a: Activation, resumed: bool) -> tuple[Any, Usage]:
        step = self.steps.get(a.step)
        if step is None:
            raise LookupError(f"the workflow has no step {a.step!r} any more (it was renamed or removed)")
        assert step.run is not None
        async with self.limit:
            effects = self.ctx.effects
            if effects is not None:
                effects = self.ledgers[a.id] = _ActivationLedger(effects)
            child = RunContext(run_id=a.run_id, parent_run_id=self.ctx.run_id, scope=self.ctx.scope,
                               services=self.ctx.services, cancellation=self.ctx.cancellation.child(),
                               clock=self.ctx.clock, effects=effects,
                               ancestors=(self.ctx.run_id, *self.ctx.ancestors), resources=self.ctx.resources)
            try:
                child.cancellation.raise_if_cancelled()
                sc = StepContext(child, step, a.id, self.ctx.run_id, resumed)
                self.emit_event("started", a)
                result = await step.run(sc, step_input(step, a.inputs))
                return result, sc._usage
            finally:
                self.ledgers.pop(a.id, None)

    def _finish(self, aid: str, outcome: tuple[Any, Usage]) -> None:
        """Record a finished activation and emit its events. Raises :class:`WorkflowFailed`
        (``STEP_FAILED``, the activation left to run again) when what it returned cannot be
        emitted or stored."""
        result, usage = outcome
        a = self.active[aid]
        step = self.steps[a.step]
        try:
            out = emitted(step, result)
            _storable(out)
        except (ValueError, TypeError, CodecError) as exc:
            why = f"{type(exc).__name__}: {exc}"[:2000]
            raise WorkflowFailed(self.ctx.run_id, "STEP_FAILED", f"step {a.step!r} ({a.id}, run {a.run_id}) "
                                 f"returned what it cannot emit: {why}", a.step) from None
        del self.active[aid]
        self.usage = self.usage + usage
        self._done(a, self._events(a, step, out))

    def _done(self, a: Activation, events: Sequence[Event], answer: str | None = None) -> None:
        """Record ``a`` as finished, having emitted ``events``, and tell the observers."""
        # a finished activation's inputs are not needed again: the checkpoint stays small
        done = dataclasses.replace(a, inputs=(), status="done", answer=answer,
                                   emitted=tuple(dict.fromkeys(e.type for e in events if not e.empty)))
        self.finished.append(done)
        self.emit_event("finished", done, emitted=list(done.emitted))

    def _events(self, a: Activation, step: Step, out: list[Emit] | tuple[str, list[Any]]) -> list[Event]:
        if isinstance(out, tuple) and out[0] not in self.scheduler.consumers:
            out = [Emit(out[0], out[1])]  # an outcome nothing consumes is the workflow's output: never split
        if isinstance(out, tuple):
            kind, items = out
            if not items:
                made = [Event(self._next("e"), kind, None, (*a.frame, Branch(a.id, 0, 0)), step.name, empty=True)]
            else:
                made = [Event(self._next("e"), kind, item, (*a.frame, Branch(a.id, i, len(items))), step.name)
                        for i, item in enumerate(items)]
        else:
            made = [Event(self._next("e"), e.type, e.payload, a.frame, step.name) for e in out]
        if a.frame:
            # inside a fan-out every branch answers for each type it may emit, so a join counts
            # it: a type it did not emit (a filter's None, the other route) is an empty event
            got = {e.type for e in made}
            made += [Event(self._next("e"), t, None, a.frame, step.name, empty=True)
                     for t in step.emits if t not in got]
        for e in made:
            if e.type in self.scheduler.outcomes and not e.empty:
                self.outcomes.append(e)
            self.deliver(e)
        return made

    async def _stop(self, *, graceful: bool) -> None:
        """Stop the steps in flight (they run again on resume). ``graceful`` (a step failed; not
        a cancellation): a step in the middle of an effect is stopped once the effect has finished
        and its receipt is recorded, unless the workflow is cancelled meanwhile; the others at
        once."""
        if not self.tasks:
            return
        for task, aid in self.tasks.items():
            ledger = self.ledgers.get(aid)
            if not (graceful and ledger is not None and ledger.stop_after_effects(task.cancel)):
                task.cancel()
        pending = set(self.tasks)
        cancelled = asyncio.ensure_future(self.ctx.cancellation.wait())
        try:
            while pending and not cancelled.done():
                _, pending = await asyncio.wait([*pending, cancelled], return_when=asyncio.FIRST_COMPLETED)
                pending.discard(cancelled)
        finally:
            cancelled.cancel()
            for task in pending:  # cancelled while waiting for an effect: it stops now
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
            self.tasks.clear()

    async def _fail(self, a: Activation, exc: BaseException) -> None:
        cancelled = isinstance(exc, (RunCancelled, asyncio.CancelledError))
        await self._stop(graceful=not cancelled)  # the others stop; they run again on resume
        if cancelled:
            self.ctx.cancellation.raise_if_cancelled()
            raise exc  # the activation stays running: a plain resume runs it again
        if isinstance(exc, InfrastructureUnavailable):
            raise exc  # not the step's failure: it stays running, a resume runs it again
        why = (str(exc) if isinstance(exc, WorkflowFailed) else f"{type(exc).__name__}: {exc}")[:2000]
        self.active[a.id] = dataclasses.replace(a, status="failed", error=why)
        self.emit_event("failed", self.active[a.id], error=why)
        if isinstance(exc, WorkflowFailed):
            raise exc
        uncertain = _uncertain_key(exc)
        settle = (f"; once a person has checked, settle it: seamkit runs settle {self.ctx.run_id} {uncertain} "
                  "applied --result JSON (what the operation returned) or not-applied, then resume with "
                  "--allow-finished" if uncertain is not None else "")
        raise WorkflowFailed(self.ctx.run_id, "STEP_FAILED", f"step {a.step!r} ({a.id}, run {a.run_id}) "
                             f"failed: {why}{settle}", a.step) from exc

    def _resolve_gates(self) -> None:
        """Finish each gate answered in :attr:`answers` with what its answer emits."""
        for aid, answer in list(self.answers.items()):
            a = self.active.pop(aid)
            step = self.steps[a.step]
            self._done(a, self._events(a, step, gate_emits(step, answer, step_input(step, a.inputs))), answer)
        self.answers.clear()

    async def _end(self) -> WorkflowResult:
        gates = [a for a in self.active.values() if a.status == "waiting"]
        if gates:
            await self.save("suspended")
            return self.result("suspended")
        awaited = self._external_awaited()
        if not self.outcomes and awaited:
            detail = f"waiting for an outside event: {', '.join(awaited)}"
            await self.save("suspended", waiting_for="event", status_detail=detail, awaiting=list(awaited))
            return self.result("suspended")
        if not self.outcomes:
            waiting = self._stall_text()
            why = ("it ended without an outcome" + (f": {waiting}" if waiting else
                                                     " (no step emitted one of its outcomes)"))
            raise WorkflowFailed(self.ctx.run_id, "WORKFLOW_STALLED", why)
        left = self._stall_text()
        if left:
            note = f"events left unconsumed when the workflow ended: {left}"
            if note not in self.warnings:
                self.warnings.append(note)
        if len(self.outcomes) > 1:
            note = (f"the workflow emitted {len(self.outcomes)} outcome events "
                    f"({', '.join(e.type for e in self.outcomes)}); its output is the last one's (outcomes has all)")
            if note not in self.warnings:
                self.warnings.append(note)
        await self.save("done", output=self.outcomes[-1].payload, outcome=self.outcomes[-1].type)
        return self.result("done")

    def _external_awaited(self) -> list[str]:
        """The external event types a step still waits for (the run suspends for them)."""
        external = set(self.workflow.external)
        if not external:
            return []
        awaited: list[str] = []
        for step in self.workflow.steps:
            inbox = self.inbox.get(step.name, ())
            if any(e.frame for e in inbox) and not step.join:
                continue  # inside a fan-out: an outside event cannot meet these (the run stalls, saying so)
            have = {e.type for e in inbox}
            missing = [t for t in step.consumes if t not in have]
            if missing and all(t in external for t in missing) and (have or set(step.consumes) <= external):
                awaited += [t for t in missing if t not in awaited]
        if not self.outcomes:  # an outcome that arrives from outside
            awaited += [t for t in self.workflow.outcomes if t in external and t not in awaited]
        return awaited

    def _stall_text(self) -> str:
        """What each step holding events still waits for (``""`` when none holds any)."""
        waits = []
        for step in self.workflow.steps:
            have = {e.type for e in self.inbox.get(step.name, ())}
            if have and not step.join and have == set(step.consumes) and len(step.consumes) > 1:
                waits.append(f"step {step.name!r} has {', '.join(sorted(have))}, but not from the same fan-out "
                             "branch: the events a step waits for must come from one branch (join the fan-out "
                             "first, or carry the other event along the branch)")
                continue
            framed = any(e.frame for e in self.inbox.get(step.name, ()))
            outside = [t for t in step.consumes if t not in have and t in self.workflow.external]
            if have and framed and outside and not step.join:
                waits.append(f"step {step.name!r} has {', '.join(sorted(have))} from a fan-out branch and waits for "
                             f"{', '.join(outside)}, an outside event, which is not from the same fan-out branch "
                             "(join the fan-out first)")
                continue
            if have:
                missing = [t for t in step.consumes if t not in have]
                waits.append(f"step {step.name!r} has {', '.join(sorted(have))} but waits for "
                             + (", ".join(missing) if missing else "the rest of its fan-out's branches"))
        return "; ".join(waits)

    def result(self, status: Literal["done", "suspended"]) -> WorkflowResult:
        """The :class:`WorkflowResult` of the run as it stands, with ``status``."""
        last = self.outcomes[-1] if self.outcomes and status == "done" else None
        waiting = tuple((a, self.steps[a.step].prompt if a.step in self.steps else "")
                        for a in self.active.values() if a.status == "waiting")
        awaiting = tuple(self._external_awaited()) if status == "suspended" and not waiting else ()
        return WorkflowResult(self.ctx.run_id, status, last.type if last else None, last.payload if last else None,
                              tuple(self.outcomes), tuple(self.finished), waiting, self.usage, tuple(self.warnings),
                              awaiting)


def graph_digest(workflow: Workflow) -> str:
    """A digest of ``workflow``'s graph (steps: name, kind, consumes, emits, join, gate routes;
    outcomes; external types), recorded with its runs: a run is resumed only by the graph it
    started with."""
    import hashlib
    import json

    shape = [[s.name, s.kind, list(s.consumes), list(s.emits), s.join, s.on_yes, s.on_no,
              graph_digest(s.inner) if s.inner is not None else None] for s in workflow.steps]
    text = json.dumps([shape, list(workflow.outcomes), list(workflow.external)], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _storable(out: list[Emit] | tuple[str, list[Any]]) -> None:
    """Raise :class:`~seamkit.errors.CodecError` (or ``TypeError``) when a payload of ``out``
    cannot be frozen into an event or checkpointed: every workflow checks, durable or not, so a
    step behaves the same in both."""
    from seamkit._durability.codec import encode

    payloads = [e.payload for e in out] if isinstance(out, list) else out[1]
    for p in payloads:
        freeze(p)  # an event's payload is frozen (TypeError for a set: it has no stable order)
    encode(payloads)


def _uncertain_key(exc: BaseException) -> str | None:
    """The effect ledger key of an :class:`~seamkit.errors.EffectUncertain` that ``exc`` is or was
    raised from, or ``None``."""
    from seamkit.errors import EffectUncertain

    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, EffectUncertain):
            return seen.key
        seen = seen.__cause__ or seen.__context__
    return None


def gate_emits(step: Step, answer: str, payload: Any) -> list[Emit]:
    """What a gate emits for the person's ``answer`` (see :class:`~seamkit.workflows._model.Step`).
    Raises ``ValueError`` when the gate routes yes and no and the answer is neither."""
    if step.on_yes is not None or step.on_no is not None:
        from seamkit._agent.kernel import classify_answer

        decision = classify_answer(answer)
        target = step.on_yes if decision == "yes" else step.on_no if decision == "no" else None
        if target is None:
            raise ValueError(f"gate {step.name!r} takes a plain yes or no, got {answer!r:.80}")
        return [Emit(target, payload)]
    return [Emit(step.emits[0], {"answer": answer, "input": payload})]


def workflow_state(state: Mapping[str, Any]) -> WorkflowState | None:
    """The :class:`WorkflowState` of a checkpointed workflow run's ``state`` with its finished
    activations decoded (they are stored apart, as codec texts, under ``"workflow_finished"``), or
    ``None`` for another run. Raises :class:`~seamkit.errors.CodecError` for a text that does not
    decode."""
    from seamkit._durability import codec

    ws = state.get("workflow_state")
    if not isinstance(ws, WorkflowState):
        return None
    texts = state.get("workflow_finished") or ()
    return dataclasses.replace(ws, finished=(*(codec.loads(t) for t in texts), *ws.finished))


def _context(workflow: Workflow, ctx: RunContext | None, run_id: str | None) -> RunContext:
    """The workflow run's context: ``ctx`` (a copy when ``run_id`` replaces its run id) or a new
    one, with the workflow's services under the context's own."""
    if ctx is None:
        ctx = RunContext(run_id=run_id) if run_id is not None else RunContext()
    else:  # a copy: the caller's context is not changed (services, effects); cancellation is shared
        ctx = dataclasses.replace(ctx, run_id=run_id if run_id is not None else ctx.run_id)
    if workflow.services:
        ctx.services = FrozenDict({**workflow.services, **ctx.services})
    return ctx


async def run_workflow(workflow: Workflow, input: Any = None, *, ctx: RunContext | None = None,
                       run_id: str | None = None, events: Mapping[str, Sequence[Any]] | None = None,
                       metadata: Mapping[str, Any] | None = None) -> WorkflowResult:
    """Run ``workflow`` with ``input`` as the start event's payload (``events``: external events
    by type, there from the start). ``ctx``: the workflow run's context (its run id, scope,
    services, cancellation); ``run_id``: the run id to use; ``metadata``: JSON scalars stored with
    the run's checkpoints.

    Returns a :class:`WorkflowResult` (``done``, or ``suspended`` at a gate or for outside
    events). Raises :class:`~seamkit.workflows._validate.WorkflowInvalid` (every problem) before
    anything runs; :class:`WorkflowFailed` when a step raises or returns what it cannot emit
    (``STEP_FAILED``, the step's exception as ``__cause__``), the run stalls
    (``WORKFLOW_STALLED``) or runs too many activations (``ACTIVATION_LIMIT``); ``ValueError``
    for an external event type the workflow does not declare, and for gates or outside events
    without a checkpointer; ``TypeError`` for an ``events`` value that is not a list of payloads;
    :class:`~seamkit.errors.RunCancelled` when cancelled."""
    check(workflow)
    if workflow.checkpointer is None and (workflow.external or any(s.kind == "gate" for s in workflow.steps)):
        raise ValueError(f"workflow {workflow.name!r} has gates or outside events: a run waiting for them is "
                         "suspended durably, so it needs a checkpointer")
    ctx = _context(workflow, ctx, run_id)
    run = WorkflowRun(workflow, ctx, WorkflowState())
    run.begin(input)
    _external(run, events)
    cp = workflow.checkpointer
    if cp is not None:
        if ctx.effects is None:
            ctx.effects = _ledger(cp, ctx)
        run.handle = await cp.begin(ctx.run_id, run.checkpoint_state(), (), parent_run_id=ctx.parent_run_id,
                                    metadata={**(metadata or {}), "agent": workflow.name,
                                              "workflow": workflow.name})
    return await run.drive()


def _external(run: WorkflowRun, events: Mapping[str, Sequence[Any]] | None) -> None:
    """Deliver the external ``events`` (type -> payloads) to ``run``. Raises ``ValueError`` for a
    type the workflow does not declare external, ``TypeError`` for payloads that are not a list."""
    for kind, payloads in (events or {}).items():
        if kind not in run.workflow.external:
            raise ValueError(f"workflow {run.workflow.name!r} takes no external event {kind!r} "
                             f"(external: {', '.join(run.workflow.external) or 'none'})")
        if isinstance(payloads, (str, bytes)) or not isinstance(payloads, Sequence):
            raise TypeError(f"events[{kind!r}] must be a list of payloads, got {type(payloads).__name__}")
        for p in payloads:
            e = Event(run._next("e"), kind, p)
            if kind in run.scheduler.outcomes:
                run.outcomes.append(e)
            run.deliver(e)


def _ledger(cp: Checkpointer, ctx: RunContext) -> EffectLedger | None:
    """The effect ledger on ``cp``'s store for the run's tenant (``None`` without a store)."""
    return EffectLedger(cp.store, tenant=ctx.scope.tenant) if cp.store is not None else None


async def resume_workflow(workflow: Workflow, run_id: str, *, answer: str | None = None, gate: str | None = None,
                          events: Mapping[str, Sequence[Any]] | None = None, allow_finished: bool = False,
                          steal: bool = False, ctx: RunContext | None = None) -> WorkflowResult:
    """Continue the workflow run ``run_id`` from its latest checkpoint: activations that had not
    finished run again (see the module doc); ``answer`` answers the waiting gate (``gate``: which
    one, by step name or activation id, when several wait); ``events``: external events handed in
    now; ``allow_finished``: return a done run's result, or run a failed one's failed step again.

    Raises :class:`~seamkit.errors.RunNotResumable` (no checkpointer, unknown run, not this
    workflow's, its graph changed since the run started, done (unless ``allow_finished``; always
    when given an answer or events), failed without ``allow_finished``, held by another worker, a
    gate or an outside event waits and neither an answer nor events were given);
    ``ValueError`` for an answer with no gate waiting, an ambiguous or unknown ``gate``, or an
    answer a yes/no gate cannot take; and what :func:`run_workflow` raises."""
    check(workflow)
    cp = workflow.checkpointer
    if cp is None:
        raise RunNotResumable(run_id, "this workflow has no checkpointer")
    snap = await cp.latest(run_id)
    if snap is None:
        raise RunNotResumable(run_id, "no checkpoints for this run id")
    state = workflow_state(snap.state)
    if state is None or snap.state.get("workflow") != workflow.name:
        raise RunNotResumable(run_id, f"it is not a run of workflow {workflow.name!r}")
    digest = snap.state.get("workflow_graph")
    if digest is not None and digest != graph_digest(workflow):
        raise RunNotResumable(run_id, f"workflow {workflow.name!r} has other steps or events than when this run "
                              "started: resume it with the definition (the file) it started with")
    ctx = _context(workflow, ctx, run_id)
    ctx = dataclasses.replace(ctx, parent_run_id=snap.parent_run_id)
    scope = snap.state.get("scope")
    if scope is not None:
        ctx.scope = scope
    usage = snap.state.get("usage")
    run = WorkflowRun(workflow, ctx, state, usage=usage if isinstance(usage, Usage) else None,
                      warnings=snap.state.get("warnings") or (),
                      finished_texts=snap.state.get("workflow_finished") or ())
    if snap.status == "done":
        if answer is not None or events:
            raise RunNotResumable(run_id, "it is done: nothing waits for an answer or an event")
        if not allow_finished:
            raise RunNotResumable(run_id, "it is done (allow_finished=True, or seamkit resume --allow-finished, "
                                  "gives its result)")
        return run.result("done")
    gates = [a for a in state.active if a.status == "waiting"]
    if answer is not None:
        chosen = _gate(gates, gate, run_id)
        gate_emits(run.steps[chosen.step], answer, step_input(run.steps[chosen.step], chosen.inputs))  # check it
        run.answers[chosen.id] = answer
    elif snap.status == "suspended" and not events and snap.state.get("waiting_for") == "event":
        raise RunNotResumable(run_id, f"{snap.state.get('status_detail')}: hand it in (events=, or seamkit resume "
                              "RUN --event TYPE=JSON)")
    elif snap.status == "suspended" and not events:
        prompts = "; ".join(f"{a.step}: {run.steps[a.step].prompt}" for a in gates if a.step in run.steps)
        raise RunNotResumable(run_id, f"it waits for the person's answer ({prompts}): pass it (answer=, or "
                              "seamkit resume RUN --answer TEXT)")
    _external(run, events)
    if snap.status == "failed" and not allow_finished:
        raise RunNotResumable(run_id, "it failed (allow_finished=True, or seamkit resume --allow-finished, runs "
                              "its failed step again)")
    if ctx.effects is None:
        ctx.effects = _ledger(cp, ctx)
    handle, _ = await cp.claim(run_id, allow_finished=True, steal=steal, snapshot=snap,
                               state=run.checkpoint_state())
    run.handle = handle
    return await run.drive()


def _gate(gates: Sequence[Activation], gate: str | None, run_id: str) -> Activation:
    """The waiting gate activation that ``gate`` (a step name or activation id; ``None``: the only
    one) names. Raises ``ValueError`` when none waits, or ``gate`` names none or several."""
    if not gates:
        raise ValueError(f"run {run_id} has no gate waiting for an answer")
    listed = ", ".join(f"{a.step} ({a.id})" for a in gates)
    if gate is None:
        if len(gates) > 1:
            raise ValueError(f"several gates wait ({listed}): say which")
        return gates[0]
    found = [a for a in gates if gate in (a.id, a.step)]
    if len(found) != 1:
        what = "no waiting gate" if not found else "several waiting gates"
        raise ValueError(f"{what} {gate!r} (waiting: {listed})")
    return found[0]
