"""The fact reducer (``seamkit.capabilities._reducer``): replacement, invalidation, transitive
staleness, refusals, and a property test against an independent closure."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seamkit._durability.codec import dumps, loads
from seamkit.capabilities import Capability, Completed, Fact, FactType, KernelError, fact_type, reduce_facts


async def _noop(ctx: Any, value: Any) -> Completed:
    return Completed()


def cap(provides: tuple[str, ...] = (), invalidates: tuple[str, ...] = ()) -> Capability:
    return Capability("c", 1, "a capability", _noop, input={"type": "object"}, provides=provides,
                      invalidates=invalidates)


def state(*facts: Fact) -> dict[str, Fact]:
    return {str(f.type): f for f in facts}


A, B, C, D = (fact_type(n) for n in ("a@1", "b@1", "c@1", "d@1"))


def test_a_new_fact_replaces_the_old_one_and_its_dependents_go_stale_transitively() -> None:
    facts = state(Fact(A, 1), Fact(B, 2, depends_on=(A,)), Fact(C, 3, depends_on=(B,)), Fact(D, 4))
    r = reduce_facts(facts, cap(provides=("a@1",)), Completed(facts=(Fact(A, 10),)))
    assert (r.added, r.replaced, r.removed) == ((), (A,), (B, C))
    assert dict(r.facts) == state(Fact(A, 10), Fact(D, 4))


def test_invalidates_removes_the_fact_and_what_depends_on_it() -> None:
    facts = state(Fact(A, 1), Fact(B, 2, depends_on=(A,)), Fact(D, 4))
    r = reduce_facts(facts, cap(invalidates=("a@1",)), Completed())
    assert (r.added, r.replaced, r.removed) == ((), (), (A, B))
    assert list(r.facts) == ["d@1"]


def test_invalidating_an_absent_type_still_removes_its_dependents() -> None:
    facts = state(Fact(B, 2, depends_on=(A,)))
    r = reduce_facts(facts, cap(invalidates=("a@1",)), Completed())
    assert r.removed == (B,) and not r.facts


def test_a_new_fact_depending_on_a_replaced_one_is_kept() -> None:
    facts = state(Fact(A, 1), Fact(B, 2, depends_on=(A,)))
    r = reduce_facts(facts, cap(provides=("a@1", "b@1")),
                     Completed(facts=(Fact(A, 10), Fact(B, 20, depends_on=(A,)))))
    assert (r.replaced, r.removed) == ((A, B), ())
    assert r.facts["b@1"].value == 20


def test_an_undeclared_or_duplicate_fact_is_refused_with_a_code() -> None:
    with pytest.raises(KernelError) as info:
        reduce_facts({}, cap(provides=("a@1",)), Completed(facts=(Fact(B, 1),)))
    assert (info.value.code, info.value.ids) == ("UNDECLARED_FACT", ("c@1", "b@1"))
    with pytest.raises(KernelError) as info:
        reduce_facts({}, cap(provides=("a@1",)), Completed(facts=(Fact(A, 1), Fact(A, 2))))
    assert info.value.code == "DUPLICATE_FACT"


def test_the_state_round_trips_through_the_checkpoint_codec() -> None:
    r = reduce_facts({}, cap(provides=("a@1", "b@1")),
                     Completed(facts=(Fact(A, {"id": 7, "tags": ["x"]}, evidence=("ev1",)),
                                      Fact(B, 2, depends_on=(A,)))))
    back = loads(dumps(r.facts))
    assert back == r.facts and type(back["a@1"]) is Fact and back["b@1"].depends_on == (A,)


NAMES = [FactType(n, 1) for n in "pqrstu"]


@st.composite
def scenarios(draw: Any) -> tuple[dict[str, Fact], Capability, Completed]:
    present = draw(st.lists(st.sampled_from(NAMES), unique=True))
    facts = state(*(Fact(t, i, depends_on=tuple(draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=3))))
                    for i, t in enumerate(present)))
    provides = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=3))
    invalidates = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=2))
    emitted = draw(st.lists(st.sampled_from(provides), unique=True)) if provides else []
    new = tuple(Fact(t, 100 + i, depends_on=tuple(draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=2))))
                for i, t in enumerate(emitted))
    capability = cap(provides=tuple(map(str, provides)), invalidates=tuple(map(str, invalidates)))
    return facts, capability, Completed(facts=new)


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_reduction_matches_an_independent_staleness_check(case: tuple[dict[str, Fact], Capability, Completed]) -> None:
    facts, capability, result = case
    r = reduce_facts(facts, capability, result)
    new = {f.type: f for f in result.facts}
    old = {f.type: f for f in facts.values()}
    changed = set(capability.invalidates) | (set(new) & set(old))
    # independent: a fact is stale when some chain of depends_on leads to a changed type
    def reaches(t: FactType, seen: frozenset[FactType] = frozenset()) -> bool:
        f = old.get(t)
        if f is None or t in seen:
            return False
        return any(d in changed or reaches(d, seen | {t}) for d in f.depends_on)

    expected_removed = {t for t in old if t not in new and (t in capability.invalidates or reaches(t))}
    assert set(r.removed) == expected_removed
    assert set(r.replaced) == set(new) & set(old)
    assert set(r.added) == set(new) - set(old)
    assert {f.type for f in r.facts.values()} == (set(old) - expected_removed) | set(new)
    for t, f in new.items():
        assert r.facts[str(t)] is f
    for f in r.facts.values():
        if f.type not in new:
            assert old[f.type] is f and not changed.intersection(f.depends_on)
