"""What the kernel keeps across turns, and what one turn returns.

:class:`KernelState` is the whole state of a conversation with capabilities: the facts known, the
evidence behind them, the agenda (writes waiting for a person's confirmation, capabilities waiting
for a fact), the open interactions (what the person is asked) and the ids of the committed turns.
It is a frozen value stored in the run's checkpoint through the checkpoint codec (under the state
key ``"kernel"``); the receipts of the capabilities' effects are the effect ledger's, in the same
store.

:class:`TurnResult` is one turn: the model's intentions and the planner's :class:`Disposition` of
each, every capability run (:class:`Execution`), the facts added and removed, the open
interactions and agenda, the reply and the citations in it that name no known evidence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from seamkit.values import EMPTY, FrozenDict, Usage, freeze

__all__ = [
    "Action",
    "AgendaItem",
    "Disposition",
    "Execution",
    "Intention",
    "Interaction",
    "KernelState",
    "TurnResult",
]

#: The planner's decision on one intention.
Action = Literal["execute", "defer", "clarify", "reject"]
#: How running one capability went: ``completed``, ``failed``, ``skipped`` (a dependency did not
#: complete or is pending), ``awaiting_confirmation`` (a write waits for a person: an agenda item),
#: ``needs_input`` (the person must say more: an interaction), ``awaiting_dependency`` (its
#: ``NeedsDependency`` provider has not established the fact yet: an agenda item), ``declined`` (the
#: person said no).
Outcome = Literal["completed", "failed", "skipped", "awaiting_confirmation", "needs_input", "awaiting_dependency",
                  "declined"]


@dataclass(frozen=True, slots=True)
class Intention:
    """What the model proposes: run ``capability`` (an id) on ``input`` (JSON object).
    ``alternatives``: other capability ids the model considers equally fitting (an ambiguous
    intention: the planner asks the person to choose)."""

    capability: str
    input: Mapping[str, Any] = EMPTY
    alternatives: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "input", freeze(dict(self.input)))
        object.__setattr__(self, "alternatives", tuple(self.alternatives))


@dataclass(frozen=True, slots=True)
class Disposition:
    """The planner's decision on one :class:`Intention`: ``action`` (``execute``, ``defer``,
    ``clarify``, ``reject``), a stable ``code`` (``None`` for ``execute``), a ``message`` for the
    model and the person, ``fact`` (``defer``: the missing fact type, ``name@version``) and
    ``options`` (``clarify`` of an ambiguous intention: the capability ids to choose from)."""

    intention: Intention
    action: Action
    code: str | None = None
    message: str = ""
    fact: str | None = None
    options: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Execution:
    """One capability run (or not run) in a turn: ``capability`` (``id@version``), its ``input``,
    the ``outcome`` (see :data:`Outcome`), a stable ``code`` for the ones that did not complete,
    a sanitized ``message``, the ``output`` (JSON data), the fact types it established (``facts``)
    and the stale ones its result removed (``removed``), the ones it waits for (``pending``: code
    ``DEPENDENCY_PENDING``, their providers await a confirmation, an input or a dependency),
    whether a person ``confirmed`` it, and
    ``reason``: why it ran when the model did not propose it in this step (``agenda:<id>``: a
    confirmed agenda item; ``dependency:<capability>``: a provider run for a ``NeedsDependency``;
    ``resumed:<id>``: a capability resumed with the fact it waited for)."""

    capability: str
    input: Mapping[str, Any]
    outcome: Outcome
    code: str | None = None
    message: str = ""
    output: Any = None
    facts: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    confirmed: bool = False
    reason: str | None = None
    pending: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "input", freeze(dict(self.input)))
        object.__setattr__(self, "output", freeze(self.output))
        object.__setattr__(self, "pending", tuple(self.pending))


@dataclass(frozen=True, slots=True)
class AgendaItem:
    """Work the kernel holds for a later turn: ``kind`` ``confirmation`` (a write waiting for the
    person's yes: it runs once, with this ``input``) or ``dependency`` (a capability waiting for the
    fact ``waits_for``, resumed with its private continuation ``state``). ``id``: stable within the
    conversation (``a1``, ``a2``, ...); ``turn_id``: the turn that created it."""

    id: str
    kind: Literal["confirmation", "dependency"]
    capability: str
    input: Mapping[str, Any]
    turn_id: str
    summary: str = ""
    waits_for: str | None = None
    state: Any = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "input", freeze(dict(self.input)))


@dataclass(frozen=True, slots=True)
class Interaction:
    """What the person is asked: ``kind`` ``confirmation`` (yes or no on the agenda item
    ``agenda_item``), ``input`` (the fact ``fact`` is missing, or the capability ``capability``
    asked for ``fields``) or ``choice`` (an ambiguous intention: one of ``options``). ``prompt``:
    the question, for people."""

    id: str
    kind: Literal["confirmation", "input", "choice"]
    prompt: str
    agenda_item: str | None = None
    fact: str | None = None
    capability: str | None = None
    fields: tuple[str, ...] = ()
    options: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class KernelState:
    """A conversation's kernel state (see the module doc). ``facts``: ``"name@version"`` ->
    :class:`~seamkit.capabilities._model.Fact`; ``evidence``: evidence id ->
    :class:`~seamkit.capabilities._model.Evidence`; ``agenda`` and ``interactions``: open items,
    oldest first; ``turns``: the committed turn ids, oldest first; ``serial``: the counter behind
    agenda and interaction ids; ``turn``: the turn in progress (``(turn_id, text)``) while it runs, so
    an interrupted (or failed) turn is run again with the same id and text; ``uncertain``: the effect
    ledger keys (``capability:<id>:<key>``) of this conversation's capability effects whose outcome
    was unknown (``EFFECT_UNCERTAIN``), the ones a person may settle through this run."""

    facts: FrozenDict = EMPTY
    evidence: FrozenDict = EMPTY
    agenda: tuple[AgendaItem, ...] = ()
    interactions: tuple[Interaction, ...] = ()
    turns: tuple[str, ...] = ()
    serial: int = 0
    turn: tuple[str, str] | None = None
    uncertain: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TurnResult:
    """One turn (see the module doc). ``turn_id``; ``reply``: the final answer's text;
    ``dispositions``: one per intention the model proposed, in the order proposed, every step of
    the turn; ``executions``: every capability run, in the order they finished; ``facts_added`` /
    ``facts_removed``: fact types (``name@version``) new or replaced / forgotten (invalidated or
    stale) in this turn; ``interactions`` and ``agenda``: open after the turn; ``unknown_citations``:
    evidence ids the reply cites that no evidence has; ``replayed``: this is the stored result of
    a committed turn, returned again with no model or capability call; ``steps``: model calls;
    ``usage``: their tokens and cost; ``message``: the person's message the turn answered (a turn
    id names one message: replaying it with another is refused)."""

    turn_id: str
    reply: str
    dispositions: tuple[Disposition, ...] = ()
    executions: tuple[Execution, ...] = ()
    facts_added: tuple[str, ...] = ()
    facts_removed: tuple[str, ...] = ()
    interactions: tuple[Interaction, ...] = ()
    agenda: tuple[AgendaItem, ...] = ()
    unknown_citations: tuple[str, ...] = ()
    replayed: bool = False
    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    message: str = ""

    def codes(self) -> tuple[str, ...]:
        """Every code of the turn, dispositions first, then executions (``None`` left out)."""
        return tuple(c for c in (*(d.code for d in self.dispositions), *(e.code for e in self.executions))
                     if c is not None)
