"""``memoize`` on the sqlite, redis and postgres stores: single-flight, replay as a stream, free
hits, TTL, and what is never cached."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest
from memo_fakes import CountingModel, request
from seamkit._accumulate import collect_result
from seamkit._middleware import Call, chain
from seamkit.errors import ProviderError
from seamkit.testing import make_test_ctx
from seamkit.values import Delta, Scope
from seamkit_budget.middleware import BudgetMiddleware
from seamkit_memoize.middleware import Memoize


def run(mws: list[Any], model: CountingModel, text: str = "What is 2 + 2?", tenant: str = "t1") -> Any:
    async def terminal(call: Call) -> Any:
        async for d in model.stream(call.request):  # type: ignore[arg-type]
            yield d

    nxt = chain(mws, terminal, kind="chat")
    ctx = make_test_ctx(scope=Scope(tenant))
    return nxt(Call("chat", request(text), ctx, model=model))


async def test_twenty_concurrent_identical_calls_run_the_provider_once(store: Any) -> None:
    model = CountingModel(tool=True)
    memo = Memoize(store, ttl=60)
    results = await asyncio.gather(*(collect_result(run([memo], model)) for _ in range(20)))
    assert model.calls == 1
    assert memo.misses == 1 and memo.hits == 19
    first = results[0]
    for r in results:
        assert r.text == "4" and r.finish_reason == "tool_calls" and r.model == "fake-1-2026"
        assert [(c.id, c.name, dict(c.arguments)) for c in r.tool_calls] == [("call_1", "calc", {"expr": "2+2"})]
        assert r.message.content[0].signature == "sig"  # type: ignore[union-attr]
    paid = [r for r in results if r.usage.cost_source == "reported"]
    free = [r for r in results if r.usage.cost_source == "cache"]
    assert len(paid) == 1 and paid[0].usage.cost == Decimal("0.001")
    assert len(free) == 19
    for r in free:
        u = r.usage
        assert u.cost == 0 and u.requests == 0
        assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.reasoning_tokens) == (120, 30, 20, 5)
    # a later call is a hit too, streamed as several deltas (text, tool call, finish)
    deltas = [d async for d in run([memo], model)]
    assert model.calls == 1
    assert any(d.text for d in deltas) and any(d.tool_call for d in deltas) and deltas[-1].finish_reason
    assert first.usage.cost == Decimal("0.001")


async def test_a_miss_streams_live_and_is_stored_once_complete(store: Any) -> None:
    hold = asyncio.Event()
    model = CountingModel(text="42", hold=hold, delay=0)
    memo = Memoize(store)
    stream = run([memo], model)
    # wait_for only turns a regression (the answer held back until complete: a deadlock) into a failure
    first = await asyncio.wait_for(anext(stream), 30)
    while not first.text:  # the reasoning delta comes first
        first = await asyncio.wait_for(anext(stream), 30)
    assert first.text == "4" and not hold.is_set()  # the provider has not finished its answer yet
    hold.set()
    rest = [d async for d in stream]
    assert "".join(d.text or "" for d in rest) == "2" and rest[-1].usage.cost_source == "reported"  # type: ignore[union-attr]
    r = await collect_result(run([memo], model))
    assert r.text == "42" and r.usage.cost_source == "cache" and model.calls == 1


async def test_another_request_or_tenant_misses(store: Any) -> None:
    model = CountingModel()
    memo = Memoize(store)
    await collect_result(run([memo], model))
    await collect_result(run([memo], model, text="What is 3 + 3?"))
    await collect_result(run([memo], model, tenant="t2"))
    assert model.calls == 3
    await collect_result(run([memo], model))
    assert model.calls == 3


async def test_errors_are_not_cached(store: Any) -> None:
    model = CountingModel(fail=(1,))
    memo = Memoize(store)
    with pytest.raises(ProviderError):
        await collect_result(run([memo], model))
    r = await collect_result(run([memo], model))
    assert r.text == "4" and model.calls == 2
    r = await collect_result(run([memo], model))
    assert model.calls == 2 and r.usage.cost_source == "cache"


@pytest.mark.parametrize("finish", ["content_filter", "refusal", "error"])
async def test_refusals_are_not_cached(store: Any, finish: Any) -> None:
    model = CountingModel(finish=finish)
    memo = Memoize(store)
    for _ in range(2):
        r = await collect_result(run([memo], model))
        assert r.finish_reason == finish
    assert model.calls == 2 and memo.hits == 0


async def test_a_stream_closed_early_is_not_cached(store: Any) -> None:
    gate = asyncio.Event()
    model = CountingModel(gate=gate, delay=0)
    memo = Memoize(store)
    task = asyncio.ensure_future(collect_result(run([memo], model)))
    await model.started.wait()  # the model was called; its answer is held back
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gate.set()
    await collect_result(run([memo], model))
    assert model.calls == 2


async def test_a_waiter_whose_leader_was_cancelled_runs_its_own_call(store: Any) -> None:
    gate = asyncio.Event()
    model = CountingModel(gate=gate, delay=0)
    memo = Memoize(store)
    leader = asyncio.ensure_future(collect_result(run([memo], model)))
    await model.started.wait()
    waiter = asyncio.ensure_future(collect_result(run([memo], model)))
    for _ in range(50):  # let the waiter reach the store's single-flight wait
        await asyncio.sleep(0)
    leader.cancel()
    with pytest.raises(asyncio.CancelledError):
        await leader
    gate.set()
    r = await waiter
    assert r.text == "4" and model.calls == 2


async def test_ttl_expires(store: Any) -> None:
    model = CountingModel(delay=0)
    memo = Memoize(store, ttl=max(store.ttl_resolution, 0.05))
    await collect_result(run([memo], model))
    await asyncio.sleep(max(store.ttl_resolution, 0.05) * 2 + 0.05)
    await collect_result(run([memo], model))
    assert model.calls == 2


async def test_a_budget_inside_or_outside_never_charges_a_hit(store: Any) -> None:
    for order in ("memoize_outer", "budget_outer"):
        model = CountingModel()
        memo = Memoize(store, namespace=f"ns-{order}")
        budget = BudgetMiddleware("1.00")
        mws: list[Any] = [memo, budget] if order == "memoize_outer" else [budget, memo]
        for _ in range(3):
            r = await collect_result(run(mws, model))
            assert r.text == "4"
        assert model.calls == 1, order
        assert budget.ledger("run_test").spent == Decimal("0.001"), order
        assert budget.ledger("run_test").reserved == 0


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("error", ["unavailable", "ttl", "bug"])
async def test_a_failing_store_never_fails_the_call(when: str, error: str) -> None:
    from seamkit.errors import StoreUnavailable, TTLNotSupported

    exc = {"unavailable": StoreUnavailable("down"), "ttl": TTLNotSupported("too fine"), "bug": KeyError("x")}[error]

    class Down:
        ttl_resolution = 1.0

        async def get_or_set(self, scope: Any, key: str, producer: Any, **k: Any) -> Any:
            if when == "after":
                await producer()
            raise exc

    model = CountingModel(delay=0)
    memo = Memoize(Down())
    r = await collect_result(run([memo], model))
    assert r.text == "4" and r.usage.cost_source == "reported" and model.calls == 1


async def test_warnings_of_the_original_call_are_not_replayed(store: Any) -> None:
    async def note(call: Call, nxt: Any) -> Any:
        async for d in nxt(call):
            yield d
        yield Delta(warning="budget: run r has spent $1, reaching its ceiling")

    model = CountingModel(delay=0)
    memo = Memoize(store)
    first = await collect_result(run([memo, note], model))
    second = await collect_result(run([memo, note], model))
    assert first.warnings and not second.warnings and second.usage.cost_source == "cache"


async def test_no_store_and_no_checkpoints_passes_through() -> None:
    model = CountingModel(delay=0)
    memo = Memoize()
    for _ in range(2):
        assert (await collect_result(run([memo], model))).text == "4"
    assert model.calls == 2


def test_a_hit_is_a_delta_stream() -> None:
    from seamkit_memoize.middleware import replay

    rec = {"v": 1, "text": "hi", "reasoning": None, "signature": None, "tool_calls": [], "finish_reason": "stop",
           "model": "m", "usage": {"input_tokens": 1, "output_tokens": 2, "cache_read_tokens": 0,
                                                     "cache_write_tokens": 0, "reasoning_tokens": 0}}
    ds = replay(rec)
    assert all(isinstance(d, Delta) for d in ds)
    assert [d.text for d in ds if d.text] == ["hi"] and ds[-1].usage is not None
    assert ds[-1].usage.cost_source == "cache" and ds[-1].usage.cost == 0
