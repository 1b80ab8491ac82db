"""The fact reducer: what is known after a capability completes.

The state is a mapping fact type (``"name@version"``, the text form, so the checkpoint codec stores
it as a JSON object) -> :class:`~seamkit.capabilities._model.Fact`: one fact per type.
:func:`reduce_facts` applies one :class:`~seamkit.capabilities._model.Completed` result of one
capability:

1. A fact of a type the capability does not declare in ``provides`` is refused
   (:class:`KernelError` ``UNDECLARED_FACT``): the compiler's graph is what the planner trusts.
2. **Stale facts go.** The capability's ``invalidates`` types are removed, and so is every fact
   that depends (``depends_on``), directly or through other facts, on a type that was removed or
   that this result replaces: what it was derived from changed.
3. **New facts replace** the ones of the same type. A fact established again exactly as it is
   known (same value, evidence and dependencies) is no change: nothing derived from it goes.

The result lists what was added, replaced and removed (the turn result reports it). The reducer is
a pure function of the state and the result: the same inputs give the same state, which the
checkpoint stores through the existing codec.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from seamkit.capabilities._model import Capability, Completed, Fact, FactType
from seamkit.errors import KernelError
from seamkit.values import FrozenDict

__all__ = ["KernelError", "Reduction", "reduce_facts", "stale_closure"]  # KernelError: from seamkit.errors


@dataclass(frozen=True, slots=True)
class Reduction:
    """The state after one result: ``facts`` (``"name@version"`` -> fact, a frozen mapping), and the fact
    types ``added`` (new), ``replaced`` (a new fact of a type already known) and ``removed``
    (invalidated or stale), each sorted."""

    facts: FrozenDict
    added: tuple[FactType, ...] = ()
    replaced: tuple[FactType, ...] = ()
    removed: tuple[FactType, ...] = ()


def stale_closure(facts: Mapping[str, Fact], changed: set[FactType]) -> set[FactType]:
    """The types of the facts in ``facts`` that depend, directly or transitively, on a type in
    ``changed`` (``changed`` itself not included unless a fact depends on it through others)."""
    if not changed:
        return set()
    dependents: dict[FactType, list[FactType]] = {}  # one pass over the facts, then a walk
    for f in facts.values():
        for d in f.depends_on:
            dependents.setdefault(d, []).append(f.type)
    stale: set[FactType] = set()
    frontier = list(changed)
    while frontier:
        for t in dependents.get(frontier.pop(), ()):
            if t not in stale:
                stale.add(t)
                frontier.append(t)
    return stale


def reduce_facts(facts: Mapping[str, Fact], capability: Capability, result: Completed) -> Reduction:
    """``facts`` after ``capability`` completed with ``result`` (see the module doc). Raises
    :class:`KernelError` ``UNDECLARED_FACT`` for a fact of a type the capability does not provide,
    and ``DUPLICATE_FACT`` for two facts of one type in the result."""
    declared = set(capability.provides)
    new: dict[FactType, Fact] = {}
    for f in result.facts:
        if f.type not in declared:
            raise KernelError("UNDECLARED_FACT", (capability.ref, str(f.type)),
                              f"{capability.ref} returned a {f.type} fact but does not declare it in provides")
        if f.type in new:
            raise KernelError("DUPLICATE_FACT", (capability.ref, str(f.type)),
                              f"{capability.ref} returned two {f.type} facts")
        new[f.type] = f
    known = {f.type for f in facts.values()}
    invalidated = {t for t in capability.invalidates if t in known and t not in new}
    # a fact established again as it was (same value, evidence and dependencies) changes nothing:
    # what was derived from it stays
    same = {t for t in new if facts.get(str(t)) == new[t] and t not in capability.invalidates}
    for t in same:
        del new[t]
    replaced = {t for t in new if t in known}
    stale = stale_closure(facts, invalidated | replaced | set(capability.invalidates)) - set(new)
    removed = invalidated | stale
    kept = dict(facts) if not removed else {key: f for key, f in facts.items() if f.type not in removed}
    kept.update((str(t), f) for t, f in new.items())
    return Reduction(FrozenDict(kept), tuple(sorted(set(new) - replaced)), tuple(sorted(replaced)),
                     tuple(sorted(removed)))
