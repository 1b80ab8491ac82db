"""What a workflow is made of: :class:`Step` s joined by typed events, and the :class:`Workflow`.

A workflow starts with one event of type :data:`START` carrying its input. A step **consumes**
event types (several: it waits for one event of each, from the same fan-out branch) and **emits**
event types; what it returns decides what it emits (:func:`emitted`):

- an :class:`Emit` (or a list of them): those events;
- ``None``: nothing (and a step that declares no event type emits nothing, whatever it returns);
- a ``list``: a **fan-out** (when some step consumes the step's declared type; a list emitted
  as an outcome that no step consumes is one event: the workflow's output is never split): one
  event of that type per item, each in its own branch; steps downstream run once per branch,
  until a step declared ``join=True`` receives the list of every branch's payload (in branch
  order) and emits outside the fan-out again. A join waits for every branch of its round exactly
  once; an empty list reaches the join as ``[]`` (the steps in between do not run), so a wait
  never hangs on nothing;
- anything else: one event of the step's single declared type.

Event types a workflow ends with are its **outcomes** (declared: :attr:`Workflow.outcomes`); the
workflow's output is the payload of the last outcome emitted. Events of :attr:`Workflow.external`
types arrive from outside (a caller hands them in on resume). A **gate** step waits for a
person: the workflow suspends until
:func:`~seamkit.workflows._engine.resume_workflow` is given the answer (``answer=...``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from seamkit.values import EMPTY, FrozenDict

if TYPE_CHECKING:
    from seamkit.workflows._engine import StepContext

__all__ = ["START", "Emit", "Step", "StepKind", "Workflow", "emitted"]

START = "start"
"""The event type every workflow starts with; its payload is the workflow's input."""

StepKind = Literal["function", "agent", "tool", "capability", "gate", "workflow"]

StepFn = Callable[["StepContext", Any], Awaitable[Any]]
"""``async fn(ctx, input) -> result``: ``input`` is the payload of the one event the step consumes,
a mapping event type -> payload when it consumes several, or (a join) the list of the branches'
payloads, per event type when it consumes several."""


@dataclass(frozen=True, slots=True)
class Emit:
    """An event a step emits explicitly: its ``type`` and ``payload`` (JSON data or any value the
    checkpoint codec stores)."""

    type: str
    payload: Any = None


@dataclass(frozen=True, slots=True)
class Step:
    """One named step (``ValueError`` for a blank name, a gate with ``run``, or another kind
    without one). ``run``: what it does (``None`` for a gate); ``consumes``: the event types
    it waits for (all of them, one event each); ``emits``: the event types it may emit;
    ``join``: it receives every branch of a fan-out at once (see the module doc); ``kind``: what
    runs (for listings and events); ``prompt``: a gate's question to the person; ``on_yes`` /
    ``on_no``: a gate's event for a plain yes / no (otherwise it emits its one declared type with
    ``{"answer": text, "input": payload}``); ``origin``: where it was declared (``file:line``, for
    messages); ``config_missing``: required configuration the step's component lacks (reported by
    validation, not at run time); ``inner``: a nested workflow step's workflow (validated with the
    outer one)."""

    name: str
    run: StepFn | None = None
    consumes: tuple[str, ...] = (START,)
    emits: tuple[str, ...] = ()
    join: bool = False
    kind: StepKind = "function"
    prompt: str = ""
    on_yes: str | None = None
    on_no: str | None = None
    origin: str | None = None
    config_missing: tuple[str, ...] = ()
    inner: Workflow | None = None

    def __post_init__(self) -> None:
        # object.__setattr__: the dataclass is frozen; normalising here lets callers pass a str or a list
        for name in ("consumes", "emits", "config_missing"):
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, (value,))
            elif type(value) is not tuple:
                object.__setattr__(self, name, tuple(value))
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"a step needs a non-blank name, got {self.name!r}")
        if self.kind == "gate":
            if self.run is not None:
                raise ValueError(f"step {self.name!r}: a gate waits for a person; it has no run function")
            routed = tuple(e for e in (self.on_yes, self.on_no) if e is not None)
            if routed and any(e not in self.emits for e in routed):
                object.__setattr__(self, "emits", tuple(dict.fromkeys((*self.emits, *routed))))
        elif self.run is None:
            raise ValueError(f"step {self.name!r} has nothing to run (run=None is for kind='gate')")

    def where(self) -> str:
        """The step's name, with where it was declared when known."""
        return f"{self.name!r}" + (f" ({self.origin})" if self.origin else "")


@dataclass(frozen=True, slots=True)
class Workflow:
    """A named set of :class:`Step` s (see the module doc). ``outcomes``: the event types it ends
    with; ``external``: event types that arrive from outside (a run waiting only for them is
    suspended until they are handed in); ``max_concurrency``: steps running at once (fan-out
    branches included); ``max_activations``: steps one run may run in all (a cycle that never
    ends fails with ``ACTIVATION_LIMIT``); ``observers``: receive each ``step`` event
    (:class:`~seamkit.values.StreamEvent`); ``checkpointer``: a
    :class:`~seamkit._durability.checkpointer.Checkpointer` making it durable (a checkpoint after
    every step; ``resume``; a checkpoint port given here is wrapped in one); ``origin``: where it
    was declared; ``metadata``: free-form data about the workflow (not read by the engine);
    ``services``: name -> object, added to each run's ``RunContext.services`` (the run's own win),
    for the steps.

    Raises ``ValueError`` for ``max_concurrency`` below 1. The graph is not checked on
    construction: :func:`~seamkit.workflows._validate.validate` lists every problem at once, and
    running an invalid workflow raises :class:`~seamkit.workflows._validate.WorkflowInvalid`
    before any step runs."""

    name: str
    steps: tuple[Step, ...]
    outcomes: tuple[str, ...] = ()
    external: tuple[str, ...] = ()
    max_concurrency: int = 4
    observers: tuple[Any, ...] = ()
    max_activations: int = 10_000
    checkpointer: Any = None
    origin: str | None = None
    metadata: Mapping[str, Any] = field(default=EMPTY)
    services: Mapping[str, Any] = field(default=EMPTY)

    def __post_init__(self) -> None:
        for name in ("steps", "outcomes", "external", "observers"):
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, (value,))
            elif type(value) is not tuple:
                object.__setattr__(self, name, tuple(value))
        for name in ("metadata", "services"):
            if type(getattr(self, name)) is not FrozenDict:
                object.__setattr__(self, name, FrozenDict(getattr(self, name)))
        if not isinstance(self.max_concurrency, int) or self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be an integer >= 1, got {self.max_concurrency!r}")
        if not isinstance(self.max_activations, int) or self.max_activations < 1:
            raise ValueError(f"max_activations must be an integer >= 1, got {self.max_activations!r}")
        if self.checkpointer is not None:
            from seamkit._durability.checkpointer import Checkpointer

            if not isinstance(self.checkpointer, Checkpointer):
                object.__setattr__(self, "checkpointer", Checkpointer(self.checkpointer))

    def step(self, name: str) -> Step | None:
        """The first step called ``name``, or ``None``."""
        return next((s for s in self.steps if s.name == name), None)


def emitted(step: Step, result: Any) -> list[Emit] | tuple[str, list[Any]]:
    """What ``step`` emits for ``result`` (see the module doc): a list of :class:`Emit`, or, for a
    fan-out, ``(event type, items)``. Raises ``ValueError`` naming the step when a plain value or
    list comes from a step that declares several event types, or an :class:`Emit` has a type the
    step does not declare."""
    if result is None:
        return []
    if isinstance(result, Emit):
        result = [result]
    if isinstance(result, Sequence) and not isinstance(result, (str, bytes)) and result and all(
            isinstance(e, Emit) for e in result):
        undeclared = sorted({e.type for e in result if e.type not in step.emits})
        if undeclared:
            raise ValueError(f"step {step.name!r} emitted {', '.join(undeclared)}, which it does not declare "
                             f"(it declares: {', '.join(step.emits) or 'nothing'})")
        return list(result)
    if not step.emits:
        return []  # a step that declares no event (a write at the end, e.g.) emits nothing
    if len(step.emits) != 1:
        raise ValueError(f"step {step.name!r} returned a value but declares {len(step.emits)} event types "
                         f"({', '.join(step.emits) or 'none'}): return Emit(type, payload) to say which")
    if isinstance(result, list):
        return step.emits[0], list(result)
    return [Emit(step.emits[0], result)]

