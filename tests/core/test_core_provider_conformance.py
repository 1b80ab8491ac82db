"""The provider conformance suite, run against an in-memory provider that follows the contract,
and shown to fail for providers that break it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pytest_seamkit.conformance import CONFORMANCE_SECRET, SCENARIOS, ProviderConformance, Recorder, SentRequest
from seamkit._accumulate import collect_result
from seamkit._ports import PROVIDER_FEATURES
from seamkit.errors import FailureClass, ProviderError, UnsupportedFeature
from seamkit.values import ChatRequest, Delta, ImageBlock, LLMResult, ToolCallDelta, Usage

_ERR = {
    "error_auth": (FailureClass.AUTHENTICATION, 401, None),
    "error_quota": (FailureClass.QUOTA, 429, None),
    "error_rate_limited": (FailureClass.RATE_LIMITED, 429, 2.0),
    "error_server": (FailureClass.SERVER_ERROR, 500, None),
}


class DeltaModel:
    """Plays each scenario as deltas and "sends" each request (with its credential) to
    ``recorder``; ``swallow_midstream``, ``leak`` and ``merge_parallel`` break the contract.
    ``features`` limits what it declares: it refuses images when it does not declare them."""

    provider = "fake"
    model = "fake-1"

    def __init__(self, scenario: str, *, swallow_midstream: bool = False, leak: bool = False,
                 merge_parallel: bool = False, recorder: Recorder | None = None,
                 features: frozenset[str] = PROVIDER_FEATURES, drop_images: bool = False,
                 log_key: bool = False, retry_at: bool = False, auth_status: int = 401,
                 key_in_cause: bool = False) -> None:
        self.scenario = scenario
        self._key = CONFORMANCE_SECRET
        self.swallow = swallow_midstream
        self.leak = leak
        self.shared_ids = merge_parallel
        self.recorder = recorder
        self.features = features
        self.drop_images = drop_images
        self.log_key = log_key
        self.retry_at = retry_at
        self.auth_status = auth_status
        self.key_in_cause = key_in_cause

    def __repr__(self) -> str:
        return f"DeltaModel({self.scenario!r}, key={self._key if self.leak else '***'})"

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        if self.log_key:
            logging.getLogger("fake").debug("sending with key %s", self._key)
        if "images" not in self.features and not self.drop_images and any(
                isinstance(b, ImageBlock) for m in request.messages for b in m.content):
            raise UnsupportedFeature("images are not supported", provider=self.provider, feature="images")
        if self.recorder is not None:
            self.recorder.record(SentRequest(request, {"authorization": f"Bearer {self._key}"}))
        s = self.scenario
        usage = Usage(input_tokens=12, output_tokens=5, requests=1)
        if s in _ERR:
            cls, status, after = _ERR[s]
            if s == "error_auth":
                status = self.auth_status
            when = None
            if self.retry_at and after is not None:
                when, after = datetime.now(UTC) + timedelta(seconds=after), None
            err = ProviderError("refused", cls, provider=self.provider, status=status, retry_after=after, retry_at=when)
            if self.key_in_cause:
                raise err from RuntimeError(f"sent with key {self._key}")
            raise err
        if s == "error_midstream":
            yield Delta(text="Hel")
            if self.swallow:
                yield Delta(finish_reason="stop", usage=usage)
                return
            raise ProviderError("overloaded", FailureClass.OVERLOADED, provider=self.provider, code="overloaded_error")
        if s == "truncated":
            yield Delta(text="Hel")
            raise ProviderError("the stream ended early", FailureClass.SERVER_ERROR, provider=self.provider)
        if s == "tool_call":
            yield Delta(tool_call=ToolCallDelta(0, "c1", "get_weather", '{"city": '))
            yield Delta(tool_call=ToolCallDelta(0, None, None, '"Paris"}'))
            yield Delta(finish_reason="tool_calls", usage=usage)
            return
        if s == "parallel_tool_calls":
            # A provider that drops the second call's id on a shared index merges the two calls.
            index, second = (0, None) if self.shared_ids else (1, "c2")
            yield Delta(tool_call=ToolCallDelta(0, "c1", "get_weather", '{"city": "Paris"}'))
            yield Delta(tool_call=ToolCallDelta(index, second, "get_weather", '{"city": "Tokyo"}'))
            yield Delta(finish_reason="tool_calls", usage=usage)
            return
        if s == "structured_output":
            yield Delta(text='{"answer"')
            yield Delta(text=": 42}")
            yield Delta(finish_reason="stop", usage=usage)
            return
        if s == "content_filter":
            yield Delta(text="I can")
            yield Delta(finish_reason="content_filter", usage=usage)
            return
        if s == "length":
            yield Delta(text="Once upon a time")
            yield Delta(finish_reason="length", usage=usage)
            return
        if s == "reasoning":
            yield Delta(reasoning="1001 = 7 * 11 * 13")
            yield Delta(text="No.")
            yield Delta(finish_reason="stop", usage=Usage(input_tokens=12, output_tokens=40, reasoning_tokens=30,
                                                          requests=1))
            return
        yield Delta(text="Hello")
        yield Delta(text=", world")
        yield Delta(finish_reason="stop", usage=usage)

    async def chat(self, request: ChatRequest) -> LLMResult:
        return await collect_result(self.stream(request), provider=self.provider, model=self.model)


#: DeltaModel records the ChatRequest itself: each setting is its field of the same name
REQUEST_FIELDS: Mapping[str, str | None] = {"max_tokens": "max_tokens", "temperature": "temperature",
                                            "tool_choice": "tool_choice", "seed": "seed", "stop": "stop",
                                            "extra": "extra"}
#: ... and each tool call's arguments a mapping, a result a ToolResult in a "tool" message
PARALLEL_IDS: Mapping[str, str] = {"Paris": "c1", "Tokyo": "c2"}
TOOL_FIELDS: Mapping[str, Any] = {"arguments": "object", "result_role": ("role", "tool"), "is_error": "is_error"}


class TestDeltaModelConforms(ProviderConformance):
    declared_features = PROVIDER_FEATURES  # the checks of other features are left out
    sent_fields = REQUEST_FIELDS
    tool_fields = TOOL_FIELDS
    reasoning_text = "1001 = 7 * 11 * 13"
    parallel_call_ids = PARALLEL_IDS
    filter_finish = "content_filter"

    @pytest.fixture
    def make_provider(self, recorder: Recorder) -> Any:
        return lambda scenario: DeltaModel(scenario, recorder=recorder)


class TestTextOnlyDeltaModelConforms(ProviderConformance):
    """A provider declaring no images: the image checks are left out, its refusal is checked."""
    declared_features = PROVIDER_FEATURES - {"images"}  # the checks of other features are left out
    sent_fields = REQUEST_FIELDS
    tool_fields = TOOL_FIELDS
    reasoning_text = "1001 = 7 * 11 * 13"
    parallel_call_ids = PARALLEL_IDS
    filter_finish = "content_filter"

    @pytest.fixture
    def make_provider(self, recorder: Recorder) -> Any:
        return lambda scenario: DeltaModel(scenario, recorder=recorder, features=PROVIDER_FEATURES - {"images"})


class TestRetryAtAndBadKeyAs400Conform(ProviderConformance):
    """Rate-limit advice as ``retry_at`` and a bad key answered with 400 (as Gemini does) pass."""
    declared_features = PROVIDER_FEATURES  # the checks of other features are left out
    sent_fields = REQUEST_FIELDS
    tool_fields = TOOL_FIELDS
    reasoning_text = "1001 = 7 * 11 * 13"
    parallel_call_ids = PARALLEL_IDS
    filter_finish = "content_filter"

    @pytest.fixture
    def make_provider(self, recorder: Recorder) -> Any:
        return lambda scenario: DeltaModel(scenario, recorder=recorder, retry_at=True, auth_status=400)


def test_every_scenario_is_documented() -> None:
    assert set(SCENARIOS) == {*_ERR, "text", "tool_call", "parallel_tool_calls", "structured_output",
                              "reasoning", "error_midstream", "truncated", "length",
                              "content_filter"}


async def test_a_provider_that_swallows_a_midstream_error_fails_the_suite() -> None:
    suite = ProviderConformance()
    with pytest.raises(pytest.fail.Exception):
        await suite.test_an_error_mid_stream_is_raised_not_swallowed(
            lambda s: DeltaModel(s, swallow_midstream=True))  # type: ignore[arg-type,return-value]


async def test_a_provider_that_leaks_its_credential_fails_the_suite(caplog: pytest.LogCaptureFixture,
                                                                   capfd: pytest.CaptureFixture[str]) -> None:
    suite = ProviderConformance()
    with pytest.raises(AssertionError, match="leaked"):
        await suite.test_the_credential_never_shows(lambda s: DeltaModel(s, leak=True), Recorder(), caplog,  # type: ignore[arg-type,return-value]
                                                    capfd)


async def test_parallel_calls_merged_into_one_fail_the_suite() -> None:
    suite = ProviderConformance()
    with pytest.raises((AssertionError, ProviderError)):
        await suite.test_parallel_tool_calls_are_kept_apart(
            lambda s: DeltaModel(s, merge_parallel=True))  # type: ignore[arg-type,return-value]


async def test_a_provider_that_drops_an_undeclared_image_silently_fails_the_suite() -> None:
    suite = ProviderConformance()
    with pytest.raises(AssertionError, match="not drop it silently"):
        await suite.test_an_undeclared_feature_is_refused_or_warned(
            lambda s: DeltaModel(s, features=PROVIDER_FEATURES - {"images"}, drop_images=True),  # type: ignore[arg-type,return-value]
            "images")


async def test_a_provider_that_logs_its_credential_fails_the_suite(caplog: pytest.LogCaptureFixture,
                                                                  capfd: pytest.CaptureFixture[str]) -> None:
    suite = ProviderConformance()
    with pytest.raises(AssertionError, match="leaked"):
        await suite.test_the_credential_never_shows(lambda s: DeltaModel(s, log_key=True), Recorder(),
                                                    caplog, capfd)  # type: ignore[arg-type,return-value]


async def test_a_provider_that_never_records_what_it_sends_fails_with_the_reason() -> None:
    suite = ProviderConformance()
    with pytest.raises(AssertionError, match="nothing was recorded"):
        await suite.test_sends_every_turn(DeltaModel, Recorder().last_sent)  # type: ignore[arg-type]


@pytest.mark.parametrize("scenario", ["error_auth", "error_server"])
async def test_a_provider_whose_error_chain_holds_the_credential_fails_the_suite(scenario: str) -> None:
    suite = ProviderConformance()
    with pytest.raises(AssertionError, match="leaked in the error's chain"):
        await suite.test_errors_are_classified(
            lambda s: DeltaModel(s, key_in_cause=True), Recorder(), scenario)  # type: ignore[arg-type,return-value]


async def test_an_auth_error_of_another_class_or_status_fails_the_suite() -> None:
    suite = ProviderConformance()
    with pytest.raises(AssertionError, match=r"status 404, not in \(400, 401, 403\)"):
        await suite.test_errors_are_classified(
            lambda s: DeltaModel(s, auth_status=404), Recorder(), "error_auth")  # type: ignore[arg-type,return-value]
