"""A test transport that replays recorded HTTP responses, for wire-level tests of provider plugins.

    transport = ReplayTransport(
        Reply(status=200, headers={"content-type": "text/event-stream"},
              chunks=[b"data: {...}\\n\\n", b"data: [DONE]\\n\\n"]),
    )
    client = make_client(transport=transport)
    ...
    assert transport.json_bodies[0]["model"] == "gpt-4o"
    assert transport.closed == 1

Nothing touches the network. Streamed bodies come back in exactly the given chunks; an exception
instance among the chunks is raised at that point of the stream (a dropped connection), and an
exception instance given instead of a :class:`Reply` is raised when the request is sent.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

__all__ = ["Reply", "ReplayTransport"]

_UNSET: Any = object()


@dataclass(frozen=True)
class Reply:
    """One recorded response.

    ``status``: HTTP status; ``headers``: response headers; ``body``: the whole body (bytes or text,
    sent as one chunk); ``chunks``: the body as a sequence of byte chunks delivered exactly as given
    (an ``Exception`` instance among them is raised when reached); ``json``: a JSON value sent as the
    body with ``content-type: application/json`` (when ``headers`` does not set one). Give at most one
    of ``body``, ``chunks`` and ``json``.
    """

    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes | str = b""
    chunks: Sequence[bytes | BaseException] | None = None
    json: Any = _UNSET

    def __post_init__(self) -> None:
        given = sum([bool(self.body), self.chunks is not None, self.json is not _UNSET])
        if given > 1:
            raise ValueError("Reply takes at most one of body, chunks and json")

    def _parts(self) -> tuple[list[bytes | BaseException], dict[str, str]]:
        headers = dict(self.headers)
        if self.chunks is not None:
            return list(self.chunks), headers
        if self.json is not _UNSET:
            if not any(k.lower() == "content-type" for k in headers):
                headers["content-type"] = "application/json"
            return [json.dumps(self.json).encode()], headers
        body = self.body.encode() if isinstance(self.body, str) else self.body
        return ([body] if body else []), headers


class _ReplayStream(httpx.AsyncByteStream):
    def __init__(self, transport: ReplayTransport, parts: list[bytes | BaseException]) -> None:
        self._transport = transport
        self._parts = parts
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for part in self._parts:
            if self._closed:
                return
            await asyncio.sleep(0)  # a real network read yields to the loop
            if isinstance(part, BaseException):
                raise part
            yield part

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._transport.closed += 1


class ReplayTransport(httpx.AsyncBaseTransport):
    """An ``httpx.AsyncBaseTransport`` answering each request with the next of ``replies``.

    Records every request in ``requests`` (``httpx.Request``, body read) and its decoded JSON body in
    ``json_bodies`` (``None`` for a body that is not JSON); ``closed`` counts responses whose stream
    was closed (every response should be, also after an early exit). A request beyond the given
    replies raises ``AssertionError``. ``remaining`` is the number of replies not yet used.
    """

    def __init__(self, *replies: Reply | BaseException) -> None:
        self._replies: list[Reply | BaseException] = list(replies)
        self.requests: list[httpx.Request] = []
        self.json_bodies: list[Any] = []
        self.closed = 0

    @property
    def remaining(self) -> int:
        """Replies not used yet."""
        return len(self._replies)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        self.requests.append(request)
        try:
            decoded: Any = json.loads(body) if body else None
        except ValueError:
            decoded = None
        self.json_bodies.append(decoded)
        if not self._replies:
            raise AssertionError(f"ReplayTransport: no reply left for {request.method} {request.url.path}")
        reply = self._replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        parts, headers = reply._parts()
        return httpx.Response(reply.status, headers=headers, stream=_ReplayStream(self, parts), request=request)
