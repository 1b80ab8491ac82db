"""The budget middleware's shared mode, in one process: several middleware instances (standing
for several processes) over one store, whose every operation yields to the event loop as a real
store's round trip does. Admission under concurrency, refusals, child runs, rounding,
cancellation, store failures, releasing a dead process's reservations, configuration."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import textwrap
from collections.abc import Awaitable, Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from budget_fakes import PRICE, PricedModel, request, runner, warnings_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from seamkit._middleware import Call, chain
from seamkit._pricing import MILLION
from seamkit._tokens import estimate_tokens
from seamkit.composition import build_agent, loads_composition
from seamkit.errors import BudgetExceeded, StoreUnavailable
from seamkit.testing import make_test_ctx
from seamkit.testing._memory_store import MemoryStore
from seamkit.values import Delta, Scope, Usage
from seamkit_budget import BudgetMiddleware
from seamkit_budget.config import BudgetConfig
from seamkit_budget.shared import SharedLedger
from seamkit_budget.units import to_units

REQ = request()
RESERVATION = (estimate_tokens(REQ) * PRICE.input + 1000 * PRICE.output) / MILLION
TENANT = Scope("test")  # make_test_ctx's tenant


class RoundTripStore:
    """A MemoryStore whose every call first yields to the event loop (a network round trip), so
    concurrent calls interleave between any two store operations. ``fail`` names operations that
    raise StoreUnavailable; ``gate`` holds every ``increment`` until set."""

    def __init__(self) -> None:
        self.inner = MemoryStore()
        self.ttl_resolution = self.inner.ttl_resolution
        self.fail: set[str] = set()
        self.gate: asyncio.Event | None = None
        self.ops = 0

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        method = getattr(self.inner, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            await asyncio.sleep(0)
            if self.gate is not None and name == "increment":
                await self.gate.wait()
            if name in self.fail:
                raise StoreUnavailable(f"{name}: the store is down")
            self.ops += 1
            return await method(*args, **kwargs)

        return call


class StartedModel(PricedModel):
    """A priced fake that sets ``started`` when a stream begins (it is then in flight)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.started = asyncio.Event()

    async def stream(self, request: Any) -> Any:  # type: ignore[override]
        self.started.set()
        async for d in super().stream(request):
            yield d


def processes(store: Any, n: int, ceiling: Decimal | str, **kw: Any) -> list[BudgetMiddleware]:
    """``n`` middleware instances over one store: ``n`` processes' views of one shared ledger."""
    return [BudgetMiddleware(ceiling, store=store, **kw) for _ in range(n)]


async def test_concurrent_calls_from_several_processes_dispatch_one_and_a_half_reservations_worth() -> None:
    store = RoundTripStore()
    mws = processes(store, 4, RESERVATION * Decimal("1.5"), ledger="batch-1")
    model = PricedModel(cost=RESERVATION, delay=0.05)
    results = await asyncio.gather(*(runner(mws[i % 4])(model, ctx=make_test_ctx(run_id=f"run_{i}"))
                                     for i in range(20)), return_exceptions=True)
    refused = [r for r in results if isinstance(r, BudgetExceeded)]
    assert model.dispatched == 2 and len(refused) == 18
    assert all(isinstance(r, list | BudgetExceeded) for r in results)
    for exc in refused:
        assert (exc.ceiling, exc.needed, exc.run_id) == (RESERVATION * Decimal("1.5"), RESERVATION, "batch-1")
        assert exc.spent == 0 and exc.reserved >= 2 * RESERVATION  # a refused call's amount may still be in
        assert str(exc).startswith("budget: shared ledger batch-1 has spent $0 and reserved $")
        assert "was not sent" in str(exc)
    view = await mws[0].shared.view("batch-1", TENANT)  # type: ignore[union-attr]
    assert (view.spent, view.reserved, view.unattributed) == (2 * RESERVATION, 0, 0)
    assert len(view.holders) == 2 and all(h.reserved == 0 and h.pid == os.getpid() for h in view.holders)


async def test_a_run_tree_shares_its_root_runs_ledger_across_processes() -> None:
    store = RoundTripStore()
    here, there = processes(store, 2, RESERVATION * Decimal("2.5"))
    model = PricedModel(cost=RESERVATION, delay=0)
    root = make_test_ctx(run_id="run_root")
    child = root.child()
    grandchild = child.child()
    await runner(here)(model, ctx=root)
    await runner(there)(model, ctx=child)  # a child run on another worker
    await runner(there)(model, ctx=grandchild)
    other_grandchild = child.child()
    with pytest.raises(BudgetExceeded) as info:
        await runner(here)(model, ctx=other_grandchild)
    assert info.value.run_id == "run_root" and info.value.spent == 3 * RESERVATION
    assert str(info.value).startswith(f"budget: run run_root (an ancestor of run {other_grandchild.run_id}) "
                                      f"has spent ${3 * RESERVATION:f} and reserved $0 of its")
    assert here.shared_ledger_key(grandchild) == "run_root"
    # this process's own view of a run counts what it saw of it
    assert there.ledger(child.run_id).spent == 2 * RESERVATION and here.ledger(other_grandchild.run_id).refused == 1
    # a separate run tree has its own ledger
    await runner(here)(model, ctx=make_test_ctx(run_id="run_other"))


async def test_a_refusal_of_the_root_run_itself_names_it_plainly() -> None:
    (mw,) = processes(MemoryStore(), 1, "0.000001")
    model = PricedModel(cost=RESERVATION, delay=0)
    ctx = make_test_ctx(run_id="run_a")
    await runner(mw)(model, ctx=ctx)
    with pytest.raises(BudgetExceeded) as info:
        await runner(mw)(model, ctx=ctx)
    assert str(info.value) == (f"budget: run run_a has spent ${RESERVATION:f} and reserved $0 of its $0.000001 "
                               f"ceiling; the call to model fake:fake-1 needing ${RESERVATION:f} was not sent")


async def test_charges_are_rounded_up_to_whole_nano_dollars_and_the_ceiling_warning_is_given() -> None:
    (mw,) = processes(MemoryStore(), 1, "0.001", ledger="L")
    model = PricedModel(cost="0.0010000000001", delay=0)  # a tenth of a nano-dollar over
    deltas = await runner(mw)(model)
    view = await mw.shared.view("L", TENANT)  # type: ignore[union-attr]
    assert view.spent == Decimal("0.001000001")
    assert warnings_of(deltas) == ["budget: shared ledger L has spent $0.001000001, reaching its $0.001 ceiling; "
                                   "further model calls will be refused"]


async def test_a_cancelled_reservation_is_given_back() -> None:
    store = RoundTripStore()
    store.gate = asyncio.Event()
    (mw,) = processes(store, 1, "1", ledger="L")
    model = PricedModel(delay=0)
    task = asyncio.ensure_future(runner(mw)(model))
    await asyncio.sleep(0.01)  # the reservation is waiting on the store
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    store.gate.set()
    for _ in range(50):  # the shielded reservation completes, then its release
        await asyncio.sleep(0)
    view = await mw.shared.view("L", TENANT)  # type: ignore[union-attr]
    assert model.dispatched == 0
    assert (view.spent, view.reserved) == (0, 0)


async def test_a_stream_cancelled_after_content_is_charged_its_reservation() -> None:
    (mw,) = processes(MemoryStore(), 1, "1", ledger="L")
    model = PricedModel(delay=0)
    nxt = chain([mw], lambda call: call.model.stream(call.request), kind="chat")
    stream = nxt(Call("chat", REQ, make_test_ctx(), model=model))
    first = await anext(stream)
    assert first.text == "Paris"
    await stream.aclose()  # type: ignore[attr-defined]
    view = await mw.shared.view("L", TENANT)  # type: ignore[union-attr]
    assert (view.spent, view.reserved) == (RESERVATION, 0)


async def test_a_store_failure_at_settlement_leaves_the_reservation_held_and_says_so() -> None:
    store = RoundTripStore()
    (mw,) = processes(store, 1, "1", ledger="L")
    model = StartedModel(cost="0.0001", delay=0)
    store.fail = {"increment"}
    with pytest.raises(StoreUnavailable):  # no reservation could be taken: nothing is sent
        await runner(mw)(model)
    assert model.dispatched == 0
    store.fail = set()
    gate = asyncio.Event()
    model.gate = gate
    task = asyncio.ensure_future(runner(mw)(model))
    await model.started.wait()
    store.fail = {"increment"}  # the store goes down while the call is in flight
    gate.set()
    deltas = await task
    store.fail = set()
    assert warnings_of(deltas) == [f"budget: the shared ledger L could not be settled (StoreUnavailable); the call's "
                                   f"${RESERVATION:f} reservation stays held there"]
    view = await mw.shared.view("L", TENANT)  # type: ignore[union-attr]
    assert (view.spent, view.reserved) == (0, RESERVATION)
    (holder,) = view.holders
    assert holder.owner == mw.shared.owner and holder.reserved == RESERVATION  # type: ignore[union-attr]
    assert await mw.shared.release_dead("L", TENANT) == {}  # type: ignore[union-attr]  # this process is alive
    assert await mw.shared.release("L", holder.owner, TENANT) == RESERVATION  # type: ignore[union-attr]
    view = await mw.shared.view("L", TENANT)  # type: ignore[union-attr]
    assert (view.spent, view.reserved, view.holders[0].reserved) == (0, 0, 0)


HOLDER = textwrap.dedent("""\
    import asyncio, sys
    from seamkit.values import Scope
    from seamkit_sqlite.store import SqliteStore
    from seamkit_budget.shared import SharedLedger

    async def main():
        ledger = SharedLedger(SqliteStore(sys.argv[1]))
        assert await ledger.reserve(Scope(), "L", 7_000, 10**9) is None
        print(ledger.owner, flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main())
    """)


async def test_the_reservations_of_a_killed_process_are_found_and_released(tmp_path: Path) -> None:
    from seamkit_sqlite.store import SqliteStore

    db = str(tmp_path / "b.db")
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", HOLDER, db, stdout=asyncio.subprocess.PIPE)
    try:
        assert proc.stdout is not None
        owner = (await proc.stdout.readline()).decode().strip()
    finally:
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
    store = SqliteStore(db)
    try:
        ledger = SharedLedger(store)
        view = await ledger.view("L")
        assert view.reserved == Decimal("0.000007")  # held by the dead process: calls are refused sooner
        assert [(h.owner, h.pid, h.reserved) for h in view.holders] == [(owner, proc.pid, Decimal("0.000007"))]
        assert await ledger.release_dead("L") == {owner: Decimal("0.000007")}
        assert (await ledger.view("L")).reserved == 0
        assert await ledger.release_dead("L") == {}  # released once only
    finally:
        await store.aclose()


def test_config_shapes_and_errors() -> None:
    cfg = BudgetConfig.model_validate({"max_cost_usd": "5", "store": {"use": "redis", "url": "redis://h"},
                                       "ledger": "batch-2026-12"})
    assert cfg.store is not None and cfg.store.use == "redis" and cfg.ledger == "batch-2026-12"
    assert BudgetConfig.model_validate({"max_cost_usd": "5", "store": "sqlite"}).store.use == "sqlite"  # type: ignore[union-attr]
    with pytest.raises(ValidationError, match="set store too"):
        BudgetConfig(max_cost_usd="5", ledger="x")
    with pytest.raises(ValidationError, match="9 decimal places"):
        BudgetConfig.model_validate({"max_cost_usd": "0.0000000001", "store": "memory"})
    with pytest.raises(ValidationError, match="ledger"):
        BudgetConfig.model_validate({"max_cost_usd": "5", "store": "memory", "ledger": "has space"})
    with pytest.raises(ValueError, match="needs a store"):
        BudgetMiddleware("1", ledger="x")
    with pytest.raises(ValueError, match="9 decimal places"):
        BudgetMiddleware("0.0000000001", store=MemoryStore())


async def test_yaml_builds_a_shared_budget_whose_repr_shows_no_secret() -> None:
    comp = loads_composition(textwrap.dedent("""\
        seamkit: 1
        agent:
          name: budgeted
          model: {use: scripted, turns: [hello]}
          checkpoints: null
          middlewares:
            - {use: budget, max_cost_usd: "0.50", store: {use: memory}, ledger: batch-2026-12}
        """))
    (mw,) = build_agent(comp).middlewares
    assert isinstance(mw, BudgetMiddleware) and mw.ledger_key == "batch-2026-12"
    assert isinstance(mw.shared.store, MemoryStore)  # type: ignore[union-attr]
    assert repr(mw).endswith("store=MemoryStore, ledger=batch-2026-12)")
    redis = BudgetMiddleware("1", store=type("RedisStore", (), {"url": "redis://:hunter2@h"})())
    assert "hunter2" not in repr(redis) and "ledger=<root run>" in repr(redis)
    assert json.dumps(str(mw))  # printable


async def test_in_process_mode_touches_no_store() -> None:
    mw = BudgetMiddleware("1")
    assert mw.shared is None
    deltas = await runner(mw)(PricedModel(delay=0))
    assert isinstance(deltas[0], Delta) and mw.ledger("run_test").spent == Decimal("0.001")


async def test_a_ledger_no_longer_used_can_be_deleted() -> None:
    store = MemoryStore()
    (mw,) = processes(store, 1, "1", ledger="L")
    await runner(mw)(PricedModel(delay=0))
    ledger = SharedLedger(store)
    assert (await ledger.view("L", TENANT)).spent == Decimal("0.001")
    assert await ledger.delete("L", TENANT) is True
    view = await ledger.view("L", TENANT)
    assert (view.spent, view.reserved, view.holders) == (0, 0, ())
    assert await ledger.delete("L", TENANT) is False


class GatedModel:
    """Each stream reports its arrival, then waits until the test settles it with a cost."""

    provider = "fake"
    model = "gated"
    price = PRICE

    def __init__(self) -> None:
        self.waiting: list[tuple[asyncio.Event, list[Decimal], Decimal]] = []
        self.arrived = asyncio.Event()

    async def stream(self, request: Any) -> Any:
        gate, cost = asyncio.Event(), []  # type: ignore[var-annotated]
        self.waiting.append((gate, cost, request.max_tokens))
        self.arrived.set()
        await gate.wait()
        yield Delta(text="x")
        yield Delta(finish_reason="stop", usage=Usage(1, 1, requests=1, cost=cost[0], cost_source="reported"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.decimals(min_value=Decimal("0.0001"), max_value=Decimal("0.02"), places=6),
       st.lists(st.tuples(st.integers(1, 4000), st.integers(0, 2), st.integers(0, 100)), min_size=1, max_size=24))
def test_calls_started_at_once_on_three_processes_stay_within_the_ceiling_plus_one_reservation(
    ceiling: Decimal, calls: list[tuple[int, int, int]]
) -> None:
    async def main() -> None:
        store = RoundTripStore()
        mws = processes(store, 3, ceiling, ledger="P")
        model = GatedModel()
        refused: list[BudgetExceeded] = []

        async def consume(mw: BudgetMiddleware, max_tokens: int) -> None:
            nxt = chain([mw], lambda call: call.model.stream(call.request), kind="chat")
            try:
                async for _ in nxt(Call("chat", request(max_tokens=max_tokens), make_test_ctx(), model=model)):
                    pass
            except BudgetExceeded as exc:
                refused.append(exc)
                model.arrived.set()

        tasks = [asyncio.create_task(consume(mws[i], m)) for m, i, _ in calls]
        while len(model.waiting) + len(refused) < len(calls):  # every call admitted (at the model) or refused
            model.arrived.clear()
            await model.arrived.wait()
        admitted = [to_units(mws[0].reservation(request(max_tokens=m), PRICE)) for _, _, m in model.waiting]
        assert admitted  # the first call always finds the ledger empty
        assert sum(admitted) < to_units(ceiling) + max(admitted)
        charges = []
        pcts = iter(p for _, _, p in calls)
        for gate, cost, max_tokens in model.waiting:
            charge = mws[0].reservation(request(max_tokens=max_tokens), PRICE) * next(pcts) / 100
            charges.append(to_units(charge))
            cost.append(charge)
            gate.set()
        await asyncio.gather(*tasks)
        view = await SharedLedger(store).view("P", TENANT)  # type: ignore[arg-type]
        assert to_units(view.spent) == sum(charges) and view.reserved == 0
        assert all(h.reserved == 0 for h in view.holders)

    asyncio.run(main())
