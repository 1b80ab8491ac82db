"""Error classification: HTTP status + the body's error type/code (never message text), Retry-After.

Bodies follow the OpenAI "Error codes" guide / API reference error object
(``{"error": {"message", "type", "param", "code"}}``) and the Claude API "Errors" page
(``{"type": "error", "error": {"type", "message"}, "request_id"}``; the spend-cap 429 from
"Rate limits" with ``error.details.error_code``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from seamkit.errors import FailureClass, ProviderError
from seamkit_http import (
    classify_error_body,
    classify_http_error,
    classify_transport_error,
    classify_unexpected_body,
    is_error_body,
    parse_retry_after,
)

F = FailureClass


def openai_body(type_: str | None, code: str | None, message: str = "provider said so") -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def anthropic_body(type_: str, message: str = "provider said so", error_code: str | None = None) -> dict[str, Any]:
    err: dict[str, Any] = {"type": type_, "message": message}
    if error_code:
        err["details"] = {"error_code": error_code}
    return {"type": "error", "error": err, "request_id": "req_body_1"}


CASES: list[tuple[str, int, Any, FailureClass, str | None]] = [
    # OpenAI
    ("openai 401", 401, openai_body("invalid_request_error", "invalid_api_key"), F.AUTHENTICATION, "invalid_api_key"),
    ("openai 403 region", 403, openai_body("invalid_request_error", "unsupported_country_region_territory"),
     F.AUTHENTICATION, "unsupported_country_region_territory"),
    ("openai 429 quota", 429, openai_body("insufficient_quota", "insufficient_quota"), F.QUOTA, "insufficient_quota"),
    ("openai 429 credits", 429, openai_body("insufficient_quota", "credit_balance_exhausted"), F.QUOTA,
     "credit_balance_exhausted"),
    ("openai 429 project cap", 429, openai_body("insufficient_quota", "project_spend_limit_exceeded"), F.QUOTA,
     "project_spend_limit_exceeded"),
    ("openai 429 hard limit", 429, openai_body("invalid_request_error", "billing_hard_limit_reached"), F.QUOTA,
     "billing_hard_limit_reached"),
    ("openai 429 billing inactive", 429, openai_body("invalid_request_error", "billing_not_active"), F.QUOTA,
     "billing_not_active"),
    ("openai 429 rate", 429, openai_body("requests", "rate_limit_exceeded"), F.RATE_LIMITED, "rate_limit_exceeded"),
    ("openai 429 tokens", 429, openai_body("tokens", "rate_limit_exceeded"), F.RATE_LIMITED, "rate_limit_exceeded"),
    ("openai 429 slow_down", 429, openai_body("rate_limit_error", "slow_down"), F.RATE_LIMITED, "slow_down"),
    ("openai 400 context", 400, openai_body("invalid_request_error", "context_length_exceeded"), F.CONTEXT_LENGTH,
     "context_length_exceeded"),
    ("openai 400 content filter", 400, openai_body("invalid_request_error", "content_filter"), F.CONTENT_FILTER,
     "content_filter"),
    ("openai 400 policy", 400, openai_body("invalid_request_error", "content_policy_violation"), F.CONTENT_FILTER,
     "content_policy_violation"),
    ("openai 400 other", 400, openai_body("invalid_request_error", None), F.INVALID_REQUEST, "invalid_request_error"),
    ("openai 404 model", 404, openai_body("invalid_request_error", "model_not_found"), F.INVALID_REQUEST,
     "model_not_found"),
    ("openai 413", 413, openai_body("invalid_request_error", None), F.INVALID_REQUEST, "invalid_request_error"),
    ("openai 422", 422, openai_body("invalid_request_error", None), F.INVALID_REQUEST, "invalid_request_error"),
    ("openai 408", 408, openai_body(None, None), F.TIMEOUT, None),
    ("openai 500", 500, openai_body("server_error", None), F.SERVER_ERROR, "server_error"),
    ("openai 502", 502, "<html>bad gateway</html>", F.SERVER_ERROR, None),
    ("openai 503", 503, openai_body("service_unavailable_error", None), F.SERVER_ERROR, "service_unavailable_error"),
    ("openai 503 overloaded", 503, openai_body("service_unavailable_error", "server_is_overloaded"), F.OVERLOADED,
     "server_is_overloaded"),
    ("openai 504", 504, b"", F.TIMEOUT, None),
    # Anthropic
    ("anthropic 400", 400, anthropic_body("invalid_request_error"), F.INVALID_REQUEST, "invalid_request_error"),
    ("anthropic 401", 401, anthropic_body("authentication_error"), F.AUTHENTICATION, "authentication_error"),
    ("anthropic 402", 402, anthropic_body("billing_error"), F.QUOTA, "billing_error"),
    ("anthropic 403", 403, anthropic_body("permission_error"), F.AUTHENTICATION, "permission_error"),
    ("anthropic 404", 404, anthropic_body("not_found_error"), F.INVALID_REQUEST, "not_found_error"),
    ("anthropic 413", 413, anthropic_body("request_too_large"), F.INVALID_REQUEST, "request_too_large"),
    ("anthropic 429", 429, anthropic_body("rate_limit_error"), F.RATE_LIMITED, "rate_limit_error"),
    ("anthropic 429 spend cap", 429, anthropic_body("rate_limit_error", error_code="enforced_spend_limit_reached"),
     F.QUOTA, "enforced_spend_limit_reached"),
    ("anthropic 500", 500, anthropic_body("api_error"), F.SERVER_ERROR, "api_error"),
    ("anthropic 504", 504, anthropic_body("timeout_error"), F.TIMEOUT, "timeout_error"),
    ("anthropic 529", 529, anthropic_body("overloaded_error"), F.OVERLOADED, "overloaded_error"),
    ("anthropic overloaded on 500", 500, anthropic_body("overloaded_error"), F.OVERLOADED, "overloaded_error"),
    # Other servers / shapes
    ("402 no body", 402, None, F.QUOTA, None),
    ("418 other 4xx", 418, b"teapot", F.INVALID_REQUEST, None),
    ("599 other 5xx", 599, b"", F.SERVER_ERROR, None),
    ("string error", 400, {"error": "bad thing"}, F.INVALID_REQUEST, None),
    ("llama.cpp context", 400, {"error": {"code": 400, "message": "too long", "type": "exceed_context_size_error",
                                          "n_prompt_tokens": 5000, "n_ctx": 4096}},
     F.CONTEXT_LENGTH, "exceed_context_size_error"),
]


@pytest.mark.parametrize(("status", "body", "expected", "code"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
@pytest.mark.parametrize("encoding", ["mapping", "bytes", "str"])
def test_classification_table(status: int, body: Any, expected: FailureClass, code: str | None, encoding: str) -> None:
    if isinstance(body, dict) and encoding != "mapping":
        body = json.dumps(body)
        if encoding == "bytes":
            body = body.encode()
    err = classify_http_error("p", status, body, {})
    assert isinstance(err, ProviderError)
    assert err.failure_class is expected
    assert err.status == status
    assert err.code == code
    assert err.provider == "p"
    assert str(err).startswith(f"p: {expected.value}: HTTP {status}")


def test_quota_is_permanent_even_on_429_and_rate_limit_is_transient() -> None:
    quota = classify_http_error("openai", 429, openai_body("insufficient_quota", "insufficient_quota"),
                                {"retry-after": "1"})
    rate = classify_http_error("openai", 429, openai_body("requests", "rate_limit_exceeded"), {"retry-after": "1"})
    assert not quota.failure_class.transient
    assert rate.failure_class.transient


def test_classification_never_reads_the_message() -> None:
    # messages that look like other classes do not change the class
    a = classify_http_error("p", 400, openai_body("invalid_request_error", None,
                                                   "maximum context length exceeded; insufficient_quota"), {})
    b = classify_http_error("p", 429, openai_body("requests", "rate_limit_exceeded", "You exceeded your current quota"),
                            {})
    assert a.failure_class is F.INVALID_REQUEST
    assert b.failure_class is F.RATE_LIMITED


def test_message_contains_the_provider_message_and_request_id() -> None:
    err = classify_http_error("anthropic", 529, anthropic_body("overloaded_error", "Overloaded"),
                              {"request-id": "req_hdr_9", "content-type": "application/json"})
    assert "Overloaded" in str(err)
    assert err.request_id == "req_hdr_9"
    body_only = classify_http_error("anthropic", 529, anthropic_body("overloaded_error"), {})
    assert body_only.request_id == "req_body_1"
    openai = classify_http_error("openai", 500, openai_body("server_error", None), {"X-Request-ID": "req_oa"})
    assert openai.request_id == "req_oa"


def test_non_json_body_is_quoted_truncated() -> None:
    err = classify_http_error("p", 502, b"<html>" + b"x" * 5000 + b"</html>", {})
    assert "<html>" in str(err)
    assert len(str(err)) < 700


def test_empty_body_uses_the_reason_phrase() -> None:
    assert "Service Unavailable" in str(classify_http_error("p", 503, b"", {}))


def test_secrets_are_masked_in_messages() -> None:
    key = "sk-proj-SECRETSECRET1234"
    err = classify_http_error("openai", 401, openai_body("invalid_request_error", "invalid_api_key",
                                                          f"Incorrect API key provided: {key}."),
                              {}, secrets=[key])
    assert key not in str(err) and key not in repr(err) and key not in err.args[0]
    assert "***" in str(err)


def test_headers_never_appear_in_messages() -> None:
    headers = {"authorization": "Bearer sk-live-ABCDEFGH", "x-api-key": "sk-ant-XYZXYZXYZ",
               "retry-after": "3", "request-id": "req_1"}
    for status, body in [(401, anthropic_body("authentication_error")), (429, openai_body("requests", None)),
                         (500, b""), (503, b"down")]:
        err = classify_http_error("p", status, body, headers)
        text = str(err) + repr(err)
        assert "sk-live-ABCDEFGH" not in text and "sk-ant-XYZXYZXYZ" not in text


# ------------------------------------------------------------------------------------- error events


@pytest.mark.parametrize(("body", "expected", "code"), [
    ({"error": {"message": "boom", "type": "server_error", "param": None, "code": None}}, F.SERVER_ERROR,
     "server_error"),
    ({"error": {"message": "m", "type": "invalid_request_error", "code": "context_length_exceeded"}},
     F.CONTEXT_LENGTH, "context_length_exceeded"),
    ({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, F.OVERLOADED,
     "overloaded_error"),
    ({"type": "error", "error": {"type": "api_error", "message": "Internal"}}, F.SERVER_ERROR, "api_error"),
    ({"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}, F.RATE_LIMITED, "rate_limit_error"),
    ({"type": "error", "error": {"type": "timeout_error", "message": "t"}}, F.TIMEOUT, "timeout_error"),
    ({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}, F.INVALID_REQUEST,
     "invalid_request_error"),
    # Responses API `error` event: code/message at the top level
    ({"type": "error", "code": "rate_limit_exceeded", "message": "slow", "param": None, "sequence_number": 3},
     F.RATE_LIMITED, "rate_limit_exceeded"),
    ({"type": "error", "code": "server_error", "message": "x", "param": None, "sequence_number": 3},
     F.SERVER_ERROR, "server_error"),
    # a Responses `response.error` object
    ({"code": "invalid_prompt", "message": "nope"}, F.CONTENT_FILTER, "invalid_prompt"),
    ({"type": "error", "code": "ERR_SOMETHING", "message": "?"}, F.UNKNOWN, "ERR_SOMETHING"),
    ({}, F.UNKNOWN, None),
])
def test_classify_error_body(body: dict[str, Any], expected: FailureClass, code: str | None) -> None:
    err = classify_error_body("p", body)
    assert err.failure_class is expected
    assert err.code == code
    assert err.status is None
    assert str(err).startswith(f"p: {expected.value}: stream error")


def test_classify_error_body_with_status() -> None:
    err = classify_error_body("p", {"error": {"message": "m", "type": None}}, status=503)
    assert err.failure_class is F.SERVER_ERROR and err.status == 503


# --------------------------------------------------------------------------------- transport errors


@pytest.mark.parametrize(("exc", "expected"), [
    (httpx.ConnectTimeout("connect timed out"), F.TIMEOUT),
    (httpx.ReadTimeout("read timed out"), F.TIMEOUT),
    (httpx.WriteTimeout("w"), F.TIMEOUT),
    (httpx.PoolTimeout("p"), F.TIMEOUT),
    (httpx.ConnectError("[Errno 111] Connection refused"), F.SERVER_ERROR),
    (httpx.ReadError("reset"), F.SERVER_ERROR),
    (httpx.RemoteProtocolError("peer closed connection without sending complete message body"), F.SERVER_ERROR),
    (httpx.UnsupportedProtocol("Request URL is missing an 'http://' or 'https://' protocol."), F.INVALID_REQUEST),
    (httpx.DecodingError("bad gzip"), F.SERVER_ERROR),
])
def test_classify_transport_error(exc: httpx.HTTPError, expected: FailureClass) -> None:
    err = classify_transport_error("p", exc)
    assert err.failure_class is expected
    assert type(exc).__name__ in str(err)
    assert err.status is None


def test_transport_error_masks_secrets() -> None:
    err = classify_transport_error("p", httpx.ConnectError("failed for key=sk-abcdef123"), secrets=["sk-abcdef123"])
    assert "sk-abcdef123" not in str(err)


# ------------------------------------------------------------------------------------- Retry-After

NOW = datetime(2026, 11, 30, 18, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(("headers", "expected"), [
    ({"retry-after": "2"}, 2.0),
    ({"Retry-After": "120"}, 120.0),
    ({"retry-after": " 7 "}, 7.0),
    ({"retry-after": "0"}, 0.0),
    ({"retry-after": "1.5"}, 1.5),  # not RFC delay-seconds, but sent by some servers; accepted
    ({"retry-after-ms": "1500"}, 1.5),
    ({"retry-after-ms": "250.5", "retry-after": "9"}, 0.2505),
    ({"retry-after-ms": "junk", "retry-after": "9"}, 9.0),
    ({"retry-after-ms": "-5", "retry-after": "9"}, 9.0),
    ({"retry-after": "Mon, 30 Nov 2026 18:00:30 GMT"}, 30.0),  # IMF-fixdate
    ({"retry-after": "Monday, 30-Nov-26 18:01:00 GMT"}, 60.0),  # obsolete RFC 850
    ({"retry-after": "Mon Nov 30 18:00:10 2026"}, 10.0),  # asctime
    ({"retry-after": "Mon, 30 Nov 2026 17:00:00 GMT"}, 0.0),  # in the past
    ({"retry-after": "-1"}, None),
    ({"retry-after": "nan"}, None),
    ({"retry-after": "inf"}, None),
    ({"retry-after": "soon"}, None),
    ({"retry-after": ""}, None),
    ({}, None),
    ({"content-type": "application/json"}, None),
])
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    got = parse_retry_after(headers, now=NOW)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected)


def test_parse_retry_after_with_httpx_headers_and_default_now() -> None:
    when = datetime.now(UTC) + timedelta(seconds=100)
    got = parse_retry_after(httpx.Headers({"Retry-After": format_datetime(when, usegmt=True)}))
    assert got is not None and 97 <= got <= 100


@given(st.integers(min_value=0, max_value=10**7))
def test_retry_after_seconds_roundtrip(seconds: int) -> None:
    assert parse_retry_after({"retry-after": str(seconds)}) == float(seconds)
    assert parse_retry_after({"retry-after-ms": str(seconds)}) == seconds / 1000


@given(st.integers(min_value=0, max_value=10**6))
def test_retry_after_http_date_roundtrip(seconds: int) -> None:
    when = NOW + timedelta(seconds=seconds)
    assert parse_retry_after({"retry-after": format_datetime(when, usegmt=True)}, now=NOW) == float(seconds)


def test_rate_limited_error_carries_retry_after() -> None:
    err = classify_http_error("openai", 429, openai_body("requests", "rate_limit_exceeded"), {"retry-after": "2"})
    assert err.failure_class is F.RATE_LIMITED and err.retry_after == 2.0
    err_ms = classify_http_error("anthropic", 429, anthropic_body("rate_limit_error"),
                                 httpx.Headers({"retry-after-ms": "2500", "retry-after": "3"}))
    assert err_ms.retry_after == 2.5
    assert classify_http_error("p", 500, b"", {}).retry_after is None


# ------------------------------------------------------------------ issue 10: the server's retry signals


@pytest.mark.parametrize(("value", "expected"), [
    ("false", False), ("true", True), ("False", False), (" TRUE ", True), ("maybe", None), ("", None), (None, None),
])
def test_x_should_retry_header_is_carried_on_the_error(value: str | None, expected: bool | None) -> None:
    headers = {} if value is None else {"x-should-retry": value}
    err = classify_http_error("openai", 503, openai_body("service_unavailable_error", None), headers)
    assert err.failure_class is F.SERVER_ERROR  # the class is still the status's: the advice travels beside it
    assert err.should_retry is expected


def test_retry_after_http_date_is_kept_as_a_moment_for_the_runs_clock() -> None:
    date = "Mon, 30 Nov 2026 18:00:30 GMT"
    err = classify_http_error("anthropic", 429, anthropic_body("rate_limit_error"), {"retry-after": date})
    assert err.retry_after is None and err.retry_at == datetime(2026, 11, 30, 18, 0, 30, tzinfo=UTC)
    # measured against whatever clock the caller passes, not the wall clock when the error was built
    assert err.retry_delay(NOW) == 30.0
    assert err.retry_delay(NOW + timedelta(seconds=45)) == 0.0
    assert err.retry_delay(NOW.replace(tzinfo=None)) == 30.0  # naive = UTC
    seconds = classify_http_error("openai", 429, openai_body("requests", "rate_limit_exceeded"), {"retry-after": "4"})
    assert seconds.retry_after == 4.0 and seconds.retry_at is None and seconds.retry_delay(NOW) == 4.0
    assert classify_http_error("p", 500, b"", {}).retry_delay(NOW) is None


# ------------------------------------------------------ issue 10: context length and usage-policy refusals

# Claude API 400 for a prompt over the context window, as the API sends it (anthropics/claude-code #12186)
PROMPT_TOO_LONG = {"type": "error", "error": {"type": "invalid_request_error",
                                              "message": "prompt is too long: 208310 tokens > 200000 maximum"},
                   "request_id": "req_011CVQe1dLrGNMJyE1ghG1av"}
# OpenAI 400 for a prompt its usage-policy check flagged (openai/codex #7250)
INVALID_PROMPT = {"error": {"message": "Invalid prompt: your prompt was flagged as potentially violating our usage "
                                       "policy. Please try again with a different prompt: "
                                       "https://platform.openai.com/docs/guides/reasoning#advice-on-prompting",
                            "type": "invalid_request_error", "param": None, "code": "invalid_prompt"}}


def test_anthropic_prompt_is_too_long_is_context_length() -> None:
    err = classify_http_error("anthropic", 400, PROMPT_TOO_LONG, {"request-id": "req_1"})
    assert err.failure_class is F.CONTEXT_LENGTH
    assert err.code == "invalid_request_error" and "208310 tokens > 200000 maximum" in str(err)
    limit = anthropic_body("invalid_request_error", "input length and `max_tokens` exceed context limit: "
                           "188240 + 21333 > 200000, decrease input length or `max_tokens` and try again")
    assert classify_http_error("anthropic", 400, limit, {}).failure_class is F.CONTEXT_LENGTH
    # inside a stream (no status) the same error event is classified the same way
    assert classify_error_body("anthropic", PROMPT_TOO_LONG).failure_class is F.CONTEXT_LENGTH


@pytest.mark.parametrize(("status", "body"), [
    (400, anthropic_body("invalid_request_error", "messages: the prompt is too long for this tool")),  # not the start
    (400, anthropic_body("invalid_request_error", "max_tokens: prompt is too long?")),
    (429, anthropic_body("rate_limit_error", "prompt is too long: 1 tokens > 0 maximum")),  # another type
    (413, anthropic_body("invalid_request_error", "prompt is too long: 9 tokens > 1 maximum")),  # another status
])
def test_the_context_length_wording_is_matched_only_in_its_documented_shape(status: int, body: Any) -> None:
    assert classify_http_error("anthropic", status, body, {}).failure_class is not F.CONTEXT_LENGTH


def test_openai_invalid_prompt_is_content_filter() -> None:
    err = classify_http_error("openai", 400, INVALID_PROMPT, {})
    assert err.failure_class is F.CONTENT_FILTER and err.code == "invalid_prompt"
    assert classify_error_body("openai", {"type": "error", "code": "invalid_prompt", "message": "flagged"}
                               ).failure_class is F.CONTENT_FILTER


# ------------------------------------------- issue 10: a request-validation error sent as a 500 (llama.cpp)

# Recorded from llama-cpp-python's server (python -m seamkit_llamacpp.server) answering a chat request
# with response_format {"type": "json_schema", ...}: HTTP 500, content-type application/json.
LLAMA_CPP_VALIDATION_500 = {"error": {
    "message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
               "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
               "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File \"/srv/llama_cpp/server/app.py\", "
               "line 376, in create_chat_completion\n    POST /v1/chat/completions",
    "type": "internal_server_error", "param": None, "code": None}}


def test_a_500_request_validation_error_is_invalid_request_naming_the_parameter() -> None:
    err = classify_http_error("openai_chat", 500, LLAMA_CPP_VALIDATION_500, {"x-request-id": "fbbc005e"})
    assert err.failure_class is F.INVALID_REQUEST
    assert not err.failure_class.transient
    assert err.param == "response_format.type" and err.status == 500
    two = {"error": {"message": "2 validation errors:\n  {'type': 'missing', 'loc': ('body', 'messages', 0, "
                                "'content'), 'msg': 'Field required'}\n  {'type': 'float_parsing', ...}",
                     "type": "internal_server_error", "param": None, "code": None}}
    assert classify_http_error("p", 500, two, {}).param == "messages.0.content"
    # any other 500 stays a transient server error
    crash = {"error": {"message": "llama_decode returned -3", "type": "internal_server_error", "param": None,
                       "code": None}}
    assert classify_http_error("p", 500, crash, {}).failure_class is F.SERVER_ERROR
    assert classify_http_error("p", 500, openai_body("server_error", None), {}).param is None


def test_the_body_param_is_carried_on_the_error() -> None:
    body = {"error": {"message": "Unsupported parameter: 'temperature'", "type": "invalid_request_error",
                      "param": "temperature", "code": "unsupported_parameter"}}
    assert classify_http_error("openai", 400, body, {}).param == "temperature"


# --------------------------------------------------------- issue 10: a 2xx body that is not the answer

CAPTIVE_PORTAL = (b"<!DOCTYPE html>\n<html><head><title>Hotel WiFi - Sign in</title></head>\n"
                  b"<body><form action='/login'>Room number: <input name=room></form></body></html>")


def test_an_html_page_with_200_is_unknown_naming_type_and_first_characters() -> None:
    err = classify_unexpected_body("openai", 200, "text/html; charset=utf-8", CAPTIVE_PORTAL,
                                   expected="an event stream")
    assert err.failure_class is F.UNKNOWN and not err.failure_class.transient
    assert err.code == "unexpected_body" and err.status == 200
    msg = str(err)
    assert "expected an event stream, got text/html; charset=utf-8" in msg
    assert "<!DOCTYPE html> <html><head><title>Hotel WiFi - Sign in</title>" in msg  # whitespace folded


def test_an_unexpected_body_quotes_a_bounded_masked_start() -> None:
    body = ("x" * 150 + " key=sk-live-SECRET-123456 " + "y" * 5000).encode()
    err = classify_unexpected_body("p", 200, "", body, expected="a JSON object", secrets=["sk-live-SECRET-123456"])
    msg = str(err)
    assert "sk-live" not in msg and "***" in msg and "got no content type" in msg
    assert len(msg) < 400 and msg.endswith("…'")


def test_an_error_object_sent_with_200_is_classified_from_its_body() -> None:
    ctx = openai_body("invalid_request_error", "context_length_exceeded")
    err = classify_unexpected_body("openai", 200, "application/json", json.dumps(ctx).encode(),
                                   expected="an event stream")
    assert err.failure_class is F.CONTEXT_LENGTH and err.status == 200
    over = classify_unexpected_body("anthropic", 200, "application/json",
                                    json.dumps(anthropic_body("overloaded_error", "Overloaded")).encode(),
                                    expected="an event stream")
    assert over.failure_class is F.OVERLOADED


@pytest.mark.parametrize(("body", "is_error"), [
    ({"error": {"message": "m"}}, True),
    ({"error": "boom"}, True),
    ({"type": "error", "error": {"type": "overloaded_error"}}, True),
    ({"error": None, "object": "response", "status": "completed"}, False),
    ({"error": {"code": "server_error"}, "object": "response", "status": "failed"}, False),  # a response
    ({"error": {}}, False),
    ({"choices": []}, False),
    ([{"error": "x"}], False),
])
def test_is_error_body(body: Any, is_error: bool) -> None:
    assert is_error_body(body) is is_error


@given(st.integers(min_value=0, max_value=10**6), st.integers(min_value=-10**6, max_value=10**6))
def test_retry_at_is_measured_against_the_given_now(seconds: int, shift: int) -> None:
    when = NOW + timedelta(seconds=seconds)
    err = classify_http_error("p", 503, b"", {"retry-after": format_datetime(when, usegmt=True)})
    now = NOW + timedelta(seconds=shift)
    assert err.retry_delay(now) == max(0.0, float(seconds - shift))


def test_a_transport_error_names_where_the_request_went_without_path_or_query() -> None:
    # a newcomer saw "ConnectError: All connection attempts failed" and could not tell which server
    request = httpx.Request("POST", "http://user:pw-secret@127.0.0.1:9/v1/chat/completions?key=sk-q-secret")
    err = classify_transport_error("p", httpx.ConnectError("All connection attempts failed", request=request))
    assert str(err).endswith("All connection attempts failed (http://127.0.0.1:9)"), str(err)
    assert "pw-secret" not in str(err) and "sk-q-secret" not in str(err) and "/v1" not in str(err)
    # without a request (raised before sending): no origin
    assert "(" not in str(classify_transport_error("p", httpx.ConnectError("refused")))
