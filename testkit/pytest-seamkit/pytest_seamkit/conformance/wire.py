"""What a provider sent, recorded for the provider conformance suite.

- :class:`SentRequest`: one outgoing request as the suite inspects it: ``body`` (decoded JSON for
  an HTTP provider; any value for an in-process one: dicts, lists, dataclasses, strings, bytes),
  ``headers`` and ``url``. :meth:`SentRequest.mentions` searches all of it for a marker value.
- :class:`WireReply`: one recorded HTTP response (status, headers, body in chunks); made with
  :meth:`WireReply.sse` (an event stream), :meth:`WireReply.ndjson` (a newline-delimited JSON
  stream) or :meth:`WireReply.json` (a JSON body).
- :class:`~pytest_seamkit.conformance.transport.RecordingTransport` (needs ``httpx``): an HTTP
  transport that records each request and replays recorded replies.
- :class:`Recorder`: the suite's ``recorder`` fixture: makes recording transports and takes
  records from in-process providers (:meth:`Recorder.record`); :meth:`Recorder.last_sent` is what
  was sent last.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_seamkit.conformance.transport import RecordingTransport

__all__ = ["Recorder", "SentRequest", "WireReply"]


def _walk(value: Any, depth: int = 0) -> Any:
    """Every leaf (str, bytes, number, bool, None) and mapping key under ``value``."""
    if depth > 64:
        return
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _walk(k, depth + 1)
            yield from _walk(v, depth + 1)
    elif isinstance(value, str | bytes | bytearray | int | float) or value is None:
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _walk(getattr(value, f.name), depth + 1)
    elif isinstance(value, Sequence | set | frozenset):
        for v in value:
            yield from _walk(v, depth + 1)
    else:
        yield str(value)


@dataclass(frozen=True)
class SentRequest:
    """One request a provider sent. ``body``: the decoded JSON body (HTTP), or whatever an
    in-process provider handed its engine (a prompt string, keyword arguments...); ``headers``:
    header name -> value (names compared case-insensitively); ``url``: where it went."""

    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    url: str = ""

    def mentions(self, marker: str | bytes | float) -> bool:
        """Whether ``marker`` occurs in what was sent: a number equal to a number leaf of the body
        (``1234`` matches ``1234`` and ``1234.0``, never ``True``); a string inside any string
        leaf, mapping key, header value or the URL; bytes inside a bytes leaf, or base64-encoded
        (standard or URL-safe, so give the whole of an image's data) inside a string leaf."""
        if isinstance(marker, bool):
            raise TypeError("a marker is a string, bytes or a number, not a bool")
        leaves = list(_walk(self.body))
        if isinstance(marker, int | float):
            return any(type(v) in (int, float) and v == marker for v in leaves)
        if isinstance(marker, bytes):
            encoded = (base64.b64encode(marker).decode(), base64.urlsafe_b64encode(marker).decode())
            for v in leaves:
                if isinstance(v, bytes | bytearray) and marker in v:
                    return True
                if isinstance(v, str) and any(e in v for e in encoded):
                    return True
            return False
        texts = [v for v in leaves if isinstance(v, str)]
        texts += [*self.headers.values(), self.url]
        return any(marker in t for t in texts)

    def header(self, name: str) -> str | None:
        """The value of header ``name`` (case-insensitive), ``None`` when absent."""
        low = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == low), None)


@dataclass(frozen=True)
class WireReply:
    """One recorded HTTP response: ``status``, ``headers`` and the body as ``chunks`` delivered
    exactly as given (an exception instance among them is raised there: a dropped connection)."""

    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    chunks: Sequence[bytes | BaseException] = ()

    @classmethod
    def sse(cls, data: bytes, *, chunk_size: int = 61, headers: Mapping[str, str] | None = None) -> WireReply:
        """A 200 ``text/event-stream`` reply of ``data`` cut into ``chunk_size``-byte reads (events,
        lines and multi-byte characters split across reads, as a network does)."""
        return cls(200, dict(headers or {"content-type": "text/event-stream"}),
                   [data[i:i + chunk_size] for i in range(0, len(data), chunk_size)])

    @classmethod
    def ndjson(cls, data: bytes | Iterable[Any], *, chunk_size: int = 61,
               headers: Mapping[str, str] | None = None) -> WireReply:
        """A 200 ``application/x-ndjson`` reply (newline-delimited JSON, as Ollama streams): ``data``
        as recorded bytes, or the objects themselves, each written as one line of JSON ending in
        ``\n``; cut into ``chunk_size``-byte reads like :meth:`sse` (lines and multi-byte characters
        split across reads). A stream that breaks off is the objects up to the break (no terminal
        object)."""
        if not isinstance(data, bytes | bytearray):
            data = "".join(json.dumps(obj) + "\n" for obj in data).encode()
        data = bytes(data)
        return cls(200, dict(headers or {"content-type": "application/x-ndjson"}),
                   [data[i:i + chunk_size] for i in range(0, len(data), chunk_size)])

    @classmethod
    def json(cls, status: int, body: Any, headers: Mapping[str, str] | None = None) -> WireReply:
        """A reply whose body is ``body`` as JSON (``content-type: application/json`` added)."""
        return cls(status, {"content-type": "application/json", **(headers or {})}, [json.dumps(body).encode()])


class Recorder:
    """Collects what providers sent during one test: :meth:`transport` makes a
    :class:`RecordingTransport` it reads; :meth:`record` takes a :class:`SentRequest` from an
    in-process provider's hook. :meth:`last_sent` is the most recent request of either kind."""

    def __init__(self) -> None:
        self._transports: list[RecordingTransport] = []
        self._records: list[SentRequest] = []

    def transport(self, *replies: WireReply | BaseException, inner: Any = None) -> RecordingTransport:
        """A :class:`~pytest_seamkit.conformance.transport.RecordingTransport` answering with
        ``replies`` (or ``inner``), read by this recorder (needs ``httpx``)."""
        from pytest_seamkit.conformance.transport import RecordingTransport

        t = RecordingTransport(*replies, inner=inner)
        self._transports.append(t)
        return t

    def record(self, sent: SentRequest) -> None:
        """Record a request an in-process provider sent (call it from a test double's hook)."""
        self._records.append(sent)

    @property
    def all_sent(self) -> list[SentRequest]:
        """Every request recorded, transports' first (in transport order), then hook records."""
        return [s for t in self._transports for s in t.sent] + list(self._records)

    @property
    def sent_over_http(self) -> list[SentRequest]:
        """The requests that went through this recorder's transports (an HTTP provider's)."""
        return [s for t in self._transports for s in t.sent]

    @property
    def unclosed(self) -> int:
        """How many responses its transports handed out whose stream is not closed yet."""
        return sum(t.opened - t.closed for t in self._transports)

    def last_sent(self) -> SentRequest | None:
        """The last request recorded (``None`` when nothing was): the latest transport's last
        request, or the last hook record when no transport recorded anything."""
        for t in reversed(self._transports):
            if t.sent:
                return t.sent[-1]
        return self._records[-1] if self._records else None
