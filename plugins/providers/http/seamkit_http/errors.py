"""Classify provider failures into :class:`seamkit.errors.ProviderError` with a :class:`FailureClass`.

Classification reads the HTTP status and the error body's ``type`` / ``code`` fields, not the
human-readable message (the two documented exceptions are rule 2 below, each matched against a fixed
wording with its body shape and status, never a keyword search). Body shapes understood:

- OpenAI (Chat Completions, Responses, and OpenAI-compatible servers):
  ``{"error": {"message": str, "type": str, "param": str | null, "code": str | null}}``;
  the Responses API ``error`` stream event puts ``code`` / ``message`` at the top level.
- Anthropic: ``{"type": "error", "error": {"type": str, "message": str, "details"?: {"error_code": str}},
  "request_id": str}``, with the request id also in the ``request-id`` header (OpenAI: ``x-request-id``).

References: OpenAI "Error codes" guide (platform.openai.com/docs/guides/error-codes); Claude API
"Errors" (platform.claude.com/docs/en/api/errors) and "Rate limits" (spend-cap 429 body);
RFC 9110 §10.2.3 (Retry-After); openai-python / anthropic-sdk-python ``BaseClient._should_retry``
(``x-should-retry``).

Rules, first match wins:

1. quota codes (OpenAI ``insufficient_quota``, ``billing_hard_limit_reached``, ``billing_not_active``,
   ``credit_balance_exhausted``, ``*_spend_limit_exceeded``, ``organization_usage_limit_exceeded``;
   Anthropic ``billing_error`` and ``error.details.error_code`` ``enforced_spend_limit_reached``)
   -> ``quota`` (permanent, even on a 429);
2. the two shapes recognised by their message, each only with the status and type shown:

   a. Anthropic's context-window refusal, ``400`` (or an error event without a status)
      ``{"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long:
      208310 tokens > 200000 maximum"}}``, or with the message ``"input length and `max_tokens`
      exceed context limit: 188240 + 21333 > 200000, ..."``: Anthropic gives this refusal no code
      of its own, and compaction and fallback need it as ``context_length``. Matched: the message
      *starts with* one of those two phrases (case-insensitively) and the type is
      ``invalid_request_error``; anything else with that type stays ``invalid_request``. Wording as
      the API sends it (anthropics/claude-code issue 12186; the SDKs' users parse the same phrase).
   b. llama-cpp-python's server answering a request its FastAPI model refuses: it renders the
      ``RequestValidationError`` into an OpenAI-shaped body with status ``500``, type
      ``internal_server_error`` and no code, the message starting ``"1 validation error:"`` and
      holding pydantic's error dicts (``'loc': ('body', 'response_format', 'type')``; read from
      ``llama_cpp/server/errors.py`` and a live server). Matched: a 5xx (or no status), no code,
      a message starting ``"<N> validation error"`` whose first error has a ``loc`` starting with
      ``'body'`` -> ``invalid_request`` (sending the same body again fails the same way), with
      ``param`` the rest of that ``loc`` joined by dots (``response_format.type``);
3. ``context_length_exceeded`` (and llama.cpp's ``exceed_context_size_error``) -> ``context_length``;
   ``content_filter`` / ``content_policy_violation`` and OpenAI's ``invalid_prompt`` (a prompt
   flagged as violating the usage policy; 400 ``invalid_request_error``) -> ``content_filter``;
4. Anthropic error types that name their class: ``overloaded_error`` -> ``overloaded``,
   ``rate_limit_error`` -> ``rate_limited``, ``api_error`` -> ``server_error``, ``timeout_error`` ->
   ``timeout``, ``authentication_error`` / ``permission_error`` -> ``authentication``; OpenAI codes
   ``server_is_overloaded`` -> ``overloaded`` and ``slow_down`` -> ``rate_limited``;
5. the status: 401, 403 -> ``authentication``; 402 -> ``quota``; 408 -> ``timeout``; 429 ->
   ``rate_limited``; 400, 404, 413, 422 (and other 4xx) -> ``invalid_request``; 500, 502, 503 (and
   other 5xx) -> ``server_error``; 504 -> ``timeout``; 529 -> ``overloaded``;
6. without an error status (an error event inside a stream, an error object sent with 200): the
   remaining type/code names (``invalid_request_error``, ``server_error``, ``rate_limit_exceeded``,
   ...), else ``unknown``.

Besides the class, each error carries the server's retry signals: ``retry_after`` (seconds, from
``retry-after-ms`` or a numeric ``retry-after``) or ``retry_at`` (the moment a ``retry-after``
HTTP-date names, to be measured against the run's clock, not the wall clock when the error was
built), and ``should_retry`` from ``x-should-retry: true|false`` (``None`` without it); ``param``
is the body's ``error.param``.

A 2xx answer whose body is not what the call expects (an HTML page from a captive portal or proxy,
a JSON document instead of an event stream) is :func:`classify_unexpected_body`'s: an error object
in it is classified by the rules above, anything else is ``unknown`` (see there why).

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
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
from seamkit.errors import FailureClass, ProviderError

__all__ = [
    "classify_http_error",
    "classify_error_body",
    "classify_transport_error",
    "classify_unexpected_body",
    "is_error_body",
    "parse_retry_after",
]

_QUOTA = frozenset({
    # OpenAI (error.type insufficient_quota; error.code names the billing cause)
    "insufficient_quota", "billing_hard_limit_reached", "billing_not_active", "credit_balance_exhausted",
    "organization_spend_limit_exceeded", "project_spend_limit_exceeded", "organization_usage_limit_exceeded",
    # Anthropic: 402 billing_error; 429 rate_limit_error with error.details.error_code enforced_spend_limit_reached
    "billing_error", "enforced_spend_limit_reached",
})
_CONTEXT = frozenset({"context_length_exceeded", "exceed_context_size_error"})
# invalid_prompt: OpenAI's 400 for a prompt its usage-policy check flagged ("Invalid prompt: your prompt
# was flagged as potentially violating our usage policy"): a content decision, not a malformed request.
_FILTER = frozenset({"content_filter", "content_policy_violation", "invalid_prompt"})
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


def _retry_after_parts(h: Mapping[str, str]) -> tuple[float | None, datetime | None]:
    """``(seconds, moment)`` the lower-cased headers ``h`` ask to wait: seconds from
    ``retry-after-ms`` or a numeric ``retry-after``; the moment (aware UTC) from an HTTP-date
    ``retry-after``; ``(None, None)`` when absent or unreadable."""
    ms = h.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms.strip())
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value / 1000.0, None
    ra = h.get("retry-after")
    if ra is None:
        return None, None
    ra = ra.strip()
    if not ra:
        return None, None
    try:
        seconds = float(ra)
    except ValueError:
        pass
    else:
        return (seconds if math.isfinite(seconds) and seconds >= 0 else None), None
    try:
        when = parsedate_to_datetime(ra)
    except (TypeError, ValueError, IndexError):
        return None, None
    if when is None:  # pragma: no cover - older Pythons
        return None, None
    if when.tzinfo is None:  # HTTP-dates are always GMT
        when = when.replace(tzinfo=UTC)
    return None, when


def parse_retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """The delay in seconds the server asked for, or ``None``.

    Reads ``retry-after-ms`` (milliseconds; sent by OpenAI and Anthropic) first, then
    ``retry-after`` as delay-seconds or an HTTP-date (RFC 9110 §10.2.3; IMF-fixdate, and the
    obsolete RFC 850 and asctime forms). A date in the past gives ``0.0``. Header names are matched
    case-insensitively; negative, non-finite or unparseable values give ``None``. ``now`` (aware
    datetime, default the current UTC time) is the reference for dates. (A classified
    :class:`ProviderError` keeps a date as ``retry_at`` instead, for the run's clock to measure.)
    """
    seconds, when = _retry_after_parts(_lower_headers(headers))
    if when is None:
        return seconds
    ref = now if now is not None else datetime.now(UTC)
    if ref.tzinfo is None:
        ref = ref.replace(tzinfo=UTC)
    return max(0.0, (when - ref).total_seconds())


def _should_retry(h: Mapping[str, str]) -> bool | None:
    """The ``x-should-retry`` header (OpenAI, Anthropic; not a standard header): ``True`` /
    ``False`` for ``true`` / ``false`` (any case), else ``None`` (as the official SDKs, which obey
    only those two values)."""
    value = h.get("x-should-retry", "").strip().lower()
    return True if value == "true" else False if value == "false" else None


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


def is_error_body(body: Any) -> bool:
    """Whether a decoded JSON value is an error envelope rather than a response: Anthropic's
    ``{"type": "error", "error": {...}}``, or an object whose ``error`` is a non-empty object or
    string (OpenAI ``{"error": {...}}``, ``{"error": "message"}`` from some compatible servers)
    that is not a response object carrying an ``error`` field (a Responses API ``response`` has
    ``"object": "response"``, ``"error": null`` or its failure)."""
    if not isinstance(body, Mapping):
        return False
    err = body.get("error")
    if not (isinstance(err, Mapping) and err) and not (isinstance(err, str) and err):
        return False
    if body.get("type") == "error":
        return True
    return not any(key in body for key in ("object", "choices", "output", "content"))


def _error_fields(body: Mapping[str, Any] | None) -> tuple[str | None, str | None, str | None, str | None]:
    """(type, code, message, param) from an OpenAI, Anthropic or Responses-event error body. ``code``
    is ``error.code`` (OpenAI) or ``error.details.error_code`` (Anthropic)."""
    if body is None:
        return None, None, None, None
    err = body.get("error")
    if isinstance(err, Mapping):
        src: Mapping[str, Any] = err
    elif isinstance(err, str):  # {"error": "message"} from some compatible servers
        message = body.get("message")
        return None, None, message if isinstance(message, str) and message else err, None
    else:
        src = body
    etype = src.get("type")
    code = src.get("code")
    details = src.get("details")
    if not (isinstance(code, str) and code) and isinstance(details, Mapping):
        code = details.get("error_code")
    message = src.get("message")
    param = src.get("param")
    if src is body and etype == "error":  # Responses API stream event {"type": "error", "code": ...}
        etype = None
    return (etype if isinstance(etype, str) and etype else None,
            code if isinstance(code, str) and code else None,
            message if isinstance(message, str) else None,
            param if isinstance(param, str) and param else None)


# Rule 2a: Anthropic's context-window refusals (type invalid_request_error, no code of their own).
_ANTHROPIC_CONTEXT = re.compile(r"\s*(prompt is too long\b|input length and `max_tokens` exceed context limit\b)",
                                re.IGNORECASE)
# Rule 2b: pydantic's rendering of a FastAPI RequestValidationError, as llama-cpp-python's server
# sends it in a 500: "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format',
# 'type'), ...". Group 1: the rest of the first error's loc after 'body'.
_VALIDATION = re.compile(r"\s*\d+ validation errors?\b[^{]*\{[^{}]*?'loc': \('body'((?:, (?:'[^']*'|\d+))*),?\)")


def _message_rule(status: int | None, etype: str | None, code: str | None,
                  message: str | None) -> tuple[FailureClass, str | None] | None:
    """Rule 2 (see the module doc): ``(class, param)`` for the two shapes recognised by their
    message, else ``None``."""
    if not message:
        return None
    if etype == "invalid_request_error" and status in (400, None) and _ANTHROPIC_CONTEXT.match(message):
        return FailureClass.CONTEXT_LENGTH, None
    if code is None and (status is None or status >= 500):
        m = _VALIDATION.match(message)
        if m is not None:
            parts = [p.strip().strip("'") for p in m.group(1).split(",") if p.strip()]
            return FailureClass.INVALID_REQUEST, ".".join(parts) or None
    return None


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
    etype, code, message, param = _error_fields(parsed)
    h = _lower_headers(headers)
    # the class is decided on the status only when it says "error": a 2xx carrying an error object
    # is classified from the object's names alone (rule 6)
    error_status = status if status is not None and status >= 400 else None
    names_quota = any(n.lower() in _QUOTA for n in (code, etype) if n)
    by_message = None if names_quota else _message_rule(error_status, etype, code, message)
    if by_message is not None:
        failure, found_param = by_message
        param = param or found_param
    else:
        failure = _classify(error_status, etype, code)
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
    if param is not None and len(param) > 200:
        param = _cut(param, 200)
    prefix = f"HTTP {status}" if status is not None else "stream error"
    if label:
        prefix += f" ({label})"
    retry_after, retry_at = _retry_after_parts(h) if h else (None, None)
    request_id = h.get("request-id") or h.get("x-request-id")
    if request_id is None and parsed is not None and isinstance(parsed.get("request_id"), str):
        request_id = parsed["request_id"]  # Anthropic repeats it in the body
    return ProviderError(
        _mask(f"{prefix}: {message}", secrets), failure, provider=provider, status=status,
        retry_after=retry_after, code=label, request_id=request_id, should_retry=_should_retry(h),
        retry_at=retry_at, param=_mask(param, secrets) if param else None,
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


MAX_PREVIEW_CHARS = 200
"""The longest start of an unexpected 2xx body quoted in a message (characters, whitespace folded)."""


def classify_unexpected_body(provider: str, status: int, content_type: str, body: bytes, *, expected: str,
                             headers: Mapping[str, str] | None = None, secrets: Iterable[str] = ()) -> ProviderError:
    """The :class:`ProviderError` for a 2xx answer whose body is not what the call expects
    (returned, not raised).

    ``status``: the (2xx) HTTP status; ``content_type``: the response's ``content-type`` as sent
    (``""`` when absent); ``body``: the start of the body (callers read at most a bounded prefix);
    ``expected``: what the call wanted, for the message (``"an event stream"``, ``"a JSON
    object"``). An error object in the body (:func:`is_error_body`: OpenAI's ``{"error": {...}}``
    or Anthropic's ``{"type": "error", ...}`` sent with 200) is classified from its type/code like
    any error body. Anything else (an HTML login page from a captive portal or a proxy, a plain
    text page, a JSON document of the wrong shape) is ``unknown`` with code ``unexpected_body``,
    and the message names the content type and quotes the body's first
    :data:`MAX_PREVIEW_CHARS` characters (secrets masked, whitespace folded).

    Why ``unknown``: the answer did not come from the provider's API (a portal, a proxy, a
    ``base_url`` pointing at a web site), so nothing says a later try would get a different one;
    ``server_error`` is transient and would make ``retry`` hammer the portal, and
    ``invalid_request`` would blame a request the API never saw. ``unknown`` is permanent for
    retry, is not a default ``fallback`` / ``circuit_breaker`` class, and says what is true: the
    failure could not be classified.
    """
    parsed, text = _parse_body(body)
    h = _lower_headers(headers)
    if parsed is not None and is_error_body(parsed):
        return _build(provider, status, parsed, text, headers, secrets)
    secret_list = [s for s in secrets if s]
    folded = " ".join(_mask(text, secret_list).split())
    preview = folded if len(folded) <= MAX_PREVIEW_CHARS else folded[:MAX_PREVIEW_CHARS] + "…"
    got = content_type.strip() or "no content type"
    shown = f": {preview!r}" if preview else " (empty body)"
    request_id = h.get("request-id") or h.get("x-request-id")
    return ProviderError(
        _mask(f"HTTP {status}: expected {expected}, got {got}{shown}", secret_list), FailureClass.UNKNOWN,
        provider=provider, status=status, code="unexpected_body", request_id=request_id,
        should_retry=_should_retry(h),
    )


def classify_transport_error(provider: str, exc: httpx.HTTPError, *, secrets: Iterable[str] = ()) -> ProviderError:
    """The :class:`ProviderError` for an ``httpx`` failure without a response (returned, not raised).

    Timeouts (connect, read, write, pool) -> ``timeout``; an unsupported URL scheme ->
    ``invalid_request``; connection, read and protocol errors (including a dropped stream) ->
    ``server_error``. The message names the exception type, its text and where the request went
    (scheme, host and port only: a path, a query or user info may carry a key), e.g.
    ``ConnectError: All connection attempts failed (http://127.0.0.1:9)``.
    """
    if isinstance(exc, httpx.TimeoutException):
        failure = FailureClass.TIMEOUT
    elif isinstance(exc, httpx.UnsupportedProtocol):
        failure = FailureClass.INVALID_REQUEST
    else:
        failure = FailureClass.SERVER_ERROR
    detail = str(exc).strip() or "no detail"
    return ProviderError(_mask(f"{type(exc).__name__}: {detail}{_origin(exc)}", secrets), failure, provider=provider)


def _origin(exc: httpx.HTTPError) -> str:
    """`` (scheme://host:port)`` of the request ``exc`` is about; ``""`` when it has none."""
    try:
        url = exc.request.url
    except RuntimeError:  # raised without a request (httpx sets it when sending)
        return ""
    if not url.host:
        return ""
    port = f":{url.port}" if url.port is not None else ""
    return f" ({url.scheme}://{url.host}{port})"
