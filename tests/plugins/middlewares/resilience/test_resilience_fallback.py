"""The ``fallback`` middleware: order, classes, the recorded warning and reported usage."""

from __future__ import annotations

from typing import Any

import pytest
from resilience_fakes import FakeModel, collect_deltas, perr, run_chain, run_result
from seamkit._plugins.registry import get_registry
from seamkit.errors import ConfigError, FailureClass, ProviderError
from seamkit.testing import FakeClock


def fallback(**params: Any) -> Any:
    return get_registry().build("middleware", "fallback", params)


async def test_answers_with_the_fallback_and_says_so(ctx: Any, flaky: list[FakeModel]) -> None:
    mw = fallback(to=[{"use": "flaky", "model": "backup", "output_tokens": 7}])
    assert flaky == []  # built on first use only
    primary = FakeModel([perr("rate_limited", status=429)], model="main")
    result = await run_result([mw], primary, ctx)
    (fb,) = flaky
    assert primary.calls == 1 and fb.calls == 1
    assert result.message.text == "answer from flaky:backup"
    assert result.warnings[0] == "fallback: fake:main failed (rate_limited); answered by flaky:backup"
    assert "note from fake:main call 1" not in result.warnings  # the failed model left nothing behind
    assert result.model == "backup"
    assert result.usage.output_tokens == 7 and result.usage.requests == 1
    await run_result([mw], primary, ctx)
    assert len(flaky) == 1  # built once, reused


async def test_fallbacks_are_tried_in_order(ctx: Any, flaky: list[FakeModel]) -> None:
    mw = fallback(to=[{"use": "flaky", "model": "b1", "script": ["overloaded"]},
                      {"use": "flaky", "model": "b2"},
                      {"use": "flaky", "model": "b3"}])
    primary = FakeModel([perr("server_error", status=500)], model="main")
    result = await run_result([mw], primary, ctx)
    assert [m.model for m in flaky] == ["b1", "b2"]  # b3 never needed, never built
    assert result.message.text == "answer from flaky:b2"
    assert result.warnings[0] == ("fallback: fake:main failed (server_error); flaky:b1 failed (overloaded); "
                                  "answered by flaky:b2")


@pytest.mark.parametrize("cls", ["quota", "authentication", "invalid_request", "context_length", "unknown"])
async def test_other_classes_are_not_fallen_back_from(cls: str, ctx: Any, flaky: list[FakeModel]) -> None:
    mw = fallback(to=[{"use": "flaky", "model": "b1"}])
    primary = FakeModel([perr(cls)])
    with pytest.raises(ProviderError) as info:
        await run_result([mw], primary, ctx)
    assert info.value.failure_class is FailureClass(cls)
    assert flaky == []


async def test_on_selects_the_classes(ctx: Any, flaky: list[FakeModel]) -> None:
    mw = fallback(to=[{"use": "flaky", "model": "paid"}], on=["quota"])
    with pytest.raises(ProviderError):  # rate_limited is not in `on`
        await run_result([mw], FakeModel([perr("rate_limited")]), ctx)
    assert flaky == []
    result = await run_result([mw], FakeModel([perr("quota", code="insufficient_quota")]), ctx)
    assert result.message.text == "answer from flaky:paid"
    assert result.warnings[0] == "fallback: fake:m1 failed (quota); answered by flaky:paid"


def test_a_bare_name_slot_is_validated_like_any_other(flaky: list[FakeModel]) -> None:
    with pytest.raises(ConfigError) as info:
        fallback(to=["flaky"])  # `flaky` needs a model
    assert [(i.path, i.message) for i in info.value.issues] == [("to.0.model", "provider 'flaky': Field required")]


async def test_no_fallback_after_the_first_token(ctx: Any, flaky: list[FakeModel]) -> None:
    mw = fallback(to=[{"use": "flaky", "model": "b1"}])
    primary = FakeModel([("token_then", perr("server_error"))])
    seen: list[Any] = []
    with pytest.raises(ProviderError) as info:
        await collect_deltas(run_chain([mw], primary, ctx), seen)
    assert info.value.failure_class is FailureClass.SERVER_ERROR
    assert [d.text for d in seen if d.text] == ["partial "]
    assert flaky == []


async def test_a_fallback_failing_after_its_first_token_propagates(ctx: Any, flaky: list[FakeModel]) -> None:
    mw = fallback(to=[{"use": "flaky", "model": "b1", "script": ["token_then_server_error"]},
                      {"use": "flaky", "model": "b2"}])
    seen: list[Any] = []
    with pytest.raises(ProviderError) as info:
        await collect_deltas(run_chain([mw], FakeModel([perr("timeout")]), ctx), seen)
    assert [m.model for m in flaky] == ["b1"]
    assert seen[0].warning == "fallback: fake:m1 failed (timeout); answered by flaky:b1"
    assert any("then flaky:b1 failed (server_error)" in n for n in info.value.__notes__)


async def test_every_model_failing_raises_the_last_error(ctx: Any, flaky: list[FakeModel]) -> None:
    mw = fallback(to=[{"use": "flaky", "model": "b1", "script": ["overloaded"]},
                      {"use": "flaky", "model": "b2", "script": ["rate_limited"]}])
    with pytest.raises(ProviderError) as info:
        await run_result([mw], FakeModel([perr("server_error")]), ctx)
    err = info.value
    assert err.failure_class is FailureClass.RATE_LIMITED and err.provider == "fake"
    assert ("fallback: every model failed: fake:m1 failed (server_error); flaky:b1 failed (overloaded); "
            "flaky:b2 failed (rate_limited)") in err.__notes__
    assert [m.closed for m in flaky] == [1, 1]


async def test_retry_inside_fallback(ctx: Any, clock: FakeClock, flaky: list[FakeModel]) -> None:
    reg = get_registry()
    mws = [reg.build("middleware", "fallback", {"to": [{"use": "flaky", "model": "b1"}]}),
           reg.build("middleware", "retry", {"max_attempts": 2, "base_delay_s": 0})]
    primary = FakeModel([perr("overloaded", retry_after=1.0)])
    result = await run_result(mws, primary, ctx)
    assert primary.calls == 2 and clock.sleeps == [1.0]
    assert result.message.text == "answer from flaky:b1"


def test_unknown_provider_is_a_located_config_error(flaky: list[FakeModel]) -> None:
    with pytest.raises(ConfigError) as info:
        fallback(to=[{"use": "flaky", "model": "ok"}, {"use": "flakey", "model": "x"}])
    (issue,) = info.value.issues
    assert issue.path == "to.1.use"
    assert "no provider named 'flakey'" in issue.message and "did you mean 'flaky'" in issue.message


def test_bad_fallback_parameters_are_located(flaky: list[FakeModel]) -> None:
    with pytest.raises(ConfigError) as info:
        fallback(to=[{"use": "flaky"}, {"use": "flaky", "model": "x", "output_tokens": -1, "colour": "red"}])
    got = sorted((i.path, i.message) for i in info.value.issues)
    assert [p for p, _ in got] == ["to.0.model", "to.1.colour", "to.1.output_tokens"]
    assert all(m.startswith("provider 'flaky': ") for _, m in got)


@pytest.mark.parametrize("params,path", [({}, "to"), ({"to": []}, "to"), ({"to": ["flaky"], "on": []}, "on"),
                                         ({"to": [{"model": "x"}]}, "to.0.use")])
def test_bad_parameters_are_located(params: dict[str, Any], path: str, flaky: list[FakeModel]) -> None:
    with pytest.raises(ConfigError) as info:
        fallback(**params)
    assert [i.path for i in info.value.issues] == [path]
