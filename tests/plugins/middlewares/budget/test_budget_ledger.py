"""The budget middleware's ledger: reservations, admission under concurrency, settlement,
child runs, unpriced and local models, Decimal exactness."""

from __future__ import annotations

import asyncio
import threading
from contextlib import aclosing
from decimal import Decimal

import pytest
from budget_fakes import PRICE, LocalModel, PricedModel, request, runner, terminal, warnings_of
from seamkit._agent.agent import Agent
from seamkit._middleware import Call, chain
from seamkit._pricing import MILLION, Price
from seamkit._tokens import estimate_tokens
from seamkit._tools import tool
from seamkit.errors import BudgetExceeded, ProviderError
from seamkit.testing import make_test_ctx
from seamkit.values import Delta, Usage
from seamkit_budget import BudgetMiddleware

REQ = request()
RESERVATION = (estimate_tokens(REQ) * PRICE.input + 1000 * PRICE.output) / MILLION


def test_reservation_is_input_estimate_plus_max_tokens_at_exact_prices() -> None:
    mw = BudgetMiddleware("1")
    assert mw.reservation(REQ, PRICE) == RESERVATION
    assert isinstance(mw.reservation(REQ, PRICE), Decimal)
    no_max = request(max_tokens=None)
    mw2 = BudgetMiddleware("1", default_max_tokens=500)
    assert mw2.reservation(no_max, PRICE) == (estimate_tokens(no_max) * 1 + 500 * 2) / MILLION
    # a cache-write price above the input price is what a prompt may be billed at
    cw = Price(Decimal("3"), Decimal("15"), Decimal("0.30"), Decimal("3.75"))
    assert mw.reservation(REQ, cw) == (estimate_tokens(REQ) * Decimal("3.75") + 1000 * 15) / MILLION


async def test_twenty_concurrent_calls_against_one_and_a_half_calls_worth_dispatch_two() -> None:
    ceiling = RESERVATION * Decimal("1.5")
    mw = BudgetMiddleware(ceiling)
    model = PricedModel(cost=RESERVATION, delay=0.05)
    run = runner(mw)
    ctx = make_test_ctx()
    results = await asyncio.gather(*(run(model, ctx=ctx) for _ in range(20)), return_exceptions=True)
    refused = [r for r in results if isinstance(r, BudgetExceeded)]
    done = [r for r in results if isinstance(r, list)]
    assert model.dispatched == 2 and model.max_in_flight == 2
    assert len(done) == 2 and len(refused) == 18
    for exc in refused:
        assert exc.ceiling == ceiling
        assert exc.spent == 0
        assert exc.reserved == 2 * RESERVATION
        assert exc.needed == RESERVATION
        assert exc.run_id == ctx.run_id
        assert "was not sent" in str(exc)
    view = mw.ledger(ctx.run_id)
    assert (view.spent, view.reserved, view.in_flight) == (2 * RESERVATION, 0, 0)
    assert (view.calls, view.refused) == (2, 18)
    # the ceiling was passed by less than one reservation
    assert view.spent < ceiling + RESERVATION


async def test_settlement_releases_the_reservation_and_charges_the_actual_cost() -> None:
    quarter = RESERVATION / 4
    mw = BudgetMiddleware(RESERVATION * Decimal("1.5"))
    model = PricedModel(cost=quarter)
    run = runner(mw)
    ctx = make_test_ctx()
    # two in flight at once fill the ceiling...
    first = await asyncio.gather(*(run(model, ctx=ctx) for _ in range(3)), return_exceptions=True)
    assert sum(isinstance(r, BudgetExceeded) for r in first) == 1
    assert mw.ledger(ctx.run_id).spent == 2 * quarter
    assert mw.ledger(ctx.run_id).reserved == 0
    # ...but once settled at a quarter of their reservation, later calls are admitted again
    admitted = 2
    while True:
        try:
            await run(model, ctx=ctx)
        except BudgetExceeded as exc:
            assert exc.spent == admitted * quarter and exc.reserved == 0
            break
        admitted += 1
    assert admitted == 6  # 6 quarters = 1.5 reservations: the 7th is refused
    assert model.dispatched == 6


async def test_usage_without_cost_is_priced_with_the_model_price() -> None:
    mw = BudgetMiddleware("1")
    model = PricedModel(cost=None, input_tokens=1000, output_tokens=500)
    ctx = make_test_ctx()
    await runner(mw)(model, ctx=ctx)
    assert mw.ledger(ctx.run_id).spent == Decimal("0.002")  # 1000 * $1/M + 500 * $2/M


async def test_child_runs_charge_every_ancestor() -> None:
    mw = BudgetMiddleware("0.01")
    run = runner(mw)
    parent = make_test_ctx(run_id="run_parent")
    child = parent.child()
    grandchild = child.child()
    model = PricedModel(cost=Decimal("0.004"))
    await run(model, ctx=grandchild)
    await run(model, ctx=child)
    assert mw.ledger(grandchild.run_id).spent == Decimal("0.004")
    assert mw.ledger(child.run_id).spent == Decimal("0.008")
    assert mw.ledger(parent.run_id).spent == Decimal("0.008")
    assert mw.ledger(child.run_id).parent_run_id == parent.run_id
    await run(model, ctx=parent)  # 0.008 < 0.01: admitted
    assert mw.ledger(parent.run_id).spent == Decimal("0.012")
    assert mw.ledger(child.run_id).spent == Decimal("0.008")
    # the grandchild's own ledger has room, but its ancestors' do not
    with pytest.raises(BudgetExceeded) as info:
        await run(model, ctx=grandchild)
    assert info.value.run_id == parent.run_id
    assert info.value.spent == Decimal("0.012")
    assert "ancestor" in str(info.value)
    assert model.dispatched == 3
    assert mw.ledger(grandchild.run_id).refused == 1
    # a sibling run with no parent is not affected
    await run(model, ctx=make_test_ctx(run_id="run_other"))
    assert mw.ledger("run_other").spent == Decimal("0.004")


async def test_a_grandchild_is_charged_to_the_grandparent_even_if_its_parent_never_called() -> None:
    """Regression: ancestors used to be learnt only from each run's own calls, so a grandchild whose
    parent run never called a model was not charged to the grandparent."""
    mw = BudgetMiddleware("0.01")
    run = runner(mw)
    top = make_test_ctx(run_id="run_top")
    grandchild = top.child().child()
    assert grandchild.ancestors[-1] == "run_top" and len(grandchild.ancestors) == 2
    await run(PricedModel(cost=Decimal("0.004")), ctx=grandchild)
    assert mw.ledger("run_top").spent == Decimal("0.004")
    assert mw.ledger(grandchild.ancestors[0]).spent == Decimal("0.004")


async def test_concurrent_children_share_the_parents_ceiling() -> None:
    cost = RESERVATION
    mw = BudgetMiddleware(RESERVATION * Decimal("1.5"))
    model = PricedModel(cost=cost, delay=0.05)
    run = runner(mw)
    parent = make_test_ctx(run_id="run_parent")
    children = [parent.child() for _ in range(10)]
    results = await asyncio.gather(*(run(model, ctx=c) for c in children), return_exceptions=True)
    assert model.dispatched == 2
    refused = [r for r in results if isinstance(r, BudgetExceeded)]
    assert len(refused) == 8 and all(r.run_id == parent.run_id for r in refused)
    assert mw.ledger(parent.run_id).spent == 2 * cost


async def test_unpriced_model_is_refused_under_a_ceiling() -> None:
    mw = BudgetMiddleware("0.50")
    model = PricedModel(price=None, model="mystery-9")
    ctx = make_test_ctx()
    with pytest.raises(BudgetExceeded) as info:
        await runner(mw)(model, ctx=ctx)
    assert model.dispatched == 0
    assert info.value.needed is None and info.value.ceiling == Decimal("0.50")
    assert "mystery-9" in str(info.value) and "allow_unpriced" in str(info.value)
    assert mw.ledger(ctx.run_id).refused == 1


async def test_unpriced_model_allowed_is_warned_once_per_run_and_not_counted() -> None:
    mw = BudgetMiddleware("0.50", allow_unpriced=True)
    model = PricedModel(price=None, model="mystery-9", cost=None)
    run = runner(mw)
    ctx = make_test_ctx()
    first = await run(model, ctx=ctx)
    second = await run(model, ctx=ctx)
    assert model.dispatched == 2
    (w,) = warnings_of(first)
    assert "mystery-9" in w and "no known price" in w
    assert warnings_of(second) == []
    assert [d.text for d in first if d.text] == ["Paris"]
    view = mw.ledger(ctx.run_id)
    assert (view.spent, view.reserved, view.unpriced_calls) == (0, 0, 2)


async def test_local_models_are_free_even_when_the_ceiling_is_reached() -> None:
    mw = BudgetMiddleware("0.001")
    run = runner(mw)
    ctx = make_test_ctx()
    await run(PricedModel(cost=Decimal("0.002")), ctx=ctx)
    with pytest.raises(BudgetExceeded):
        await run(PricedModel(), ctx=ctx)
    local = LocalModel()
    deltas = await run(local, ctx=ctx)
    assert local.dispatched == 1 and warnings_of(deltas) == []
    assert mw.ledger(ctx.run_id).spent == Decimal("0.002")


async def test_a_zero_priced_model_is_always_admitted() -> None:
    mw = BudgetMiddleware("0.001")
    run = runner(mw)
    ctx = make_test_ctx()
    await run(PricedModel(cost=Decimal("0.002")), ctx=ctx)
    free = PricedModel(price=Price(Decimal(0), Decimal(0)), cost=Decimal(0))
    await run(free, ctx=ctx)
    assert free.dispatched == 1


async def test_decimal_amounts_add_exactly() -> None:
    mw = BudgetMiddleware("100")
    model = PricedModel(cost=Decimal("0.1"), delay=0)
    run = runner(mw)
    ctx = make_test_ctx()
    for _ in range(10):
        await run(model, ctx=ctx)
    spent = mw.ledger(ctx.run_id).spent
    assert type(spent) is Decimal and spent == Decimal("1.0")
    assert sum([0.1] * 10) != 1.0  # what a float ledger would have got wrong
    view = mw.ledger(ctx.run_id)
    assert all(type(v) is Decimal for v in (view.spent, view.reserved, view.ceiling, view.remaining))
    assert view.remaining == Decimal("99.0")


def test_floats_and_bad_ceilings_are_refused() -> None:
    with pytest.raises(ValueError, match="inexact"):
        BudgetMiddleware(0.5)  # type: ignore[arg-type]
    for bad in ("-1", "0", "abc", "NaN", "Infinity"):
        with pytest.raises(ValueError):
            BudgetMiddleware(bad)
    assert BudgetMiddleware(2).ceiling == Decimal(2)


async def test_failure_before_any_token_charges_nothing() -> None:
    mw = BudgetMiddleware("1")
    ctx = make_test_ctx()
    with pytest.raises(ProviderError):
        await runner(mw)(PricedModel(fail="before"), ctx=ctx)
    view = mw.ledger(ctx.run_id)
    assert (view.spent, view.reserved, view.in_flight, view.calls) == (0, 0, 0, 1)


async def test_failure_after_a_token_keeps_the_reservation_as_the_charge() -> None:
    mw = BudgetMiddleware("1")
    ctx = make_test_ctx()
    with pytest.raises(ProviderError):
        await runner(mw)(PricedModel(fail="after_text"), ctx=ctx)
    view = mw.ledger(ctx.run_id)
    assert (view.spent, view.reserved, view.in_flight) == (RESERVATION, 0, 0)


async def test_failure_after_partial_usage_still_charges_at_least_the_reservation() -> None:
    mw = BudgetMiddleware("1")
    ctx = make_test_ctx()
    with pytest.raises(ProviderError):
        await runner(mw)(PricedModel(fail="after_partial_usage"), ctx=ctx)
    assert mw.ledger(ctx.run_id).spent == RESERVATION


async def test_cancellation_after_a_token_charges_the_reservation_before_none() -> None:
    mw = BudgetMiddleware("1")
    nxt = chain([mw], terminal, kind="chat")
    ctx = make_test_ctx()
    gate = asyncio.Event()
    model = PricedModel(gate=gate)

    async def consume(started: asyncio.Event) -> None:
        async with aclosing(nxt(Call("chat", REQ, ctx, model=model))) as stream:  # type: ignore[type-var]
            async for _ in stream:
                started.set()
                await asyncio.sleep(10)

    # cancelled while the model is still thinking: nothing was generated
    task = asyncio.create_task(consume(asyncio.Event()))
    await asyncio.sleep(0.01)
    assert mw.ledger(ctx.run_id).reserved == RESERVATION
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (mw.ledger(ctx.run_id).spent, mw.ledger(ctx.run_id).reserved) == (0, 0)
    # cancelled after the first token: charged the reservation
    gate.set()
    started = asyncio.Event()
    task = asyncio.create_task(consume(started))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (mw.ledger(ctx.run_id).spent, mw.ledger(ctx.run_id).reserved) == (RESERVATION, 0)


async def test_closing_the_stream_early_settles_it() -> None:
    mw = BudgetMiddleware("1")
    nxt = chain([mw], terminal, kind="chat")
    ctx = make_test_ctx()
    stream = nxt(Call("chat", REQ, ctx, model=PricedModel(delay=0)))
    first = await anext(stream)  # type: ignore[call-overload]
    assert first.text == "Paris"
    await stream.aclose()  # type: ignore[attr-defined]
    view = mw.ledger(ctx.run_id)
    assert (view.spent, view.reserved, view.in_flight) == (RESERVATION, 0, 0)


async def test_noteworthy_settlements_are_recorded_as_warnings() -> None:
    run = runner(BudgetMiddleware("1"))
    # an ordinary call records nothing
    assert warnings_of(await run(PricedModel())) == []
    # no usage reported: charged the reservation, and said so
    mw = BudgetMiddleware("1")
    ctx = make_test_ctx()
    (w,) = warnings_of(await runner(mw)(PricedModel(cost="none"), ctx=ctx))
    assert "reported no usage" in w and mw.ledger(ctx.run_id).spent == RESERVATION
    # actual cost above the reservation, which also reaches the ceiling
    mw = BudgetMiddleware("0.01")
    ctx = make_test_ctx()
    ws = warnings_of(await runner(mw)(PricedModel(cost=Decimal("0.02")), ctx=ctx))
    assert len(ws) == 2
    assert "above its" in ws[0] and "$0.02" in ws[0]
    assert "reaching its $0.01 ceiling" in ws[1]
    assert mw.ledger(ctx.run_id).spent == Decimal("0.02")


async def test_tool_calls_pass_through_untouched() -> None:
    mw = BudgetMiddleware("1")
    assert mw.kinds == frozenset({"chat"})
    # chain leaves it out of tool chains entirely
    async def tool_terminal(call: Call):  # type: ignore[no-untyped-def]
        yield "result"

    assert chain([mw], tool_terminal, kind="tool") is tool_terminal


async def test_agent_runs_keep_separate_ledgers_and_report_warnings() -> None:
    mw = BudgetMiddleware("0.001")
    model = PricedModel(cost=Decimal("0.002"), delay=0)
    agent = Agent(model, prompt="Be brief.", middlewares=[mw])
    result = await agent.run("capital of France?")
    assert result.output == "Paris"
    assert result.usage.cost == Decimal("0.002")
    assert any("reaching its $0.001 ceiling" in w for w in result.warnings)
    assert mw.ledger(result.run_id).spent == Decimal("0.002")
    again = await agent.run("and of Italy?")  # a new run: a fresh ledger
    assert again.run_id != result.run_id and mw.ledger(again.run_id).spent == Decimal("0.002")


async def test_agent_second_turn_is_refused_once_the_run_spent_its_ceiling() -> None:
    @tool(side_effecting=False)
    def look_up() -> str:
        """Look something up."""
        return "found"

    mw = BudgetMiddleware("0.001")
    model = PricedModel(cost=Decimal("0.002"), delay=0, tool_first="look_up")
    agent = Agent(model, tools=[look_up], middlewares=[mw])
    with pytest.raises(BudgetExceeded) as info:
        await agent.run("look it up")
    assert model.dispatched == 1  # the second model turn was never sent
    assert info.value.spent == Decimal("0.002") and info.value.ceiling == Decimal("0.001")


class _PlainStream:
    """An async iterator that is not an async generator (no ``aclose``)."""

    def __init__(self, deltas: list[Delta]) -> None:
        self._it = iter(deltas)

    def __aiter__(self) -> _PlainStream:
        return self

    async def __anext__(self) -> Delta:
        try:
            return next(self._it)
        except StopIteration:
            raise StopAsyncIteration from None


async def test_inner_streams_without_aclose_are_fine() -> None:
    mw = BudgetMiddleware("1")
    usage = Usage(10, 5, requests=1, cost=Decimal("0.00002"), cost_source="estimated")
    nxt = chain([mw], lambda call: _PlainStream([Delta(text="a"), Delta(finish_reason="stop", usage=usage)]))
    ctx = make_test_ctx()
    deltas = [d async for d in nxt(Call("chat", REQ, ctx, model=PricedModel()))]
    assert [d.text for d in deltas] == ["a", None]
    assert mw.ledger(ctx.run_id).spent == Decimal("0.00002")


async def test_unknown_runs_read_as_empty_and_idle_ledgers_are_bounded() -> None:
    mw = BudgetMiddleware("1", max_tracked_runs=3)
    view = mw.ledger("run_never")
    assert (view.spent, view.reserved, view.calls, view.remaining) == (0, 0, 0, Decimal(1))
    run = runner(mw)
    model = PricedModel(delay=0)
    for i in range(5):
        await run(model, ctx=make_test_ctx(run_id=f"run_{i}"))
    assert mw.ledger("run_4").calls == 1 and mw.ledger("run_2").calls == 1
    assert mw.ledger("run_0").calls == 0  # the least recently used idle ledger was dropped


def test_calls_from_several_threads_share_one_ledger_safely() -> None:
    ceiling = RESERVATION * Decimal("1.5")
    mw = BudgetMiddleware(ceiling)
    model = PricedModel(cost=RESERVATION, delay=0.1)
    barrier = threading.Barrier(8)
    outcomes: list[str] = []

    def worker() -> None:
        async def main() -> None:
            barrier.wait()
            try:
                await runner(mw)(model, ctx=make_test_ctx(run_id="run_shared"))
                outcomes.append("sent")
            except BudgetExceeded:
                outcomes.append("refused")

        asyncio.run(main())

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert sorted(outcomes) == ["refused"] * 6 + ["sent"] * 2
    assert model.dispatched == 2
    assert mw.ledger("run_shared").spent == 2 * RESERVATION


async def test_a_first_call_reserving_more_than_the_ceiling_is_admitted_and_the_next_refused() -> None:
    # the documented rule: admitted while spend + reservations < ceiling, so the ceiling is
    # overshot by at most one in-flight reservation, even by a first call alone
    ceiling = RESERVATION / 10
    mw = BudgetMiddleware(ceiling)
    model = PricedModel(cost=RESERVATION)
    ctx = make_test_ctx()
    await runner(mw)(model, ctx=ctx)
    with pytest.raises(BudgetExceeded):
        await runner(mw)(model, ctx=ctx)
    view = mw.ledger(ctx.run_id)
    assert model.dispatched == 1 and view.spent == RESERVATION > ceiling
    assert view.spent < ceiling + RESERVATION
