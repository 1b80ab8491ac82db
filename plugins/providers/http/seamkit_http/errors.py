"""Classify provider failures into :class:`seamkit.errors.ProviderError` with a :class:`FailureClass`.

Classification reads the HTTP status and the error body's ``type`` / ``code`` fields, never
substrings of the human-readable message. Body shapes understood:

- OpenAI (Chat Completions, Responses, and OpenAI-compatible servers):
  ``{"error": {"message": str, "type": str, "param": str | null, "code": str | null}}``;
  the Responses API ``error`` stream event puts ``code`` / ``message`` at the top level.
- Anthropic: ``{"type": "error", "error": {"type": str, "message": str, "details"?: {"error_code": str}},
  "request_id": str}``, with the request id also in the ``request-id`` header (OpenAI: ``x-request-id``).

References: OpenAI "Error codes" guide (platform.openai.com/docs/guides/error-codes); Claude API
"Errors" (platform.claude.com/docs/en/api/errors) and "Rate limits" (spend-cap 429 body);
RFC 9110 §10.2.3 (Retry-After).

Rules, first match wins:

1. quota codes (OpenAI ``insufficient_quota``, ``billing_hard_limit_reached``, ``billing_not_active``,
   ``credit_balance_exhausted``, ``*_spend_limit_exceeded``, ``organization_usage_limit_exceeded``;
   Anthropic ``billing_error`` and ``error.details.error_code`` ``enforced_spend_limit_reached``)
   -> ``quota`` (permanent, even on a 429);
2. ``context_length_exceeded`` (and llama.cpp's ``exceed_context_size_error``) -> ``context_length``;
   ``content_filter`` / ``content_policy_violation`` -> ``content_filter``;
3. Anthropic error types that name their class: ``overloaded_error`` -> ``overloaded``,
   ``rate_limit_error`` -> ``rate_limited``, ``api_error`` -> ``server_error``, ``timeout_error`` ->
   ``timeout``, ``authentication_error`` / ``permission_error`` -> ``authentication``; OpenAI codes
   ``server_is_overloaded`` -> ``overloaded`` and ``slow_down`` -> ``rate_limited``;
4. the status: 401, 403 -> ``authentication``; 402 -> ``quota``; 408 -> ``timeout``; 429 ->
   ``rate_limited``; 400, 404, 413, 422 (and other 4xx) -> ``invalid_request``; 500, 502, 503 (and
   other 5xx) -> ``server_error``; 504 -> ``timeout``; 529 -> ``overloaded``;
5. without a status (an error event inside a stream): the remaining type/code names
   (``invalid_request_error``, ``server_error``, ``rate_limit_exceeded``, ...), else ``unknown``.

Messages carry the provider's own message (or, for a body that is not a known error shape, the
start of the body) and never a request header; values passed as ``secrets`` are masked as well
(before cutting, so no part of a secret survives at the cut). The provider's message is cut to
:data:`MAX_MESSAGE_CHARS` characters and a body that is not an error object to
:data:`MAX_BODY_CHARS`, ending with ``"… (N more characters)"``: a server answering a 2 MB message
does not put 2 MB into logs and terminals.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
from seamkit.errors import FailureClass, ProviderError

__all__ = ["classify_http_error", "classify_error_body", "classify_transport_error", "parse_retry_after"]

_QUOTA = frozenset({
    # OpenAI (error.type insufficient_quota; error.code names the billing cause)
    "insufficient_quota", "billing_hard_limit_reached", "billing_not_active", "credit_balance_exhausted",
    "organization_spend_limit_exceeded", "project_spend_limit_exceeded", "organization_usage_limit_exceeded",
    # Anthropic: 402 billing_error; 429 rate_limit_error with error.details.error_code enforced_spend_limit_reached
    "billing_error", "enforced_spend_limit_reached",
})
_CONTEXT = frozenset({"context_length_exceeded", "exceed_context_size_error"})
_FILTER = frozenset({"content_filter", "content_policy_violation"})
_STRONG_TYPES: Mapping[str, FailureClass] = {
    "overloaded_error": FailureClass.OVERLOADED,
    "rate_limit_error": FailureClass.RATE_LIMITED,
    "api_error": FailureClass.SERVER_ERROR,
    "timeout_error": FailureClass.TIMEOUT,
    "authentication_error": FailureClass.AUTHENTICATION,
    "permission_error": FailureClass.AUTHENTICATION,
    "server_is_overloaded": FailureClass.OVERLOADED,  # OpenAI 503 code
    "slow_down": FailureClass.RATE_LIMITED,  # OpenAI 429 (formerly 503) rate_limit_error code
}
_STATUS: Mapping[int, FailureClass] = {
    400: FailureClass.INVALID_REQUEST,
    401: FailureClass.AUTHENTICATION,
    402: FailureClass.QUOTA,
    403: FailureClass.AUTHENTICATION,
    404: FailureClass.INVALID_REQUEST,
    408: FailureClass.TIMEOUT,
    413: FailureClass.INVALID_REQUEST,
    422: FailureClass.INVALID_REQUEST,
    429: FailureClass.RATE_LIMITED,
    500: FailureClass.SERVER_ERROR,
    502: FailureClass.SERVER_ERROR,
    503: FailureClass.SERVER_ERROR,
    504: FailureClass.TIMEOUT,
    529: FailureClass.OVERLOADED,
}
# Names used when no status is known (error events inside a stream).
_WEAK_NAMES: Mapping[str, FailureClass] = {
    "invalid_request_error": FailureClass.INVALID_REQUEST,
    "not_found_error": FailureClass.INVALID_REQUEST,
    "request_too_large": FailureClass.INVALID_REQUEST,
    "invalid_prompt": FailureClass.INVALID_REQUEST,
    "model_not_found": FailureClass.INVALID_REQUEST,
    "invalid_api_key": FailureClass.AUTHENTICATION,
    "server_error": FailureClass.SERVER_ERROR,
    "service_unavailable_error": FailureClass.SERVER_ERROR,
    "internal_error": FailureClass.SERVER_ERROR,
    "rate_limit_exceeded": FailureClass.RATE_LIMITED,
    "overloaded": FailureClass.OVERLOADED,
    "timeout": FailureClass.TIMEOUT,
}
MAX_MESSAGE_CHARS = 1000
"""The longest provider error message kept (characters); the rest is replaced by a count."""
MAX_BODY_CHARS = 500
"""The longest start of a non-error-object body (HTML, plain text) kept in a message (characters)."""


def _mask(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if secret and len(secret) >= 4 and secret in text:
            text = text.replace(secret, "***")
    return text


def _cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, followed by ``"… (N more characters)"`` when cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def _lower_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    if not headers:
        return {}
    return {str(k).lower(): str(v) for k, v in headers.items()}


def parse_retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """The delay in seconds the server asked for, or ``None``.

    Reads ``retry-after-ms`` (milliseconds; sent by OpenAI and Anthropic) first, then
    ``retry-after`` as delay-seconds or an HTTP-date (RFC 9110 §10.2.3; IMF-fixdate, and the
    obsolete RFC 850 and asctime forms). A date in the past gives ``0.0``. Header names are matched
    case-insensitively; negative, non-finite or unparseable values give ``None``. ``now`` (aware
    datetime, default the current UTC time) is the reference for dates.
    """
    h = _lower_headers(headers)
    ms = h.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms.strip())
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value / 1000.0
    ra = h.get("retry-after")
    if ra is None:
        return None
    ra = ra.strip()
    if not ra:
        return None
    try:
        seconds = float(ra)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    try:
        when = parsedate_to_datetime(ra)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:  # pragma: no cover - older Pythons
        return None
    if when.tzinfo is None:  # HTTP-dates are always GMT
        when = when.replace(tzinfo=UTC)
    ref = now if now is not None else datetime.now(UTC)
    if ref.tzinfo is None:
        ref = ref.replace(tzinfo=UTC)
    return max(0.0, (when - ref).total_seconds())


def _parse_body(body: bytes | str | Mapping[str, Any] | None) -> tuple[Mapping[str, Any] | None, str]:
    """(the body as a JSON object when it is one, the body as text)."""
    if body is None:
        return None, ""
    if isinstance(body, Mapping):
        return body, ""
    text = body.decode("utf-8", "replace") if isinstance(body, (bytes, bytearray)) else str(body)
    try:
        parsed = json.loads(text)
    except ValueError:
        return None, text
    return (parsed if isinstance(parsed, Mapping) else None), text


def _error_fields(body: Mapping[str, Any] | None) -> tuple[str | None, str | None, str | None]:
    """(type, code, message) from an OpenAI, Anthropic or Responses-event error body. ``code`` is
    ``error.code`` (OpenAI) or ``error.details.error_code`` (Anthropic)."""
    if body is None:
        return None, None, None
    err = body.get("error")
    if isinstance(err, Mapping):
        src: Mapping[str, Any] = err
    elif isinstance(err, str):  # {"error": "message"} from some compatible servers
        message = body.get("message")
        return None, None, message if isinstance(message, str) and message else err
    else:
        src = body
    etype = src.get("type")
    code = src.get("code")
    details = src.get("details")
    if not (isinstance(code, str) and code) and isinstance(details, Mapping):
        code = details.get("error_code")
    message = src.get("message")
    if src is body and etype == "error":  # Responses API stream event {"type": "error", "code": ...}
        etype = None
    return (etype if isinstance(etype, str) and etype else None,
            code if isinstance(code, str) and code else None,
            message if isinstance(message, str) else None)


def _classify(status: int | None, etype: str | None, code: str | None) -> FailureClass:
    names = [n.lower() for n in (code, etype) if n]
    for name in names:
        if name in _QUOTA:
            return FailureClass.QUOTA
    for name in names:
        if name in _CONTEXT:
            return FailureClass.CONTEXT_LENGTH
        if name in _FILTER:
            return FailureClass.CONTENT_FILTER
    for name in names:
        if name in _STRONG_TYPES:
            return _STRONG_TYPES[name]
    if status is not None:
        if status in _STATUS:
            return _STATUS[status]
        if 400 <= status < 500:
            return FailureClass.INVALID_REQUEST
        if status >= 500:
            return FailureClass.SERVER_ERROR
    for name in names:
        if name in _WEAK_NAMES:
            return _WEAK_NAMES[name]
    return FailureClass.UNKNOWN


def _build(provider: str, status: int | None, parsed: Mapping[str, Any] | None, text: str,
           headers: Mapping[str, str] | None, secrets: Iterable[str]) -> ProviderError:
    secrets = [s for s in secrets if s]
    etype, code, message = _error_fields(parsed)
    h = _lower_headers(headers)
    failure = _classify(status, etype, code)
    if message:
        message = _cut(_mask(message, secrets), MAX_MESSAGE_CHARS)
    else:
        message = _cut(_mask(text.strip(), secrets), MAX_BODY_CHARS)
    if not message:
        if status is not None:
            try:
                message = httpx.codes.get_reason_phrase(status) or "error"
            except ValueError:  # pragma: no cover
                message = "error"
        else:
            message = "error event without a message"
    label = code or etype
    if label is not None and len(label) > 100:  # a type/code name, not a text: keep it short
        label = _cut(label, 100)
    prefix = f"HTTP {status}" if status is not None else "stream error"
    if label:
        prefix += f" ({label})"
    retry_after = parse_retry_after(h) if h else None
    request_id = h.get("request-id") or h.get("x-request-id")
    if request_id is None and parsed is not None and isinstance(parsed.get("request_id"), str):
        request_id = parsed["request_id"]  # Anthropic repeats it in the body
    return ProviderError(
        _mask(f"{prefix}: {message}", secrets), failure, provider=provider, status=status,
        retry_after=retry_after, code=label, request_id=request_id,
    )


def classify_http_error(provider: str, status: int, body: bytes | str | Mapping[str, Any] | None,
                        headers: Mapping[str, str], *, secrets: Iterable[str] = ()) -> ProviderError:
    """The :class:`ProviderError` for a non-2xx response (returned, not raised).

    ``status``: the HTTP status; ``body``: the response body (bytes, text or an already decoded
    JSON object; ``None`` when unread); ``headers``: the response headers (``retry-after-ms`` /
    ``retry-after`` fill ``retry_after`` in seconds; ``request-id`` / ``x-request-id`` fill
    ``request_id``). ``code`` is the body's error code or type. ``secrets`` are strings (API keys)
    to mask should the server echo them. See the module docstring for the rules.
    """
    parsed, text = _parse_body(body)
    return _build(provider, status, parsed, text, headers, secrets)


def classify_error_body(provider: str, body: Mapping[str, Any], *, status: int | None = None,
                        headers: Mapping[str, str] | None = None, secrets: Iterable[str] = ()) -> ProviderError:
    """The :class:`ProviderError` for an error sent inside a stream (returned, not raised).

    ``body`` is the event's decoded JSON: OpenAI ``{"error": {...}}``, Anthropic
    ``{"type": "error", "error": {"type", "message"}}``, a Responses API ``error`` event (``code`` /
    ``message`` at the top level) or a Responses ``response.error`` object. ``status`` is usually
    ``None`` (the stream's HTTP status was 200), so classification uses the type/code names.
    """
    return _build(provider, status, body, "", headers, secrets)


def classify_transport_error(provider: str, exc: httpx.HTTPError, *, secrets: Iterable[str] = ()) -> ProviderError:
    """The :class:`ProviderError` for an ``httpx`` failure without a response (returned, not raised).

    Timeouts (connect, read, write, pool) -> ``timeout``; an unsupported URL scheme ->
    ``invalid_request``; connection, read and protocol errors (including a dropped stream) ->
    ``server_error``. The message names the exception type and its text, never the request.
    """
    if isinstance(exc, httpx.TimeoutException):
        failure = FailureClass.TIMEOUT
    elif isinstance(exc, httpx.UnsupportedProtocol):
        failure = FailureClass.INVALID_REQUEST
    else:
        failure = FailureClass.SERVER_ERROR
    detail = str(exc).strip() or "no detail"
    return ProviderError(_mask(f"{type(exc).__name__}: {detail}", secrets), failure, provider=provider)
