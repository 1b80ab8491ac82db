"""``retry`` (and ``fallback``) in front of the real ``openai_chat`` provider, its HTTP replayed by
``seamkit_http.ReplayTransport``: the number of requests actually sent is what is asserted.

Wire data follows the OpenAI API reference: error bodies ``{"error": {"message", "type", "param",
"code"}}`` as in "Error codes" (platform.openai.com/docs/guides/error-codes: 429 "You exceeded your
current quota" = ``insufficient_quota``; 429 "Rate limit reached" = ``rate_limit_exceeded``), and
the streamed ``chat.completion.chunk`` objects of "Chat Completions > The chat completion chunk
object" (``stream_options.include_usage``: a last chunk with empty ``choices`` and ``usage``), ended
by ``data: [DONE]``; an error inside a stream is a ``data: {"error": {...}}`` event.
"""

from __future__ import annotations

import json
from datetime import timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from resilience_fakes import FakeModel, collect_deltas, run_chain, run_result
from seamkit._plugins.registry import get_registry
from seamkit.errors import FailureClass, ProviderError
from seamkit.testing import FakeClock
from seamkit_http import ReplayTransport, Reply, make_client
from seamkit_openai.chat import build as build_openai_chat
from seamkit_openai.config import OpenAIChatConfig

KEY = "sk-test-resilience-0123456789"
MODEL = "gpt-4o-mini"

QUOTA_BODY = {"error": {
    "message": "You exceeded your current quota, please check your plan and billing details. For more "
               "information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
    "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}}
RATE_BODY = {"error": {
    "message": "Rate limit reached for gpt-4o-mini in organization org-abc123 on requests per min (RPM): Limit 3, "
               "Used 3, Requested 1. Please try again in 2s. Visit https://platform.openai.com/account/rate-limits "
               "to learn more.",
    "type": "requests", "param": None, "code": "rate_limit_exceeded"}}
SERVER_ERROR_EVENT = {"error": {
    "message": "The server had an error while processing your request. Sorry about that!",
    "type": "server_error", "param": None, "code": None}}


def chunk(delta: dict[str, Any] | None, finish: str | None = None, *, usage: dict[str, Any] | None = None) -> bytes:
    obj: dict[str, Any] = {"id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG", "object": "chat.completion.chunk",
                           "created": 1741570283, "model": "gpt-4o-mini-2024-07-18",
                           "system_fingerprint": "fp_06737a9306", "service_tier": "default"}
    if usage is not None:
        obj["choices"] = []
        obj["usage"] = usage
    else:
        obj["choices"] = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


USAGE = {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12,
         "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
         "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                       "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}
SSE = {"content-type": "text/event-stream; charset=utf-8", "x-request-id": "req_e2e_1"}
OK_STREAM = Reply(status=200, headers=SSE, chunks=[
    chunk({"role": "assistant", "content": "", "refusal": None}),
    chunk({"content": "Hello"}),
    chunk({"content": " there"}),
    chunk({}, "stop"),
    chunk(None, usage=USAGE),
    b"data: [DONE]\n\n",
])


def provider(transport: ReplayTransport) -> Any:
    return build_openai_chat(OpenAIChatConfig(model=MODEL, api_key=KEY), client=make_client(transport=transport))


def retry(**params: Any) -> Any:
    return get_registry().build("middleware", "retry", params)


async def test_quota_429_sends_exactly_one_request(ctx: Any, clock: FakeClock) -> None:
    transport = ReplayTransport(
        Reply(status=429, headers={"x-request-id": "req_quota"}, json=QUOTA_BODY),
        OK_STREAM,
    )
    model = provider(transport)
    with pytest.raises(ProviderError) as info:
        await run_result([retry(max_attempts=5)], model, ctx)
    err = info.value
    assert (err.failure_class, err.status, err.code) == (FailureClass.QUOTA, 429, "insufficient_quota")
    assert len(transport.requests) == 1 and transport.remaining == 1
    assert clock.sleeps == []
    assert KEY not in str(err) and KEY not in repr(model)


async def test_rate_limit_429_with_retry_after_2_waits_and_succeeds(ctx: Any, clock: FakeClock) -> None:
    transport = ReplayTransport(
        Reply(status=429, headers={"retry-after": "2", "x-request-id": "req_rl",
                                   "x-ratelimit-limit-requests": "3", "x-ratelimit-remaining-requests": "0"},
              json=RATE_BODY),
        OK_STREAM,
    )
    result = await run_result([retry()], provider(transport), ctx)
    assert len(transport.requests) == 2
    assert clock.sleeps == [2.0]
    assert result.message.text == "Hello there"
    assert result.finish_reason == "stop"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (9, 3)
    assert transport.json_bodies[0] == transport.json_bodies[1]  # the same request, sent again
    assert transport.requests[1].headers["authorization"] == f"Bearer {KEY}"
    assert transport.closed == 2


async def test_error_after_first_text_delta_reaches_the_caller_after_one_request(ctx: Any, clock: FakeClock) -> None:
    transport = ReplayTransport(
        Reply(status=200, headers=SSE, chunks=[
            chunk({"role": "assistant", "content": "", "refusal": None}),
            chunk({"content": "Hel"}),
            b"data: " + json.dumps(SERVER_ERROR_EVENT).encode() + b"\n\n",
        ]),
        OK_STREAM,
    )
    seen: list[Any] = []
    with pytest.raises(ProviderError) as info:
        await collect_deltas(run_chain([retry(max_attempts=5)], provider(transport), ctx), seen)
    assert info.value.failure_class is FailureClass.SERVER_ERROR
    assert [d.text for d in seen if d.text] == ["Hel"]
    assert all(d.finish_reason is None for d in seen)
    assert len(transport.requests) == 1 and transport.remaining == 1
    assert clock.sleeps == [] and transport.closed == 1


async def test_dropped_stream_before_any_token_is_retried(ctx: Any, clock: FakeClock) -> None:
    transport = ReplayTransport(
        Reply(status=200, headers=SSE, chunks=[chunk({"role": "assistant", "content": "", "refusal": None})]),
        OK_STREAM,
    )
    result = await run_result([retry(base_delay_s=0.5, seed=7)], provider(transport), ctx)
    assert result.message.text == "Hello there"
    assert len(transport.requests) == 2 and len(clock.sleeps) == 1 and 0 <= clock.sleeps[0] <= 0.5


async def test_fallback_from_openai_chat_to_another_model(ctx: Any, flaky: list[FakeModel]) -> None:
    transport = ReplayTransport(Reply(status=503, json={"error": {
        "message": "The engine is currently overloaded, please try again later", "type": "server_error",
        "param": None, "code": None}}))
    mw = get_registry().build("middleware", "fallback", {"to": [{"use": "flaky", "model": "local"}]})
    result = await run_result([mw], provider(transport), ctx)
    assert len(transport.requests) == 1
    assert result.message.text == "answer from flaky:local"
    assert result.warnings[0] == f"fallback: openai_chat:{MODEL} failed (server_error); answered by flaky:local"


# -- issue 10: the server's retry signals, over the real provider's HTTP ---------------------------

UNAVAILABLE_BODY = {"error": {"message": "The engine is currently overloaded, please try again later.",
                              "type": "service_unavailable_error", "param": None, "code": None}}


async def test_503_with_x_should_retry_false_is_sent_once(ctx: Any, clock: FakeClock) -> None:
    transport = ReplayTransport(
        Reply(status=503, headers={"x-should-retry": "false", "x-request-id": "req_no"}, json=UNAVAILABLE_BODY),
        OK_STREAM, OK_STREAM, OK_STREAM, OK_STREAM,
    )
    with pytest.raises(ProviderError) as info:
        await run_result([retry(max_attempts=5)], provider(transport), ctx)
    err = info.value
    assert (err.failure_class, err.status, err.should_retry) == (FailureClass.SERVER_ERROR, 503, False)
    assert len(transport.requests) == 1 and clock.sleeps == []
    assert any("x-should-retry: false" in n for n in err.__notes__)


async def test_x_should_retry_true_allows_retrying_a_permanent_class(ctx: Any, clock: FakeClock) -> None:
    # a 409 (lock timeout: openai-python retries it) is classified invalid_request; the server's
    # "true" makes it worth one more try
    conflict = {"error": {"message": "Request conflicted; retry.", "type": "invalid_request_error", "param": None,
                          "code": None}}
    transport = ReplayTransport(
        Reply(status=409, headers={"x-should-retry": "true", "retry-after-ms": "300"}, json=conflict), OK_STREAM,
    )
    result = await run_result([retry()], provider(transport), ctx)
    assert result.message.text == "Hello there"
    assert len(transport.requests) == 2 and clock.sleeps == [0.3]


async def test_x_should_retry_true_does_not_override_retry_on(ctx: Any, clock: FakeClock) -> None:
    transport = ReplayTransport(Reply(status=503, headers={"x-should-retry": "true"}, json=UNAVAILABLE_BODY),
                                OK_STREAM)
    with pytest.raises(ProviderError):
        await run_result([retry(retry_on=["rate_limited"])], provider(transport), ctx)
    assert len(transport.requests) == 1


async def test_retry_after_http_date_is_measured_against_the_runs_clock(ctx: Any, clock: FakeClock) -> None:
    # the fake clock is far from the wall clock: only the run's clock can make this 30 s
    when = clock.now() + timedelta(seconds=30)
    transport = ReplayTransport(
        Reply(status=429, headers={"retry-after": format_datetime(when, usegmt=True)}, json=RATE_BODY),
        OK_STREAM,
    )
    result = await run_result([retry()], provider(transport), ctx)
    assert result.message.text == "Hello there"
    assert clock.sleeps == [30.0]
    assert len(transport.requests) == 2


async def test_retry_after_http_date_above_the_cap_gives_up_by_the_runs_clock(ctx: Any, clock: FakeClock) -> None:
    when = clock.now() + timedelta(seconds=600)
    transport = ReplayTransport(
        Reply(status=429, headers={"retry-after": format_datetime(when, usegmt=True)}, json=RATE_BODY), OK_STREAM,
    )
    with pytest.raises(ProviderError) as info:
        await run_result([retry(max_retry_after_s=60)], provider(transport), ctx)
    assert "asked to wait 600 s" in str(info.value)
    assert len(transport.requests) == 1 and clock.sleeps == []


# -- issue 10: a captive portal's 200 is not retried as a server error -----------------------------

async def test_a_captive_portal_page_with_200_is_tried_once(ctx: Any, clock: FakeClock) -> None:
    page = b"<!DOCTYPE html><html><head><title>Sign in to CoffeeShop WiFi</title></head><body>...</body></html>"
    transport = ReplayTransport(*[Reply(status=200, headers={"content-type": "text/html"}, body=page)] * 5)
    with pytest.raises(ProviderError) as info:
        await run_result([retry(max_attempts=5)], provider(transport), ctx)
    assert info.value.failure_class is FailureClass.UNKNOWN
    assert "got text/html" in str(info.value) and "Sign in to CoffeeShop WiFi" in str(info.value)
    assert len(transport.requests) == 1 and clock.sleeps == []


@pytest.mark.parametrize("body", [
    b"<!DOCTYPE html><html><head><title>Sign in to CoffeeShop WiFi</title></head><body>...</body></html>",
    b": proxy keep-alive\n\n<html><body>Sign in to CoffeeShop WiFi</body></html>",  # a comment, then no event
], ids=["html", "comment_then_html"])
async def test_a_page_sent_as_text_event_stream_is_tried_once(ctx: Any, clock: FakeClock, body: bytes) -> None:
    # the content type says event stream; the body is a portal's page: not a dropped stream
    transport = ReplayTransport(*[Reply(status=200, headers=SSE, body=body)] * 5)
    with pytest.raises(ProviderError) as info:
        await run_result([retry(max_attempts=5)], provider(transport), ctx)
    err = info.value
    assert (err.failure_class, err.code) == (FailureClass.UNKNOWN, "unexpected_body")
    assert "got text/event-stream; charset=utf-8" in str(err) and "Sign in to CoffeeShop WiFi" in str(err)
    assert len(transport.requests) == 1 and clock.sleeps == []
