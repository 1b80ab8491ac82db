"""Server-sent events: an incremental decoder following WHATWG HTML §9.2.6 "Interpreting an event stream".

Why our own parser rather than ``httpx-sse``: httpx-sse 0.4.3 dispatches events whose data buffer
is empty (a block with only ``event: ping`` becomes an event, where the standard discards it), keeps a
leading U+FEFF byte-order mark as part of the first field name (so a stream starting with a BOM
loses its first field), and accepts non-digit ``retry`` values such as ``"+5"`` (``int()`` is
lenient; the standard says "only ASCII digits"). It also works on decoded text lines, while we work
on bytes so a UTF-8 character split across two network reads is decoded whole.

Decoding rules (all from the standard):

- lines end with CR, LF or CRLF; a CR that ends one chunk and an LF that starts the next are one
  line ending;
- each complete line is decoded as UTF-8 with ``errors="replace"``; one leading BOM at the start of
  the stream is dropped;
- a line starting with ``:`` is a comment; a line without ``:`` is a field name with an empty value;
  one space after the colon is removed;
- ``data`` lines are joined with LF; ``event`` sets the type (``"message"`` when absent or empty);
  ``id`` sets the last event id unless it contains NUL (it persists across events); ``retry`` is
  accepted only when made of ASCII digits;
- a blank line dispatches the event, unless no ``data`` line was seen (then the block is dropped);
- an incomplete event at end of stream is discarded.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from typing import Any

__all__ = ["ServerSentEvent", "SSEDecoder", "aiter_sse", "is_done"]

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One dispatched event.

    ``event``: the event type (``"message"`` when the block had no non-empty ``event`` field);
    ``data``: the data lines joined with ``"\\n"``; ``id``: the last event id seen so far in the stream
    (``""`` when none); ``retry``: the reconnection time in milliseconds given by a valid ``retry``
    field inside this event's block, else ``None``.
    """

    event: str = "message"
    data: str = ""
    id: str = ""
    retry: int | None = None

    def json(self) -> Any:
        """``data`` parsed as JSON. Raises ``json.JSONDecodeError`` (a ``ValueError``) when it is not JSON."""
        return json.loads(self.data)


def is_done(event: ServerSentEvent) -> bool:
    """``True`` for the OpenAI-style end-of-stream sentinel: data ``"[DONE]"`` (surrounding spaces ignored)."""
    return event.data.strip() == "[DONE]"


class SSEDecoder:
    """Incremental server-sent-events decoder over bytes (see the module docstring for the rules).

    ``feed(chunk)`` takes the next bytes read from the network, in any chunking, and returns the
    events completed by them; ``close()`` ends the stream (an incomplete event is discarded, so it
    returns an empty list) and resets the decoder. ``last_event_id`` is the last valid ``id`` seen;
    ``reconnection_ms`` the last valid ``retry`` value (milliseconds) seen anywhere in the stream.
    """

    __slots__ = ("_data", "_event", "_parts", "_retry", "_skip_lf", "_started", "last_event_id", "reconnection_ms")

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._skip_lf = False
        self._started = False
        self._event = ""
        self._data: list[str] = []
        self._retry: int | None = None
        self.last_event_id = ""
        self.reconnection_ms: int | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Decode ``chunk`` (bytes, any size, any split point) and return the events it completes."""
        if not chunk:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if chunk[0] == 10:  # LF completing a CRLF split across chunks
                chunk = chunk[1:]
                if not chunk:
                    return []
        if not self._started:
            head = b"".join(self._parts) + chunk if self._parts else chunk
            if len(head) < 3 and _BOM.startswith(head):
                self._parts = [head]
                return []
            self._started = True
            self._parts = []
            chunk = head[3:] if head.startswith(_BOM) else head
            if not chunk:
                return []
        if b"\n" not in chunk and b"\r" not in chunk:
            self._parts.append(chunk)
            return []
        if self._parts:
            self._parts.append(chunk)
            buf = b"".join(self._parts)
            self._parts = []
        else:
            buf = chunk
        lines = buf.splitlines()  # bytes.splitlines splits on CR, LF and CRLF only
        last = buf[-1]
        if last == 13:
            self._skip_lf = True
        elif last != 10:
            self._parts.append(lines.pop())
        return self._process(lines)

    def _process(self, lines: list[bytes]) -> list[ServerSentEvent]:
        events: list[ServerSentEvent] = []
        data = self._data
        for raw in lines:
            if not raw:  # blank line: dispatch
                if data:
                    events.append(ServerSentEvent(self._event or "message", "\n".join(data), self.last_event_id,
                                                  self._retry))
                    data = self._data = []
                self._event = ""
                self._retry = None
                continue
            if raw.startswith(b"data:"):  # the hot path
                value_b = raw[5:]
                if value_b[:1] == b" ":
                    value_b = value_b[1:]
                data.append(value_b.decode("utf-8", "replace"))
                continue
            if raw[0] == 58:  # ":" comment
                continue
            line = raw.decode("utf-8", "replace")
            colon = line.find(":")
            if colon == -1:
                field, value = line, ""
            else:
                field, value = line[:colon], line[colon + 1:]
                if value[:1] == " ":
                    value = value[1:]
            if field == "event":
                self._event = value
            elif field == "data":
                data.append(value)
            elif field == "id":
                if "\x00" not in value:
                    self.last_event_id = value
            elif field == "retry":
                if value and value.isascii() and value.isdigit():
                    self._retry = self.reconnection_ms = int(value)
            # any other field is ignored
        return events

    def close(self) -> list[ServerSentEvent]:
        """End of stream: discard any incomplete line and event (per the standard) and reset the
        decoder for reuse. Returns the events still to deliver, which is always none."""
        self._parts = []
        self._skip_lf = False
        self._started = False
        self._event = ""
        self._data = []
        self._retry = None
        return []


async def aiter_sse(chunks: AsyncIterable[bytes]) -> AsyncIterator[ServerSentEvent]:
    """Decode an async stream of byte chunks (e.g. ``httpx.Response.aiter_bytes()``) into events.

    Events are yielded as soon as their terminating blank line has arrived; an incomplete event at
    the end of the stream is discarded. Errors raised by ``chunks`` propagate unchanged.
    """
    decoder = SSEDecoder()
    async for chunk in chunks:
        for event in decoder.feed(chunk):
            yield event
    for event in decoder.close():
        yield event
