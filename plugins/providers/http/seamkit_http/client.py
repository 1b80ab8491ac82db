"""Pooled ``httpx`` clients and the two request shapes providers use: an SSE stream and a JSON post.

Every failure leaves here as a classified :class:`seamkit.errors.ProviderError`: non-2xx responses
through :func:`~seamkit_http.errors.classify_http_error`, ``httpx`` transport errors (also in the
middle of a stream) through :func:`~seamkit_http.errors.classify_transport_error`. Values of
credential headers (``authorization``, ``x-api-key``, ``api-key``, and any header whose name
contains ``key``, ``token``, ``secret`` or ``auth``) are masked in error messages, and so are the
strings a provider passes as ``secrets=`` (its credentials and configured header values).
"""

from __future__ import annotations

import asyncio
import importlib.util
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx
from seamkit.errors import ProviderError

from seamkit_http.errors import (
    classify_http_error,
    classify_transport_error,
    classify_unexpected_body,
    is_error_body,
)
from seamkit_http.sse import ServerSentEvent, SSEDecoder

__all__ = ["make_client", "shared_client", "open_sse", "post_json"]

_SENSITIVE_WORDS = ("key", "token", "secret", "auth", "cookie")


def _h2_available() -> bool:
    return importlib.util.find_spec("h2") is not None


def make_client(*, timeout_s: float = 600, connect_timeout_s: float = 10, http2: bool | None = None,
                transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    """A new pooled ``httpx.AsyncClient``.

    ``timeout_s``: read/write/pool timeout in seconds (per network operation, so a long stream is
    fine as long as bytes keep arriving); ``connect_timeout_s``: connect timeout in seconds;
    ``http2``: ``None`` uses HTTP/2 when the ``h2`` package is importable (extra ``seamkit-http[http2]``),
    ``True`` requires it (``ImportError`` when missing), ``False`` forces HTTP/1.1; ``transport``
    replaces the network (tests pass a :class:`~seamkit_http.ReplayTransport`). Redirects are not
    followed. The caller closes the client (``await client.aclose()``).
    """
    if timeout_s <= 0 or connect_timeout_s <= 0:
        raise ValueError("timeout_s and connect_timeout_s must be positive seconds")
    use_h2 = _h2_available() if http2 is None else http2
    if use_h2 and not _h2_available():
        raise ImportError("HTTP/2 needs the 'h2' package: pip install 'seamkit-http[http2]'")
    return httpx.AsyncClient(
        timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s),
        http2=use_h2,
        transport=transport,
        limits=httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=30.0),
        follow_redirects=False,
    )


_SHARED: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[float, float], httpx.AsyncClient]] = (
    weakref.WeakKeyDictionary()
)


def shared_client(timeout_s: float = 600, connect_timeout_s: float = 10) -> httpx.AsyncClient:
    """The process-wide pooled client for these timeouts (seconds) on the running event loop.

    Clients are kept per event loop (an ``httpx`` pool cannot cross loops) and per settings, and
    re-created when closed. Call it from inside a coroutine; raises ``RuntimeError`` without a running
    loop. Providers call it at dispatch when no client was injected.
    """
    loop = asyncio.get_running_loop()
    per_loop = _SHARED.setdefault(loop, {})
    key = (float(timeout_s), float(connect_timeout_s))
    client = per_loop.get(key)
    if client is None or client.is_closed:
        client = per_loop[key] = make_client(timeout_s=timeout_s, connect_timeout_s=connect_timeout_s)
    return client


def _secrets_of(headers: httpx.Headers) -> list[str]:
    found: list[str] = []
    for name, value in headers.items():
        lname = name.lower()
        if any(word in lname for word in _SENSITIVE_WORDS) and value:
            found.append(value)
            scheme, _, credential = value.partition(" ")
            if credential and scheme.lower() in ("bearer", "basic", "token"):
                found.append(credential.strip())
    return found


def _content_type(response: httpx.Response) -> str:
    return str(response.headers.get("content-type", ""))


def _media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def _is_json(media_type: str) -> bool:
    return media_type == "application/json" or media_type.endswith("+json")


_UNEXPECTED_BYTES = 1 << 20
"""How much of an unexpected 2xx body is read to classify and quote it (bytes): enough for any error
object, bounded for a portal that streams forever."""
_SSE_FIELDS = (b"data", b"event", b"id", b"retry")


def _looks_like_sse(head: bytes) -> bool | None:
    """Whether a body starting with ``head`` is an event stream (its first line a comment or one of
    the WHATWG field names); ``None`` while ``head`` is too short to tell."""
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
    if not text:
        return None
    if text.startswith(b":"):
        return True
    line_end = min((i for i in (text.find(b"\n"), text.find(b"\r")) if i >= 0), default=-1)
    first = text if line_end < 0 else text[:line_end]
    name = first.split(b":", 1)[0]
    if name in _SSE_FIELDS and (b":" in first or line_end >= 0):
        return True
    if line_end < 0 and len(first) < 8 and any(f.startswith(first) for f in _SSE_FIELDS):
        return None  # "dat" so far: wait for more
    return False


async def _read_prefix(chunks: AsyncIterator[bytes], head: bytes, limit: int) -> bytes:
    async for chunk in chunks:
        head += chunk
        if len(head) >= limit:
            break
    return head[:limit]


@asynccontextmanager
async def open_sse(client: httpx.AsyncClient, method: str, url: str, *, provider: str,
                   headers: Mapping[str, str] | None = None, json: Any = None,
                   secrets: Iterable[str] = ()) -> AsyncIterator[AsyncIterator[ServerSentEvent]]:
    """Send one request and stream its server-sent events.

    ``async with open_sse(client, "POST", url, provider="openai", headers=h, json=body) as events:``
    then ``async for event in events``. Raises :class:`ProviderError`: on a non-2xx status (the body
    is read and classified), on a transport error while connecting or while streaming (timeout ->
    ``timeout``, dropped connection -> ``server_error``), and on a 2xx answer that is not an event
    stream (:func:`~seamkit_http.errors.classify_unexpected_body`: an error object in it classified
    from its type/code, anything else -- a captive portal's HTML, a JSON document -- ``unknown``
    with the content type and the body's first characters in the message). A body is streamed
    when its first line is an event-stream field or comment, whatever its declared type (a
    lenient server omits ``text/event-stream``; a proxy's HTML page may carry it); a stream that
    ends without dispatching a single event (an empty body, only comments) is that same
    ``unknown`` ``unexpected_body`` failure, quoting its first bytes, not a dropped stream. The response is closed when
    the block exits, also on early exit. ``secrets``: strings masked in error messages, besides the
    values of credential-named request headers.
    """
    request = client.build_request(method, url, headers=headers, json=json)
    if not any(name.lower() == "accept" for name in (headers or {})):
        request.headers["accept"] = "text/event-stream"
    secrets = [*_secrets_of(request.headers), *(s for s in secrets if s)]
    try:
        response = await client.send(request, stream=True)
    except httpx.HTTPError as exc:
        raise classify_transport_error(provider, exc, secrets=secrets) from exc
    events: AsyncGenerator[ServerSentEvent, None] | None = None
    try:
        if not response.is_success:
            try:
                body = await response.aread()
            except httpx.HTTPError as exc:
                raise classify_transport_error(provider, exc, secrets=secrets) from exc
            raise classify_http_error(provider, response.status_code, body, response.headers, secrets=secrets)
        content_type = _content_type(response)
        media = _media_type(content_type)
        chunks: AsyncIterator[bytes] = response.aiter_bytes()
        head = b""
        is_sse: bool | None = None
        try:
            # the declared type is not trusted either way: a proxy's HTML page may come as
            # text/event-stream, and a lenient server may stream events without saying so
            if not _is_json(media):
                async for chunk in chunks:
                    head += chunk
                    is_sse = _looks_like_sse(head)
                    if is_sse is not None or len(head) >= _UNEXPECTED_BYTES:
                        break
            if not is_sse:
                head = await _read_prefix(chunks, head, _UNEXPECTED_BYTES)
                raise classify_unexpected_body(provider, response.status_code, content_type, head,
                                               expected="an event stream", headers=response.headers,
                                               secrets=secrets)
        except httpx.HTTPError as exc:
            raise classify_transport_error(provider, exc, secrets=secrets) from exc

        def no_event(start: bytes) -> ProviderError:
            return classify_unexpected_body(provider, response.status_code, content_type, start,
                                            expected="an event stream", headers=response.headers,
                                            secrets=secrets)

        events = _events(provider, head, chunks, secrets, no_event)
        yield events
    finally:
        if events is not None:
            await events.aclose()
        await response.aclose()


_KEPT_BYTES = 4096
"""How much of a stream's start is kept to quote when it ends with no event (bytes)."""


async def _events(provider: str, head: bytes, chunks: AsyncIterator[bytes], secrets: list[str],
                  no_event: Callable[[bytes], ProviderError]) -> AsyncGenerator[ServerSentEvent, None]:
    """The events of ``head`` (the sniffed start) then ``chunks``; a stream that ends having
    dispatched none (only comments, a page whose first line happens to read like a field) raises
    ``no_event(its first bytes)``: it was not an event stream, and retrying it as a dropped stream
    would only fetch the same page again. The start is kept only until the first event: past it,
    each chunk is only decoded."""
    decoder = SSEDecoder()
    start = head[:_KEPT_BYTES]
    try:
        first = decoder.feed(head)
        if not first:
            async for chunk in chunks:
                if len(start) < _KEPT_BYTES:
                    start += chunk[: _KEPT_BYTES - len(start)]
                first = decoder.feed(chunk)
                if first:
                    break
            else:
                decoder.close()  # an incomplete event at the end is discarded (WHATWG)
                raise no_event(start)
        for event in first:
            yield event
        async for chunk in chunks:
            for event in decoder.feed(chunk):
                yield event
    except httpx.HTTPError as exc:
        raise classify_transport_error(provider, exc, secrets=secrets) from exc
    decoder.close()  # an incomplete event at the end is discarded (WHATWG)


async def post_json(client: httpx.AsyncClient, url: str, *, provider: str, headers: Mapping[str, str] | None = None,
                    json: Any = None, secrets: Iterable[str] = ()) -> tuple[dict[str, Any], httpx.Headers]:
    """POST ``json`` and return ``(decoded JSON object, response headers)``.

    Raises :class:`ProviderError`: non-2xx -> classified from status and body; transport errors ->
    classified (timeout / server_error); a 2xx body that is not a JSON object, or is an error object
    -> :func:`~seamkit_http.errors.classify_unexpected_body` (the error object classified from its
    type/code; an HTML page or other JSON value ``unknown``, naming the content type and quoting the
    body's start). ``secrets`` are masked in error messages as in :func:`open_sse`.
    """
    import json as _json

    request = client.build_request("POST", url, headers=headers, json=json)
    secrets = [*_secrets_of(request.headers), *(s for s in secrets if s)]
    try:
        response = await client.send(request)
    except httpx.HTTPError as exc:
        raise classify_transport_error(provider, exc, secrets=secrets) from exc
    if not response.is_success:
        raise classify_http_error(provider, response.status_code, response.content, response.headers, secrets=secrets)
    try:
        parsed = _json.loads(response.content)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and not is_error_body(parsed):
        return parsed, response.headers
    raise classify_unexpected_body(provider, response.status_code, _content_type(response),
                                   response.content[:_UNEXPECTED_BYTES], expected="a JSON object",
                                   headers=response.headers, secrets=secrets)
