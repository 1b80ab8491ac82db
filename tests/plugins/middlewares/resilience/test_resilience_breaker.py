"""The ``circuit_breaker`` middleware's state machine, per provider:model, on a fake clock."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from resilience_fakes import FakeModel, collect_deltas, perr, run_chain, run_result
from seamkit._plugins.registry import get_registry
from seamkit.errors import ConfigError, FailureClass, ProviderError
from seamkit.testing import FakeClock


def breaker(**params: Any) -> Any:
    return get_registry().build("middleware", "circuit_breaker", params)


async def fail(mw: Any, model: FakeModel, ctx: Any) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        await run_result([mw], model, ctx)
    return info.value


async def test_opens_after_threshold_and_refuses_without_calling(ctx: Any, clock: FakeClock) -> None:
    mw = breaker(failure_threshold=3, reset_after_s=10)
    model = FakeModel([perr("server_error", status=500)])
    for n in range(1, 4):
        assert mw.state("fake:m1", clock) == "closed"
        err = await fail(mw, model, ctx)
        assert err.failure_class is FailureClass.SERVER_ERROR
        assert mw.failures("fake:m1") == n
    assert mw.state("fake:m1", clock) == "open"
    clock.advance(4)
    err = await fail(mw, model, ctx)
    assert model.calls == 3  # refused before dispatch
    assert (err.failure_class, err.code, err.provider) == (FailureClass.OVERLOADED, "circuit_open", "fake")
    assert err.retry_after == pytest.approx(6.0)
    assert "circuit open for fake:m1 after 3 consecutive failures (last: server_error)" in str(err)


async def test_half_open_trial_success_closes(ctx: Any, clock: FakeClock) -> None:
    mw = breaker(failure_threshold=2, reset_after_s=5)
    model = FakeModel([perr("timeout"), perr("timeout"), "ok", "ok"])
    await fail(mw, model, ctx)
    await fail(mw, model, ctx)
    assert mw.state("fake:m1", clock) == "open"
    clock.advance(5)
    assert mw.state("fake:m1", clock) == "half_open"
    result = await run_result([mw], model, ctx)
    assert result.message.text == "answer from fake:m1"
    assert mw.state("fake:m1", clock) == "closed" and mw.failures("fake:m1") == 0
    await run_result([mw], model, ctx)
    assert model.calls == 4


async def test_half_open_trial_failure_reopens_for_a_full_period(ctx: Any, clock: FakeClock) -> None:
    mw = breaker(failure_threshold=2, reset_after_s=5)
    model = FakeModel([perr("overloaded")])
    await fail(mw, model, ctx)
    await fail(mw, model, ctx)
    clock.advance(7)
    err = await fail(mw, model, ctx)  # the trial
    assert err.code != "circuit_open" and model.calls == 3
    assert mw.state("fake:m1", clock) == "open"
    err = await fail(mw, model, ctx)
    assert err.code == "circuit_open" and err.retry_after == pytest.approx(5.0)
    assert model.calls == 3


async def test_one_trial_at_a_time(ctx: Any, clock: FakeClock) -> None:
    mw = breaker(failure_threshold=1, reset_after_s=5)
    model = FakeModel([perr("server_error"), "hang", "ok"])
    await fail(mw, model, ctx)
    clock.advance(5)
    trial = asyncio.create_task(run_result([mw], model, ctx))
    await model.hanging.wait()
    err = await fail(mw, model, ctx)
    assert err.code == "circuit_open" and err.retry_after is None
    assert "a trial call is in flight" in str(err)
    model.release.set()
    assert (await trial).message.text == "answer from fake:m1"
    assert mw.state("fake:m1", clock) == "closed"
    await run_result([mw], model, ctx)
    assert model.calls == 3


async def test_trial_closed_early_by_the_caller_frees_the_slot(ctx: Any, clock: FakeClock) -> None:
    mw = breaker(failure_threshold=1, reset_after_s=1)
    model = FakeModel([perr("server_error"), "ok"])
    await fail(mw, model, ctx)
    clock.advance(1)
    stream = run_chain([mw], model, ctx)
    await anext(stream)
    await stream.aclose()
    assert mw.state("fake:m1", clock) == "half_open"
    assert (await run_result([mw], model, ctx)).message.text  # a new trial is let through
    assert mw.state("fake:m1", clock) == "closed"


async def test_other_classes_neither_count_nor_reset(ctx: Any, clock: FakeClock) -> None:
    mw = breaker(failure_threshold=2, on=["rate_limited"])
    model = FakeModel([perr("rate_limited"), perr("quota"), perr("invalid_request"), ValueError("bug"),
                       perr("rate_limited"), perr("rate_limited")])
    await fail(mw, model, ctx)
    await fail(mw, model, ctx)
    await fail(mw, model, ctx)
    with pytest.raises(ValueError):
        await run_result([mw], model, ctx)
    assert mw.failures("fake:m1") == 1 and mw.state("fake:m1", clock) == "closed"
    await fail(mw, model, ctx)
    assert mw.state("fake:m1", clock) == "open"


async def test_success_resets_the_count(ctx: Any, clock: FakeClock) -> None:
    mw = breaker(failure_threshold=2)
    model = FakeModel([perr("server_error"), "ok", perr("server_error"), "ok"])
    await fail(mw, model, ctx)
    await run_result([mw], model, ctx)
    await fail(mw, model, ctx)
    assert mw.state("fake:m1", clock) == "closed" and mw.failures("fake:m1") == 1


async def test_a_failure_after_tokens_counts(ctx: Any, clock: FakeClock) -> None:
    mw = breaker(failure_threshold=1)
    model = FakeModel([("token_then", perr("server_error"))])
    with pytest.raises(ProviderError):
        await collect_deltas(run_chain([mw], model, ctx))
    assert mw.state("fake:m1", clock) == "open"


async def test_breakers_are_per_provider_and_model(ctx: Any, clock: FakeClock) -> None:
    mw = breaker(failure_threshold=1)
    bad = FakeModel([perr("server_error")], model="m1")
    other_model = FakeModel(["ok"], model="m2")
    other_provider = FakeModel(["ok"], model="m1", provider="other")
    await fail(mw, bad, ctx)
    assert mw.state("fake:m1", clock) == "open"
    assert (await run_result([mw], other_model, ctx)).message.text
    assert (await run_result([mw], other_provider, ctx)).message.text
    assert mw.state("fake:m2", clock) == "closed" and mw.state("other:m1", clock) == "closed"


async def test_retry_outside_waits_for_the_breaker(ctx: Any, clock: FakeClock) -> None:
    retry = get_registry().build("middleware", "retry", {"max_attempts": 3, "base_delay_s": 1, "seed": 3})
    mw = breaker(failure_threshold=1, reset_after_s=20)
    model = FakeModel([perr("server_error"), "ok"])
    result = await run_result([retry, mw], model, ctx)
    assert result.message.text == "answer from fake:m1"
    assert model.calls == 2
    first, second = clock.sleeps
    assert 0 <= first <= 1.0
    assert first + second == pytest.approx(20.0)  # the second wait is the breaker's retry_after


@pytest.mark.parametrize("params,path", [
    ({"failure_threshold": 0}, "failure_threshold"),
    ({"reset_after_s": 0}, "reset_after_s"),
    ({"on": []}, "on"),
    ({"on": ["nope"]}, "on.0"),
    ({"threshold": 2}, "threshold"),
])
def test_bad_parameters_are_located(params: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as info:
        breaker(**params)
    assert [i.path for i in info.value.issues] == [path]


async def test_a_trial_failing_when_the_stream_is_created_reopens(ctx: Any, clock: FakeClock) -> None:
    class EagerFailure(FakeModel):
        def stream(self, request: Any) -> Any:  # type: ignore[override]
            self.calls += 1
            raise perr("server_error")

    mw = breaker(failure_threshold=1, reset_after_s=2)
    model = EagerFailure(["ok"])
    await fail(mw, model, ctx)
    clock.advance(2)
    err = await fail(mw, model, ctx)
    assert err.code is None and model.calls == 2  # the trial went through and failed
    assert mw.state("fake:m1", clock) == "open"
    clock.advance(2)
    await fail(mw, model, ctx)
    assert model.calls == 3  # the trial slot was released
