"""seamkit-http: the HTTP layer shared by seamkit's provider plugins.

- :class:`ServerSentEvent`, :class:`SSEDecoder`, :func:`aiter_sse`, :func:`is_done`: an incremental
  WHATWG server-sent-events decoder working on bytes.
- :func:`make_client`, :func:`shared_client`: pooled ``httpx.AsyncClient`` objects (HTTP/2 when ``h2``
  is importable).
- :func:`open_sse`, :func:`post_json`: one request each, with every failure raised as a classified
  :class:`seamkit.errors.ProviderError`.
- :func:`classify_http_error`, :func:`classify_error_body`, :func:`classify_transport_error`,
  :func:`classify_unexpected_body`, :func:`is_error_body`, :func:`parse_retry_after`: error
  classification from status code and the body's error type/code, and the server's retry signals.
- :func:`is_loopback`, :func:`local_pricing`, :data:`FREE`: the one local-pricing rule of the
  HTTP provider plugins (a loopback server costs 0 unless its model is in the price table).
- :class:`ReplayTransport`, :class:`Reply`: an ``httpx`` transport replaying recorded responses, for
  wire-level tests of provider plugins.
"""

from __future__ import annotations

from seamkit_http.client import make_client, open_sse, post_json, shared_client
from seamkit_http.errors import (
    classify_error_body,
    classify_http_error,
    classify_transport_error,
    classify_unexpected_body,
    is_error_body,
    parse_retry_after,
)
from seamkit_http.local import FREE, is_loopback, local_pricing
from seamkit_http.replay import ReplayTransport, Reply
from seamkit_http.sse import ServerSentEvent, SSEDecoder, aiter_sse, is_done
from seamkit_http.wire import json_kind

__all__ = [
    "json_kind",
    "ServerSentEvent",
    "SSEDecoder",
    "aiter_sse",
    "is_done",
    "make_client",
    "shared_client",
    "open_sse",
    "post_json",
    "classify_http_error",
    "classify_error_body",
    "classify_transport_error",
    "classify_unexpected_body",
    "is_error_body",
    "parse_retry_after",
    "ReplayTransport",
    "Reply",
    "FREE",
    "is_loopback",
    "local_pricing",
]
