"""Property: whatever the sequence of reservations, actual costs and interleaving of concurrent
calls, the budget admits a call exactly when ``spent + reserved < ceiling`` (for a positive
reservation), its ledger matches an exact Decimal oracle, and the committed total (settled spend
plus in-flight reservations) never passes the ceiling by more than one reservation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

from budget_fakes import PRICE, request
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seamkit._middleware import Call, chain
from seamkit.errors import BudgetExceeded
from seamkit.testing import make_test_ctx
from seamkit.values import ChatRequest, Delta, Usage
from seamkit_budget import BudgetMiddleware


class GatedModel:
    """Each stream waits until the test settles it with a cost."""

    provider = "fake"
    model = "gated"
    price = PRICE

    def __init__(self) -> None:
        self.waiting: list[tuple[asyncio.Event, list[Decimal]]] = []

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        gate, cost = asyncio.Event(), []
        self.waiting.append((gate, cost))
        await gate.wait()
        yield Delta(text="x")
        yield Delta(finish_reason="stop", usage=Usage(1, 1, requests=1, cost=cost[0], cost_source="reported"))


def _terminal(call: Call) -> AsyncIterator[Any]:
    return call.model.stream(call.request)  # type: ignore[no-any-return]


start = st.tuples(st.just("start"), st.integers(1, 4000), st.integers(0, 100))
finish = st.tuples(st.just("finish"), st.integers(0, 1000), st.just(0))
ops_strategy = st.lists(st.one_of(start, start, finish), min_size=1, max_size=40)
ceilings = st.decimals(min_value=Decimal("0.0001"), max_value=Decimal("0.02"), places=6)


async def _play(ceiling: Decimal, ops: list[tuple[str, int, int]]) -> None:
    mw = BudgetMiddleware(ceiling)
    nxt = chain([mw], _terminal, kind="chat")
    model = GatedModel()
    ctx = make_test_ctx()
    spent = reserved = Decimal(0)
    in_flight: list[tuple[asyncio.Task[list[Delta]], asyncio.Event, list[Decimal], Decimal, int]] = []
    biggest = Decimal(0)

    async def consume(req: ChatRequest) -> list[Delta]:
        return [d async for d in nxt(Call("chat", req, ctx, model=model))]

    for kind, a, pct in ops:
        if kind == "start":
            req = request(max_tokens=a)
            needed = mw.reservation(req, PRICE)
            expect_admit = spent + reserved < ceiling
            before = len(model.waiting)
            task = asyncio.create_task(consume(req))
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            if task.done():
                assert isinstance(task.exception(), BudgetExceeded)
                assert not expect_admit
                exc = task.exception()
                assert isinstance(exc, BudgetExceeded)
                assert (exc.spent, exc.reserved, exc.needed, exc.ceiling) == (spent, reserved, needed, ceiling)
                continue
            assert expect_admit and len(model.waiting) == before + 1
            gate, cost = model.waiting[-1]
            reserved += needed
            biggest = max(biggest, needed)
            in_flight.append((task, gate, cost, needed, pct))
        elif in_flight:
            task, gate, cost, needed, pct = in_flight.pop(a % len(in_flight))
            actual = needed * pct / 100
            cost.append(actual)
            gate.set()
            await task
            reserved -= needed
            spent += actual
        view = mw.ledger(ctx.run_id)
        assert (view.spent, view.reserved) == (spent, reserved)
        # the committed total passes the ceiling by less than one reservation
        assert view.spent + view.reserved < ceiling + biggest or view.spent + view.reserved <= ceiling
    for task, gate, cost, needed, _ in in_flight:
        cost.append(needed)
        gate.set()
        await task
        spent += needed
    view = mw.ledger(ctx.run_id)
    assert (view.spent, view.reserved, view.in_flight) == (spent, 0, 0)
    assert spent < ceiling + biggest or spent == 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ceilings, ops_strategy)
def test_admission_matches_the_exact_oracle_and_never_overshoots_by_more_than_one_reservation(
    ceiling: Decimal, ops: list[tuple[str, int, int]]
) -> None:
    asyncio.run(_play(ceiling, ops))


@settings(max_examples=60, deadline=None)
@given(ceilings, st.lists(st.integers(1, 4000), min_size=1, max_size=30))
def test_all_at_once_dispatched_reservations_stay_within_ceiling_plus_one(
    ceiling: Decimal, max_tokens: list[int]
) -> None:
    async def main() -> None:
        mw = BudgetMiddleware(ceiling)
        nxt = chain([mw], _terminal, kind="chat")
        model = GatedModel()
        ctx = make_test_ctx()
        reqs = [request(max_tokens=m) for m in max_tokens]

        async def consume(req: ChatRequest) -> list[Delta]:
            return [d async for d in nxt(Call("chat", req, ctx, model=model))]

        tasks = [asyncio.create_task(consume(r)) for r in reqs]
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        admitted = [mw.reservation(r, PRICE) for r, t in zip(reqs, tasks, strict=True) if not t.done()]
        assert len(admitted) == len(model.waiting) >= 1
        total = sum(admitted, Decimal(0))
        assert total - admitted[-1] < ceiling  # every admission saw room under the ceiling
        assert total < ceiling + max(admitted)
        for gate, cost in model.waiting:
            cost.append(Decimal(0))
            gate.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        assert mw.ledger(ctx.run_id).reserved == 0

    asyncio.run(main())


# A small run tree: root <- c1 <- g, root <- c2. The middleware learns a run's parent when that run
# first calls through it, so the oracle links a run only then too.
TREE = {"run_root": None, "run_c1": "run_root", "run_c2": "run_root", "run_g": "run_c1"}
tree_start = st.tuples(st.just("start"), st.sampled_from(sorted(TREE)), st.integers(1, 4000), st.integers(0, 100))
tree_finish = st.tuples(st.just("finish"), st.just(""), st.integers(0, 1000), st.just(0))


async def _play_tree(ceiling: Decimal, ops: list[tuple[str, str, int, int]]) -> None:
    mw = BudgetMiddleware(ceiling)
    nxt = chain([mw], _terminal, kind="chat")
    model = GatedModel()
    known: dict[str, str | None] = {}
    own_spent = dict.fromkeys(TREE, Decimal(0))
    own_reserved = dict.fromkeys(TREE, Decimal(0))
    in_flight: list[tuple[asyncio.Task[list[Delta]], list[Decimal], asyncio.Event, Decimal, int, str]] = []

    def chain_of(run: str) -> list[str]:
        out = [run]
        while known.get(out[-1]) is not None:
            out.append(known[out[-1]])  # type: ignore[arg-type]
        return out

    def subtree(run: str) -> tuple[Decimal, Decimal]:
        members = [r for r in TREE if run in chain_of(r)]
        return sum((own_spent[r] for r in members), Decimal(0)), sum((own_reserved[r] for r in members), Decimal(0))

    async def consume(run: str, req: ChatRequest) -> list[Delta]:
        ctx = make_test_ctx(run_id=run, parent_run_id=TREE[run])
        return [d async for d in nxt(Call("chat", req, ctx, model=model))]

    for kind, run, a, pct in ops:
        if kind == "start":
            known[run] = TREE[run]
            req = request(max_tokens=a)
            needed = mw.reservation(req, PRICE)
            blocking = [r for r in chain_of(run) if sum(subtree(r)) >= ceiling]
            task = asyncio.create_task(consume(run, req))
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            if task.done():
                exc = task.exception()
                assert isinstance(exc, BudgetExceeded) and blocking
                assert exc.run_id == blocking[0]
                continue
            assert not blocking
            gate, cost = model.waiting[-1]
            own_reserved[run] += needed
            in_flight.append((task, cost, gate, needed, pct, run))
        elif in_flight:
            task, cost, gate, needed, pct, run = in_flight.pop(a % len(in_flight))
            cost.append(needed * pct / 100)
            gate.set()
            await task
            own_reserved[run] -= needed
            own_spent[run] += needed * pct / 100
        for r in TREE:
            view = mw.ledger(r)
            assert (view.spent, view.reserved) == subtree(r), r
    for task, cost, gate, _needed, _pct, _run in in_flight:
        cost.append(Decimal(0))
        gate.set()
        await task


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ceilings, st.lists(st.one_of(tree_start, tree_start, tree_finish), min_size=1, max_size=40))
def test_child_run_ledgers_match_the_oracle_in_any_order(
    ceiling: Decimal, ops: list[tuple[str, str, int, int]]
) -> None:
    asyncio.run(_play_tree(ceiling, ops))
