"""``seamkit.ask``: text and typed answers, the corrective turn, resume, limits, outcomes,
usage/cost/settings/degradations, middlewares, provider building through the registry."""

from __future__ import annotations

import asyncio
import time
import types
from decimal import Decimal
from typing import Any

import pytest
from calls_testlib import FakeState, Turn
from pydantic import BaseModel, ConfigDict
from seamkit import Answer, AskFailed, Binding, CallLimits, Session, ask, ask_sync
from seamkit._hookspecs import hookimpl
from seamkit._plugins.registry import Registry
from seamkit.errors import (
    ComponentNotFound,
    ConfigError,
    FailureClass,
    ProviderError,
    UnsupportedFeature,
)
from seamkit.testing import ScriptedModel
from seamkit.values import Message

SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
FAKE = Binding("fakeprov", "fake-1")


async def test_text_answer_carries_usage_cost_raw_usage_settings_and_session(fake: FakeState) -> None:
    fake.script("Paris is the capital.")
    a = await ask(FAKE, "Capital of France?", call_id="call-1")
    assert a.outcome == "ok" and a.ok
    assert a.value == a.text == "Paris is the capital."
    assert a.call_id == "call-1"
    assert [m.role for m in a.transcript] == ["user", "assistant"]
    assert a.usage.input_tokens == 10 and a.usage.output_tokens == 5 and a.usage.requests == 1
    assert a.cost == Decimal("0.000075") and a.cost_source == "estimated"
    assert a.raw_usage == ({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},)
    assert a.settings["provider"] == "fakeprov" and a.settings["model"] == "fake-1"
    assert a.settings["answered_by"] == "fake-1-2026-01-01"
    assert a.settings["output"] == "text"
    assert a.failure is None and a.degradations == ()
    assert a.session == Session(FAKE, a.transcript)
    assert a.raise_for_outcome() is a
    assert fake.closed == 1  # the provider built for this call is closed after it


async def test_string_binding_is_parsed_and_model_goes_into_the_config(fake: FakeState) -> None:
    fake.script("ok")
    await ask("fakeprov:fake-large:v2", "hi")
    assert fake.configs[-1].model == "fake-large:v2"  # split on the first colon only


async def test_typed_output_with_one_corrective_turn(fake: FakeState) -> None:
    fake.script("The answer is five.", '{"answer": 5}')
    a = await ask(FAKE, "2 + 3?", output=SCHEMA)
    assert a.outcome == "ok"
    assert a.value == {"answer": 5}
    assert a.settings["output"] == "json_schema"
    assert len(fake.requests) == 2
    assert fake.requests[0].output_schema == SCHEMA  # the canonical schema is sent to the provider
    corrective = fake.requests[1].messages[-1]
    assert corrective.role == "user" and "did not match the required output format" in corrective.text
    assert a.usage.requests == 2 and len(a.raw_usage) == 2


async def test_typed_output_into_a_python_type(fake: FakeState) -> None:
    class Capital(BaseModel):
        city: str
        population_millions: float

    fake.script('{"city": "Paris", "population_millions": 2.1}')
    a = await ask(FAKE, "Capital of France?", output=Capital)
    assert isinstance(a.value, Capital) and a.value.city == "Paris"


async def test_output_still_invalid_after_the_corrective_turn(fake: FakeState) -> None:
    fake.script("five", "still five")
    a = await ask(FAKE, "2 + 3?", output=SCHEMA)
    assert a.outcome == "invalid_output"
    assert a.value is None
    assert a.text == "still five"
    assert a.failure is not None and a.failure.type == "OutputValidationError"
    with pytest.raises(AskFailed) as info:
        a.raise_for_outcome()
    assert info.value.outcome == "invalid_output" and "still five" not in str(info.value.failure_class)


async def test_resume_continues_the_transcript(fake: FakeState) -> None:
    fake.script("Hello Ada.", "Your name is Ada.")
    first = await ask(FAKE, "My name is Ada.", system="Be brief.")
    second = await ask(None, "What is my name?", resume=first.session)
    assert second.value == "Your name is Ada."
    sent = fake.requests[1].messages
    assert [(m.role, m.text) for m in sent] == [
        ("system", "Be brief."),
        ("user", "My name is Ada."),
        ("assistant", "Hello Ada."),
        ("user", "What is my name?"),
    ]
    assert second.session.binding == FAKE
    assert len(second.session.transcript) == 5


async def test_resume_with_a_new_system_prompt_replaces_the_old_one(fake: FakeState) -> None:
    fake.script("a", "b")
    first = await ask(FAKE, "one", system="old")
    await ask(FAKE, "two", resume=first.session, system="new")
    sent = fake.requests[1].messages
    assert [m.text for m in sent if m.role == "system"] == ["new"]
    assert sent[0].role == "system"


async def test_failed_call_leaves_the_session_as_it_was(fake: FakeState) -> None:
    fake.script("first answer", Turn(error=ProviderError("down", FailureClass.SERVER_ERROR)), "retried")
    first = await ask(FAKE, "q1")
    failed = await ask(None, "q2", resume=first.session)
    assert failed.outcome == "failed"
    assert failed.session == first.session  # the same prompt can be asked again from here
    assert [m.role for m in failed.transcript] == ["user", "assistant", "user"]  # what happened
    again = await ask(None, "q2", resume=failed.session)
    assert again.ok and [m.text for m in fake.requests[2].messages] == ["q1", "first answer", "q2"]


async def test_failing_provider_gives_outcome_failed_and_keeps_the_failure_class(fake: FakeState) -> None:
    fake.script(Turn(error=ProviderError("slow down", FailureClass.RATE_LIMITED, provider="fakeprov",
                                         status=429, retry_after=2.0)))
    a = await ask(FAKE, "hi")
    assert a.outcome == "failed"
    assert a.value is None
    assert a.failure is not None
    assert a.failure.type == "ProviderError"
    assert a.failure.failure_class is FailureClass.RATE_LIMITED
    assert "slow down" in a.failure.message
    with pytest.raises(AskFailed) as info:
        a.raise_for_outcome()
    assert info.value.failure_class is FailureClass.RATE_LIMITED
    assert info.value.answer is a
    assert fake.closed == 1


async def test_an_unexpected_exception_is_an_outcome_too(fake: FakeState) -> None:
    fake.script(Turn(error=RuntimeError("socket exploded")))
    a = await ask(FAKE, "hi")
    assert a.outcome == "failed" and a.failure is not None
    # a provider's stream raising something that is not seamkit's is a classified error naming it
    assert (a.failure.type, a.failure.failure_class) == ("ProviderError", FailureClass.UNKNOWN)
    assert "fakeprov" in a.failure.message and "RuntimeError: socket exploded" in a.failure.message


async def test_cancellation_propagates(fake: FakeState) -> None:
    fake.script(Turn("late", delay=5))
    task = asyncio.ensure_future(ask(FAKE, "hi"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_wall_clock_limit_with_a_slow_model(fake: FakeState) -> None:
    fake.script(Turn("too late", delay=5))
    started = time.monotonic()
    a = await ask(FAKE, "hi", limits=CallLimits(wall_clock_s=0.2))
    elapsed = time.monotonic() - started
    assert a.outcome == "timeout"
    assert elapsed < 2
    assert a.failure is not None and "wall_clock_s=0.2" in a.failure.message
    assert a.settings["limits"]["wall_clock_s"] == 0.2
    assert fake.closed == 1


async def test_wall_clock_covers_the_corrective_turn(fake: FakeState) -> None:
    fake.script(Turn("not json", delay=0.1), Turn('{"answer": 1}', delay=5))
    a = await ask(FAKE, "hi", output=SCHEMA, limits=CallLimits(wall_clock_s=0.5))
    assert a.outcome == "timeout"
    assert len(fake.requests) == 2


async def test_a_timeout_raised_by_the_provider_is_a_failure_not_the_wall_clock(fake: FakeState) -> None:
    fake.script(Turn(error=TimeoutError("read timed out")))
    a = await ask(FAKE, "hi", limits=CallLimits(wall_clock_s=30))
    assert a.outcome == "failed" and a.failure is not None
    assert a.failure.type == "ProviderError" and "TimeoutError: read timed out" in a.failure.message


async def test_max_tokens_temperature_and_seed_reach_the_request(fake: FakeState) -> None:
    fake.script("ok")
    a = await ask(FAKE, "hi", limits=CallLimits(max_tokens=77), temperature=0.3, seed=7)
    req = fake.requests[0]
    assert (req.max_tokens, req.temperature, req.seed) == (77, 0.3, 7)
    assert (a.settings["max_tokens"], a.settings["temperature"], a.settings["seed"]) == (77, 0.3, 7)


async def test_degradations_recorded_by_the_provider(fake: FakeState) -> None:
    msg = "reasoning_effort 'minimal' not supported by fake-1; sent 'low'"
    fake.script(Turn("ok", warning=msg))
    a = await ask(Binding("fakeprov", "fake-1", options={"reasoning_effort": "minimal"}), "hi")
    assert a.degradations == (msg,)
    assert fake.configs[-1].reasoning_effort == "minimal"
    assert a.settings["options"] == {"reasoning_effort": "minimal"}


async def test_streamed_text_reaches_on_text(fake: FakeState) -> None:
    fake.script("Hello world")
    pieces: list[str] = []
    a = await ask(FAKE, "hi", on_text=pieces.append)
    assert "".join(pieces) == "Hello world" and len(pieces) == 2
    assert a.ok


async def test_an_error_in_on_text_is_raised_not_turned_into_an_outcome(fake: FakeState) -> None:
    fake.script("Hello world")

    def broken(piece: str) -> None:
        raise BrokenPipeError("stdout closed")

    with pytest.raises(BrokenPipeError):
        await ask(FAKE, "hi", on_text=broken)


async def test_middlewares_wrap_the_call_and_see_the_call_id(fake: FakeState) -> None:
    seen: list[tuple[str, int | None]] = []

    async def spy(call: Any, nxt: Any) -> Any:
        seen.append((call.ctx.run_id, call.request.max_tokens))
        async for d in nxt(call):
            yield d

    fake.script("ok")
    await ask(FAKE, "hi", call_id="call-xyz", middlewares=[spy], limits=CallLimits(max_tokens=9))
    assert seen == [("call-xyz", 9)]


async def test_budget_refuses_the_corrective_turn_once_the_ceiling_is_spent(fake: FakeState) -> None:
    # the budget admits a call while spent + reserved < ceiling: the first request (which costs
    # 0.000075 USD) passes, the corrective turn is refused before dispatch
    fake.script("not json", '{"answer": 1}')
    a = await ask(FAKE, "hi", output=SCHEMA, limits=CallLimits(max_cost_usd=Decimal("0.00005"), max_tokens=100))
    assert a.outcome == "budget_exceeded"
    assert a.failure is not None and a.failure.type == "BudgetExceeded"
    assert len(fake.requests) == 1
    assert a.usage.cost == Decimal("0.000075")  # what was spent before the refusal
    assert a.settings["limits"]["max_cost_usd"] == "0.00005"


async def test_budget_refuses_an_unpriced_model_before_dispatch(fake: FakeState) -> None:
    fake.price = None
    fake.script("never sent")
    a = await ask(FAKE, "hi", limits=CallLimits(max_cost_usd="0.50"))
    assert a.outcome == "budget_exceeded"
    assert fake.requests == []


async def test_budget_admits_a_call_under_the_ceiling(fake: FakeState) -> None:
    fake.script("fine")
    a = await ask(FAKE, "hi", limits=CallLimits(max_cost_usd="0.50", max_tokens=100))
    assert a.ok and a.value == "fine"


async def test_max_cost_without_the_budget_plugin_names_the_distribution() -> None:
    reg = Registry()  # nothing installed but the test provider
    state = FakeState().script("x")
    from calls_testlib import make_plugin

    reg.register_plugin(make_plugin(state), "fake")
    with pytest.raises(ConfigError, match="pip install seamkit-budget"):
        await ask(FAKE, "hi", limits=CallLimits(max_cost_usd=Decimal("1")), registry=reg)
    assert state.requests == [] and state.configs == []  # refused before building anything


async def test_unknown_provider_suggests_close_names(fake: FakeState) -> None:
    with pytest.raises(ComponentNotFound) as info:
        await ask(Binding("fakeprv", "m"), "hi")
    assert "fakeprov" in info.value.suggestions


async def test_options_the_provider_refuses_are_a_config_error_naming_the_path(fake: FakeState) -> None:
    with pytest.raises(ConfigError) as info:
        await ask(Binding("fakeprov", "m", options={"base_urll": "http://x"}), "hi")
    paths = [i.path for i in info.value.issues]
    assert paths == ["fakeprov.base_urll"]
    assert fake.requests == []


async def test_model_is_only_passed_to_a_component_with_a_model_field(register_plugin: Any) -> None:
    class NoModelConfig(BaseModel):
        model_config = ConfigDict(extra="forbid")
        turns: list[str]

    built: list[NoModelConfig] = []

    def build(cfg: NoModelConfig) -> ScriptedModel:
        built.append(cfg)
        return ScriptedModel(cfg.turns)

    @hookimpl
    def seamkit_register_providers(register: Any) -> None:
        register("nomodel", build, config=NoModelConfig)

    register_plugin(types.SimpleNamespace(seamkit_register_providers=seamkit_register_providers), name="nomodel-p")
    a = await ask(Binding("nomodel", "whatever", options={"turns": ["hi"]}), "hello")
    assert a.ok and built[0].turns == ["hi"]
    assert a.degradations == ("provider 'nomodel' has no model setting; model 'whatever' was not sent",)


async def test_middleware_by_name_and_mapping_from_the_registry(fake: FakeState) -> None:
    fake.script("ok")
    a = await ask(FAKE, "hi", middlewares=[{"use": "budget", "max_cost_usd": "1"}])
    assert a.ok
    with pytest.raises(ComponentNotFound):
        await ask(FAKE, "hi", middlewares=["no-such-middleware"])


def test_ask_sync_outside_and_inside_a_running_loop(fake: FakeState) -> None:
    fake.script("one", "two")
    assert ask_sync(FAKE, "hi").value == "one"

    async def inside() -> Answer:
        return ask_sync(FAKE, "hi")

    assert asyncio.run(inside()).value == "two"


async def test_argument_errors(fake: FakeState) -> None:
    with pytest.raises(ValueError, match="empty"):
        await ask(FAKE, "   ")
    with pytest.raises(TypeError, match="resume"):
        await ask(None, "hi")
    with pytest.raises(ValueError, match="PROVIDER:MODEL"):
        await ask("fakeprov", "hi")
    with pytest.raises(ValueError, match="invalid output JSON Schema"):
        await ask(FAKE, "hi", output={"type": 5})
    with pytest.raises(TypeError, match="prompt"):
        await ask(FAKE, 42)  # type: ignore[arg-type]
    assert fake.requests == []


async def test_a_message_prompt(fake: FakeState) -> None:
    fake.script("ok")
    a = await ask(FAKE, Message.user("hi there"))
    assert a.ok and fake.requests[0].messages[-1].text == "hi there"


# -- regressions: capability errors, cut-off answers, failed requests that were sent, option errors --


async def test_a_capability_error_before_anything_is_sent_is_raised(fake: FakeState) -> None:
    fake.script(Turn(error=UnsupportedFeature("temperature is not supported", provider="fakeprov",
                                           model="fake-1", feature="temperature")))
    with pytest.raises(UnsupportedFeature) as info:
        await ask(FAKE, "hi", temperature=0.2)
    assert info.value.feature == "temperature"
    assert isinstance(info.value, ValueError)
    assert fake.closed == 1  # the provider is still closed


async def test_a_capability_error_after_a_request_was_sent_is_an_outcome(fake: FakeState) -> None:
    fake.script("not json", Turn(error=UnsupportedFeature("no", provider="fakeprov", feature="x")))
    a = await ask(FAKE, "hi", output=SCHEMA)
    assert a.outcome == "failed" and a.failure is not None and a.failure.type == "UnsupportedFeature"
    assert a.usage.requests == 1 and a.unmetered_requests == 0


async def test_an_answer_cut_off_by_the_token_limit_is_ok_with_a_degradation(fake: FakeState) -> None:
    fake.script(Turn("Paris is the cap", finish="length"))
    a = await ask(FAKE, "Capital of France?", limits=CallLimits(max_tokens=4))
    assert a.ok and a.value == "Paris is the cap"
    assert a.degradations == ("the answer was cut off at max_tokens (finish_reason length)",)


async def test_a_complete_answer_has_no_length_degradation(fake: FakeState) -> None:
    fake.script("Paris.")
    a = await ask(FAKE, "Capital of France?")
    assert a.ok and a.degradations == ()


async def test_typed_output_cut_off_twice_is_invalid_output_and_says_why(fake: FakeState) -> None:
    fake.script(Turn('{"answer": ', finish="length"), Turn('{"answer": ', finish="length"))
    a = await ask(FAKE, "2 + 3?", output=SCHEMA)
    assert a.outcome == "invalid_output"
    assert "the answer was cut off at max_tokens (finish_reason length)" in a.degradations


async def test_a_request_that_failed_mid_stream_counts_with_unknown_usage(fake: FakeState) -> None:
    fake.script(Turn("Paris is", error_after_text=ProviderError(
        "the stream ended without its terminal event", FailureClass.SERVER_ERROR, provider="fakeprov")))
    a = await ask(FAKE, "hi")
    assert a.outcome == "failed"
    assert a.usage.requests == 1 and a.unmetered_requests == 1
    assert (a.usage.input_tokens, a.usage.output_tokens) == (0, 0)
    assert a.cost is None and a.cost_source == "unpriced"


async def test_an_error_status_means_the_request_was_sent(fake: FakeState) -> None:
    fake.script("not json", Turn(error=ProviderError("slow down", FailureClass.RATE_LIMITED, status=429)))
    a = await ask(FAKE, "2 + 3?", output=SCHEMA)
    assert a.outcome == "failed"
    assert a.usage.requests == 2 and a.unmetered_requests == 1
    assert (a.usage.input_tokens, a.usage.output_tokens) == (10, 5)  # the first request's
    assert a.cost is None  # the second request's cost is unknown


async def test_a_failure_before_dispatch_counts_no_request(fake: FakeState) -> None:
    fake.script(Turn(error=ProviderError("cannot connect", FailureClass.SERVER_ERROR)))
    a = await ask(FAKE, "hi")
    assert a.outcome == "failed" and a.usage.requests == 0 and a.unmetered_requests == 0


async def test_an_unknown_option_gets_a_close_name_and_the_allowed_keys(fake: FakeState) -> None:
    with pytest.raises(ConfigError) as info:
        await ask(Binding("fakeprov", "m", options={"base_urll": "http://x"}), "hi")
    (issue,) = info.value.issues
    assert issue.message == ("unknown key 'base_urll' for provider 'fakeprov'; did you mean 'base_url'? "
                             "(allowed: model, api_key, base_url, reasoning_effort, capabilities)")


async def test_an_unknown_key_inside_a_mapping_option_names_it_and_the_allowed_keys(fake: FakeState) -> None:
    with pytest.raises(ConfigError) as info:
        await ask(Binding("fakeprov", "m", options={"capabilities": {"zzz": 1}}), "hi")
    (issue,) = info.value.issues
    assert issue.path == "fakeprov.capabilities.zzz"
    assert issue.message == "unknown key 'zzz' for provider 'fakeprov' (allowed: temperature, json_schema)"
    assert "Extra inputs" not in str(info.value)
    assert fake.requests == []


async def test_an_option_error_never_shows_the_credential(fake: FakeState) -> None:
    secret = "sk-option-SECRET-0123456789"
    with pytest.raises(ConfigError) as info:
        await ask(Binding("fakeprov", "m", options={"api_key": secret, "base_urll": secret}), "hi")
    assert secret not in str(info.value) and secret not in repr(info.value.issues)


async def test_a_resumed_session_with_an_unanswered_call_reaches_the_provider_answered(fake: FakeState) -> None:
    # issue 10 item 5: a session whose transcript holds a tool call without a result was sent as is
    from seamkit._agent.loop import UNANSWERED_TEMPLATE
    from seamkit.values import ToolCall

    fake.script("It is unknown whether the mail was sent.")
    session = Session(FAKE, (Message.user("Send the mail."),
                             Message("assistant", (ToolCall("call_1", "send_mail", {"to": "ada"}),))))
    answer = await ask(None, "Was it sent?", resume=session)
    assert answer.ok, answer.failure
    sent = fake.requests[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "tool", "user"]
    r = sent[2].tool_results[0]
    assert (r.call_id, r.content, r.is_error) == ("call_1", UNANSWERED_TEMPLATE, True)
