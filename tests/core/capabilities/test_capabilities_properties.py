"""Property tests: on random capability graphs the compiler's verdict matches an independent check
written here (providers counted, set logic for missing and mismatched facts, cycles from the
transitive closure of the provider graph by Floyd-Warshall), and order, fingerprint and problems do
not depend on the registration order."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seamkit.capabilities import Capability, CompileError, Completed, FactType, compile_agent

FACTS = [FactType(name, version) for name in ("order", "user", "cart", "receipt") for version in (1, 2)]
IDS = [f"c{i}" for i in range(8)]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


async def _execute(ctx: Any, input: Any) -> Completed:
    return Completed()


def _cap(id: str, requires: Any, provides: Any, version: int = 1, effect: str = "none",
         confirmation: str = "none") -> Capability:
    return Capability(id, version, f"{id} does things", _execute, input={"type": "object"}, requires=tuple(requires),
                      provides=tuple(provides), effect=effect, confirmation=confirmation)  # type: ignore[arg-type]


facts = st.lists(st.sampled_from(FACTS), max_size=3)


@st.composite
def graphs(draw: st.DrawFn) -> list[Capability]:
    """Capabilities with distinct ids and random requires/provides over a small fact alphabet."""
    ids = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=7, unique=True))
    return [_cap(i, draw(facts), draw(st.lists(st.sampled_from(FACTS), max_size=2))) for i in ids]


@st.composite
def dags(draw: st.DrawFn) -> list[Capability]:
    """Capabilities that compile: each fact type has at most one provider and a capability requires
    only facts provided by capabilities built before it (returned in a random order)."""
    ids = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=8, unique=True))
    free = list(FACTS)
    provided: list[FactType] = []
    caps = []
    for i in ids:
        requires = draw(st.lists(st.sampled_from(provided), max_size=3)) if provided else []
        provides = draw(st.lists(st.sampled_from(free), max_size=2, unique=True)) if free else []
        free = [f for f in free if f not in provides]
        provided += provides
        caps.append(_cap(i, requires, provides))
    return draw(st.permutations(caps))


def expected_problems(caps: list[Capability]) -> set[tuple[str, tuple[str, ...]]]:
    """The graph problems, computed independently of the compiler."""
    out: set[tuple[str, tuple[str, ...]]] = set()
    providers = {f: sorted(c.ref for c in caps if f in c.provides) for f in FACTS}
    for f, refs in providers.items():
        if len(refs) > 1:
            out.add(("AMBIGUOUS_FACT_PROVIDER", (str(f), *refs)))
    for c in caps:
        for f in set(c.requires):
            if providers[f]:
                continue
            others = sorted({r for g in FACTS if g.name == f.name for r in providers[g]})
            if others:
                out.add(("FACT_VERSION_MISMATCH", (c.ref, str(f), *others)))
            else:
                out.add(("MISSING_FACT_PROVIDER", (c.ref, str(f))))
    n = len(caps)
    reach = [[bool(set(caps[i].provides) & set(caps[j].requires)) for j in range(n)] for i in range(n)]
    for k, i, j in itertools.product(range(n), repeat=3):  # Floyd-Warshall: k is the outer loop
        reach[i][j] = reach[i][j] or (reach[i][k] and reach[k][j])
    cyclic = [i for i in range(n) if reach[i][i]]
    for i in cyclic:
        members = tuple(sorted(caps[j].ref for j in cyclic if reach[i][j] and reach[j][i]))
        out.add(("CAPABILITY_DEPENDENCY_CYCLE", members))
    return out


def verdict(caps: list[Capability]) -> tuple[str, Any]:
    try:
        agent = compile_agent(caps)
    except CompileError as exc:
        return "error", exc.problems
    return "ok", (agent.order, agent.fingerprint, dict(agent.providers))


@SETTINGS
@given(graphs())
def test_verdict_matches_an_independent_check(caps: list[Capability]) -> None:
    want = expected_problems(caps)
    kind, result = verdict(caps)
    if want:
        assert kind == "error"
        got = [(p.code, p.ids) for p in result]
        assert len(got) == len(set(got))  # each problem once
        assert set(got) == want
    else:
        assert kind == "ok"


@SETTINGS
@given(graphs().flatmap(lambda caps: st.tuples(st.just(caps), st.permutations(caps))))
def test_verdict_does_not_depend_on_registration_order(pair: tuple[list[Capability], list[Capability]]) -> None:
    caps, shuffled = pair
    assert verdict(caps) == verdict(list(shuffled))


def _is_smallest_topological_order(order: tuple[str, ...], caps: list[Capability]) -> bool:
    by_id = {c.id: c for c in caps}
    needs = {c.id: {p.id for p in caps if set(p.provides) & set(c.requires)} for c in caps}
    done: set[str] = set()
    for cid in order:
        ready = [i for i in by_id if i not in done and needs[i] <= done]
        if cid != min(ready):  # a provider before its consumers, ties by id
            return False
        done.add(cid)
    return done == set(by_id)


@SETTINGS
@given(dags().flatmap(lambda caps: st.tuples(st.just(caps), st.permutations(caps))))
def test_compiling_graphs_have_a_permutation_invariant_topological_order(
    pair: tuple[list[Capability], list[Capability]],
) -> None:
    caps, shuffled = pair
    assert expected_problems(caps) == set()
    agent, again = compile_agent(caps), compile_agent(list(shuffled))
    assert again.order == agent.order
    assert again.fingerprint == agent.fingerprint
    assert again.providers == agent.providers
    position = {cid: k for k, cid in enumerate(agent.order)}
    for c in caps:
        for f in c.requires:
            assert position[agent.providers[str(f)]] < position[c.id]
    assert _is_smallest_topological_order(agent.order, caps)


@st.composite
def messy_agents(draw: st.DrawFn) -> list[Capability]:
    """Anything goes: repeated ids, several versions, effects and confirmations."""
    n = draw(st.integers(1, 7))
    return [
        _cap(draw(st.sampled_from(IDS[:4])), draw(facts), draw(st.lists(st.sampled_from(FACTS), max_size=2)),
             version=draw(st.integers(0, 2)), effect=draw(st.sampled_from(["none", "read", "write"])),
             confirmation=draw(st.sampled_from(["none", "required"])))
        for _ in range(n)
    ]


@SETTINGS
@given(messy_agents().flatmap(lambda caps: st.tuples(st.just(caps), st.permutations(caps))))
def test_problems_with_duplicates_do_not_depend_on_registration_order(
    pair: tuple[list[Capability], list[Capability]],
) -> None:
    caps, shuffled = pair
    assert verdict(caps) == verdict(list(shuffled))
