"""An ``httpx`` transport recording what an HTTP provider sends and replaying recorded replies
(the HTTP half of the provider conformance suite's recorder; imports ``httpx``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from pytest_seamkit.conformance.wire import SentRequest, WireReply

__all__ = ["RecordingTransport"]


class RecordingTransport(httpx.AsyncBaseTransport):
    """An ``httpx.AsyncBaseTransport`` recording every request (``sent``: :class:`SentRequest`
    per request, body decoded as JSON when it is JSON, else kept as text) and answering each with
    the next of ``replies``, or with ``inner`` (another transport) when given. A request beyond the
    replies raises ``AssertionError``. ``opened`` counts the responses handed out, ``closed`` those
    whose stream was closed (read to the end, or closed early); an ``inner`` transport's responses
    are counted too."""

    def __init__(self, *replies: WireReply | BaseException, inner: Any = None) -> None:
        self._replies = list(replies)
        self._inner = inner
        self.sent: list[SentRequest] = []
        self.opened = 0
        self.closed = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        raw = await request.aread()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self.sent.append(SentRequest(body, dict(request.headers), str(request.url)))
        if self._inner is not None:
            inner: httpx.Response = await self._inner.handle_async_request(request)
            self.opened += 1
            # the inner stream, wrapped so that closing it is counted here too
            return httpx.Response(inner.status_code, headers=inner.headers, extensions=inner.extensions,
                                  stream=_Counted(self, inner.stream), request=request)
        if not self._replies:
            raise AssertionError(f"RecordingTransport: no reply left for {request.method} {request.url.path}")
        reply = self._replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        self.opened += 1
        return httpx.Response(reply.status, headers=dict(reply.headers),
                                    stream=_Stream(self, list(reply.chunks)), request=request)

    async def aclose(self) -> None:
        if self._inner is not None:
            await self._inner.aclose()


class _Stream(httpx.AsyncByteStream):
    def __init__(self, transport: RecordingTransport, parts: list[bytes | BaseException]) -> None:
        self._transport = transport
        self._parts = parts
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for part in self._parts:
            if self._closed:
                return
            if isinstance(part, BaseException):
                raise part
            yield part

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._transport.closed += 1


class _Counted(httpx.AsyncByteStream):
    """An inner transport's response stream; closing it counts on the recording transport."""

    def __init__(self, transport: RecordingTransport, inner: Any) -> None:
        self._transport = transport
        self._inner = inner
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for part in self._inner:
            yield part

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._transport.closed += 1
            await self._inner.aclose()
