"""The ``retry`` middleware: which failures are retried, how long it waits, when it stops."""

from __future__ import annotations

import asyncio
import random
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from resilience_fakes import REQUEST, FakeModel, collect_deltas, perr, run_chain, run_result
from seamkit._plugins.registry import get_registry
from seamkit.errors import BudgetExceeded, ConfigError, FailureClass, ProviderError, RunCancelled, UnsupportedFeature
from seamkit.testing import FakeClock, make_test_ctx
from seamkit_resilience.config import PERMANENT_CLASSES, TRANSIENT_CLASSES, RetryConfig
from seamkit_resilience.retry import Retry, backoff_ceiling, full_jitter_delay


def retry(**params: Any) -> Any:
    return get_registry().build("middleware", "retry", params)


# -- the three behaviours the issue names --------------------------------------------------------

async def test_quota_429_is_tried_once(ctx: Any, clock: FakeClock) -> None:
    model = FakeModel([perr("quota", status=429, code="insufficient_quota"), "ok"])
    with pytest.raises(ProviderError) as info:
        await run_result([retry()], model, ctx)
    assert info.value.failure_class is FailureClass.QUOTA
    assert model.calls == 1
    assert clock.sleeps == []


async def test_plain_429_with_retry_after_2_waits_2s_and_succeeds(ctx: Any, clock: FakeClock) -> None:
    model = FakeModel([perr("rate_limited", status=429, code="rate_limit_exceeded", retry_after=2.0), "ok"])
    result = await run_result([retry()], model, ctx)
    assert result.message.text == "answer from fake:m1"
    assert model.calls == 2
    assert clock.sleeps == [2.0]
    assert clock.monotonic() == 2.0


async def test_failure_after_first_token_is_not_retried(ctx: Any, clock: FakeClock) -> None:
    model = FakeModel([("token_then", perr("server_error", status=None)), "ok"])
    seen: list[Any] = []
    with pytest.raises(ProviderError) as info:
        await collect_deltas(run_chain([retry(max_attempts=5)], model, ctx), seen)
    assert info.value.failure_class is FailureClass.SERVER_ERROR
    assert model.calls == 1 and clock.sleeps == []
    assert [d.text for d in seen if d.text] == ["partial "]
    assert any("already streamed" in n for n in info.value.__notes__)


# -- what is never retried -----------------------------------------------------------------------

@pytest.mark.parametrize("cls", PERMANENT_CLASSES, ids=lambda c: c.value)
async def test_permanent_classes_are_tried_once(cls: FailureClass, ctx: Any, clock: FakeClock) -> None:
    model = FakeModel([perr(cls), "ok"])
    with pytest.raises(ProviderError) as info:
        await run_result([retry(max_attempts=5)], model, ctx)
    assert info.value.failure_class is cls
    assert model.calls == 1 and clock.sleeps == []


@pytest.mark.parametrize("exc", [
    UnsupportedFeature("temperature not supported", provider="fake", model="m1", feature="temperature"),
    BudgetExceeded("over", ceiling=Decimal("1"), spent=Decimal("1"), reserved=Decimal("0"), needed=Decimal("0.1")),
    ValueError("a bug"),
    RunCancelled("stop"),
], ids=lambda e: type(e).__name__)
async def test_non_provider_errors_are_not_retried(exc: Exception, ctx: Any, clock: FakeClock) -> None:
    model = FakeModel([exc, "ok"])
    with pytest.raises(type(exc)):
        await run_result([retry(max_attempts=5)], model, ctx)
    assert model.calls == 1 and clock.sleeps == []


async def test_class_not_in_retry_on_is_not_retried(ctx: Any, clock: FakeClock) -> None:
    model = FakeModel([perr("timeout"), "ok"])
    with pytest.raises(ProviderError):
        await run_result([retry(retry_on=["rate_limited"])], model, ctx)
    assert model.calls == 1


# -- delays ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("cls", TRANSIENT_CLASSES, ids=lambda c: c.value)
async def test_transient_classes_retry_with_full_jitter_until_max_attempts(cls: FailureClass, ctx: Any,
                                                                          clock: FakeClock) -> None:
    model = FakeModel([perr(cls)])
    mw = retry(max_attempts=4, base_delay_s=1.0, max_delay_s=3.0, seed=1)
    with pytest.raises(ProviderError) as info:
        await run_result([mw], model, ctx)
    assert model.calls == 4
    assert len(clock.sleeps) == 3
    for attempt, slept in enumerate(clock.sleeps, start=1):
        assert 0.0 <= slept <= min(3.0, 1.0 * 2 ** (attempt - 1))
    assert any("gave up after 4 tries" in n for n in info.value.__notes__)


async def test_jitter_is_reproducible_with_a_seed() -> None:
    runs = []
    for _ in range(2):
        clock = FakeClock()
        model = FakeModel([perr("server_error")])
        with pytest.raises(ProviderError):
            await run_result([retry(max_attempts=6, base_delay_s=0.5, max_delay_s=100, seed=42)], model,
                             make_test_ctx(clock=clock))
        runs.append(clock.sleeps)
    assert runs[0] == runs[1]
    assert len(set(runs[0])) == 5  # really random, not a constant


async def test_injected_rng_draws_the_delays(ctx: Any, clock: FakeClock) -> None:
    class Top(random.Random):
        def random(self) -> float:
            return 1.0

    model = FakeModel([perr("server_error")])
    mw = Retry(RetryConfig(max_attempts=5, base_delay_s=1.0, max_delay_s=5.0), rng=Top())
    with pytest.raises(ProviderError):
        await run_result([mw], model, ctx)
    assert clock.sleeps == [1.0, 2.0, 4.0, 5.0]  # the ceilings: 1, 2, 4, then capped at 5


async def test_retry_after_above_the_cap_gives_up_saying_why(ctx: Any, clock: FakeClock) -> None:
    original = perr("rate_limited", status=429, retry_after=120.0, code="rate_limit_exceeded")
    model = FakeModel([original, "ok"])
    with pytest.raises(ProviderError) as info:
        await run_result([retry(max_retry_after_s=60)], model, ctx)
    err = info.value
    assert model.calls == 1 and clock.sleeps == []
    assert err.failure_class is FailureClass.RATE_LIMITED and err.retry_after == 120.0 and err.status == 429
    assert err.code == "rate_limit_exceeded" and err.__cause__ is original
    assert "asked to wait 120 s, more than max_retry_after_s=60" in str(err)


async def test_retry_after_equal_to_the_cap_is_honoured(ctx: Any, clock: FakeClock) -> None:
    model = FakeModel([perr("overloaded", retry_after=60.0), "ok"])
    await run_result([retry(max_retry_after_s=60)], model, ctx)
    assert clock.sleeps == [60.0]


async def test_a_failed_try_leaves_no_deltas_behind(ctx: Any) -> None:
    model = FakeModel([perr("server_error"), perr("timeout"), "ok"])
    deltas = await collect_deltas(run_chain([retry(base_delay_s=0)], model, ctx))
    assert [d.warning for d in deltas if d.warning] == ["note from fake:m1 call 3"]
    assert [d.text for d in deltas if d.text] == ["answer from fake:m1"]
    assert model.closed == 3  # every try's stream was closed


# -- cancellation ----------------------------------------------------------------------------------

class BlockingClock(FakeClock):
    """A clock whose sleep never ends by itself."""

    def __init__(self) -> None:
        super().__init__()
        self.sleeping = asyncio.Event()

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.sleeping.set()
        await asyncio.Event().wait()


async def test_run_cancellation_ends_the_wait() -> None:
    clock = BlockingClock()
    ctx = make_test_ctx(clock=clock)
    model = FakeModel([perr("overloaded", retry_after=30.0), "ok"])
    task = asyncio.create_task(run_result([retry()], model, ctx))
    await clock.sleeping.wait()
    ctx.cancellation.cancel("user stop")
    with pytest.raises(RunCancelled, match="user stop"):
        await task
    assert model.calls == 1


async def test_task_cancellation_propagates_from_the_wait() -> None:
    clock = BlockingClock()
    model = FakeModel([perr("overloaded", retry_after=30.0), "ok"])
    task = asyncio.create_task(run_result([retry()], model, make_test_ctx(clock=clock)))
    await clock.sleeping.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert model.calls == 1


async def test_already_cancelled_run_does_not_retry(ctx: Any, clock: FakeClock) -> None:
    ctx.cancellation.cancel("gone")
    model = FakeModel([perr("server_error"), "ok"])
    with pytest.raises(RunCancelled):
        await run_result([retry()], model, ctx)
    assert model.calls == 1 and clock.sleeps == []


# -- the jitter formula ----------------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(attempt=st.integers(1, 3000), base=st.floats(0, 1e3) | st.just(5e-324), cap=st.floats(0, 1e4),
       seed=st.integers(0, 2**32))
def test_full_jitter_stays_within_its_bounds(attempt: int, base: float, cap: float, seed: int) -> None:
    ceiling = backoff_ceiling(attempt, base, cap)
    expected = float(min(Fraction(cap), Fraction(base) * 2 ** (attempt - 1)))
    assert ceiling == expected
    delay = full_jitter_delay(attempt, base, cap, random.Random(seed))
    assert 0.0 <= delay <= ceiling


@settings(max_examples=50, deadline=None)
@given(base=st.floats(0, 10), cap=st.floats(0, 60), attempts=st.integers(1, 8), seed=st.integers(0, 1000))
async def test_middleware_sleeps_stay_within_the_jitter_bounds(base: float, cap: float, attempts: int,
                                                                seed: int) -> None:
    clock = FakeClock()
    model = FakeModel([perr("server_error")])
    with pytest.raises(ProviderError):
        await run_result([Retry(RetryConfig(max_attempts=attempts, base_delay_s=base, max_delay_s=cap, seed=seed))],
                         model, make_test_ctx(clock=clock))
    assert model.calls == attempts and len(clock.sleeps) == attempts - 1
    for n, slept in enumerate(clock.sleeps, start=1):
        assert 0.0 <= slept <= min(cap, base * 2 ** (n - 1))


def test_backoff_ceiling_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        backoff_ceiling(0, 1, 1)
    with pytest.raises(ValueError):
        backoff_ceiling(1, float("nan"), 1)


# -- configuration ---------------------------------------------------------------------------------

def test_retry_on_refuses_permanent_classes_clearly() -> None:
    with pytest.raises(ConfigError) as info:
        retry(retry_on=["rate_limited", "quota", "authentication"])
    (issue,) = info.value.issues
    assert issue.path == "retry_on"
    assert "quota, authentication are permanent" in issue.message
    assert "rate_limited, overloaded, server_error, timeout" in issue.message


@pytest.mark.parametrize("params,path", [
    ({"max_attempts": 0}, "max_attempts"),
    ({"base_delay_s": -1}, "base_delay_s"),
    ({"max_retry_after_s": float("inf")}, "max_retry_after_s"),
    ({"retry_on": ["slow"]}, "retry_on.0"),
    ({"attempts": 3}, "attempts"),
])
def test_bad_parameters_are_located(params: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as info:
        retry(**params)
    assert [i.path for i in info.value.issues] == [path]


def test_defaults_and_marking() -> None:
    mw = retry()
    assert mw.config.max_attempts == 3 and list(mw.config.retry_on) == list(TRANSIENT_CLASSES)
    assert mw.kinds == frozenset({"chat"})
    assert "max_attempts=3" in repr(mw)


async def test_tool_calls_pass_through_untouched(ctx: Any) -> None:
    from seamkit._middleware import Call

    async def nxt(call: Call) -> Any:
        yield "tool result"

    mw = retry()
    out = [x async for x in mw(Call("tool", REQUEST, ctx), nxt)]
    assert out == ["tool result"]


async def test_an_error_raised_when_the_stream_is_created_is_retried(ctx: Any, clock: FakeClock) -> None:
    class EagerFailure(FakeModel):
        def stream(self, request: Any) -> Any:  # type: ignore[override]
            if self.calls == 0:
                self.calls += 1
                raise perr("overloaded", retry_after=1.0)
            return super().stream(request)

    model = EagerFailure(["ok"])
    result = await run_result([retry()], model, ctx)
    assert result.message.text == "answer from fake:m1" and clock.sleeps == [1.0]


# -- the server's x-should-retry advice (issue 10) -------------------------------------------------

@pytest.mark.parametrize("cls", TRANSIENT_CLASSES, ids=lambda c: c.value)
async def test_should_retry_false_stops_every_class(cls: FailureClass, ctx: Any, clock: FakeClock) -> None:
    err = perr(cls, retry_after=1.0)
    err.should_retry = False
    model = FakeModel([err, "ok"])
    with pytest.raises(ProviderError) as info:
        await run_result([retry(max_attempts=5)], model, ctx)
    assert info.value is err and model.calls == 1 and clock.sleeps == []


@pytest.mark.parametrize("cls", PERMANENT_CLASSES, ids=lambda c: c.value)
async def test_should_retry_true_allows_a_permanent_class_within_max_attempts(cls: FailureClass, ctx: Any,
                                                                              clock: FakeClock) -> None:
    err = perr(cls)
    err.should_retry = True
    model = FakeModel([err])
    with pytest.raises(ProviderError):
        await run_result([retry(max_attempts=3, seed=3)], model, ctx)
    assert model.calls == 3 and len(clock.sleeps) == 2
