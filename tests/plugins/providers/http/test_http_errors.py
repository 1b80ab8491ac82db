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
from seamkit_http import classify_error_body, classify_http_error, classify_transport_error, parse_retry_after

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
    ({"code": "invalid_prompt", "message": "nope"}, F.INVALID_REQUEST, "invalid_prompt"),
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
