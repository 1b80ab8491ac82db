"""The SSE decoder against WHATWG HTML §9.2.6 "Interpreting an event stream".

Property tests build random event lists, serialise them with random line endings (CR, LF, CRLF),
comments, unknown fields, an optional BOM and an optional incomplete trailing event, then check
that every chunking of the bytes decodes to exactly the events the model predicts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seamkit_http import ServerSentEvent, SSEDecoder, aiter_sse, is_done


def decode(chunks: list[bytes]) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    out: list[ServerSentEvent] = []
    for chunk in chunks:
        out.extend(decoder.feed(chunk))
    out.extend(decoder.close())
    return out


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c for c in cuts if 0 < c < len(data)})
    chunks, start = [], 0
    for p in points:
        chunks.append(data[start:p])
        start = p
    chunks.append(data[start:])
    return chunks


# ----------------------------------------------------------------------------------------- examples


def test_basic_event_and_defaults() -> None:
    assert decode([b"data: hello\n\n"]) == [ServerSentEvent("message", "hello", "", None)]


def test_event_type_id_retry_and_multiline_data() -> None:
    stream = b"event: delta\nid: 7\nretry: 1500\ndata: line1\ndata:line2\ndata\n\n"
    assert decode([stream]) == [ServerSentEvent("delta", "line1\nline2\n", "7", 1500)]


def test_only_one_leading_space_is_removed() -> None:
    assert decode([b"data:  two spaces\n\n"])[0].data == " two spaces"
    assert decode([b"data:no space\n\n"])[0].data == "no space"


def test_block_without_data_is_not_dispatched_but_its_id_persists() -> None:
    # httpx-sse 0.4.3 dispatches the first block as an event with empty data.
    events = decode([b"event: ping\nid: 3\n\n", b"data: x\n\n"])
    assert events == [ServerSentEvent("message", "x", "3", None)]


def test_empty_data_line_is_an_event_with_empty_data() -> None:
    assert decode([b"data:\n\n"]) == [ServerSentEvent("message", "", "", None)]
    assert decode([b"data\n\n"]) == [ServerSentEvent("message", "", "", None)]


def test_empty_event_name_means_message() -> None:
    assert decode([b"event:\ndata: a\n\n"])[0].event == "message"


def test_event_type_does_not_leak_into_the_next_event() -> None:
    events = decode([b"event: a\ndata: 1\n\ndata: 2\n\n"])
    assert [e.event for e in events] == ["a", "message"]


def test_leading_bom_is_stripped_once() -> None:
    # httpx-sse 0.4.3 reads "\ufeffdata" as the field name and loses the first field.
    assert decode([b"\xef\xbb\xbfdata: a\n\n"]) == [ServerSentEvent("message", "a")]
    assert decode([b"\xef", b"\xbb", b"\xbfdata: a\n\n"]) == [ServerSentEvent("message", "a")]
    # a second BOM is part of the field name, so the line is an unknown field
    assert decode([b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\ndata: b\n\n"]) == [ServerSentEvent("message", "b")]
    # a BOM later in the stream is data
    assert decode([b"data: \xef\xbb\xbfa\n\n"])[0].data == "\ufeffa"


def test_short_streams_that_look_like_a_bom_prefix() -> None:
    assert decode([b"\xef"]) == []
    assert decode([b"\xef\xbb"]) == []
    assert decode([b"\xef", b"x\n"]) == []  # not a BOM, garbage field, no event


@pytest.mark.parametrize("value", ["+5", "-1", "5a", " 5", "1.5", "", "\uff15", "\u0665"])
def test_retry_accepts_only_ascii_digits(value: str) -> None:
    # httpx-sse 0.4.3 accepts "+5" (int() is lenient); the standard says ASCII digits only.
    decoder = SSEDecoder()
    events = decoder.feed(f"retry: {value}\ndata: x\n\n".encode())
    assert events == [ServerSentEvent("message", "x", "", None)]
    assert decoder.reconnection_ms is None


def test_retry_valid_sets_reconnection_time() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(b"retry: 0042\ndata: x\n\ndata: y\n\n")
    assert [e.retry for e in events] == [42, None]
    assert decoder.reconnection_ms == 42


def test_id_with_nul_is_ignored() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\nid\ndata: c\n\n")
    assert [e.id for e in events] == ["1", "1", ""]
    assert decoder.last_event_id == ""


def test_comments_and_unknown_fields_are_ignored() -> None:
    stream = b": keep-alive\n:\nfoo: bar\nDATA: upper\ndata: x\n\n"
    assert decode([stream]) == [ServerSentEvent("message", "x")]


def test_colon_in_value_is_kept() -> None:
    assert decode([b'data: {"a": "b:c"}\n\n'])[0].data == '{"a": "b:c"}'


@pytest.mark.parametrize("stream", [
    b"data: a\r\rdata: b\r\r",
    b"data: a\r\n\r\ndata: b\r\n\r\n",
    b"data: a\n\ndata: b\n\n",
    b"data: a\r\n\rdata: b\n\r\n",
])
def test_line_endings(stream: bytes) -> None:
    expected = [ServerSentEvent("message", "a"), ServerSentEvent("message", "b")]
    assert decode([stream]) == expected
    assert decode([bytes([b]) for b in stream]) == expected


def test_crlf_split_across_chunks_is_one_line_ending() -> None:
    # "data: a\r" + "\n" + "\r\n": if the LF were a second line ending, "a" would be dispatched
    # early and the remaining CRLF would be a stray blank line; either way exactly one event.
    assert decode([b"data: a\r", b"\n", b"data: b\r", b"\n\r", b"\n"]) == [ServerSentEvent("message", "a\nb")]


def test_utf8_character_split_across_chunks() -> None:
    raw = "data: héllo 🌍\n\n".encode()
    for cut in range(1, len(raw)):
        assert decode([raw[:cut], raw[cut:]]) == [ServerSentEvent("message", "héllo 🌍")], cut


def test_invalid_utf8_is_replaced() -> None:
    assert decode([b"data: a\xffb\n\n"])[0].data == "a\ufffdb"


def test_incomplete_event_at_eof_is_discarded() -> None:
    assert decode([b"data: a\n\ndata: b\n"]) == [ServerSentEvent("message", "a")]
    assert decode([b"data: a\n\ndata: b"]) == [ServerSentEvent("message", "a")]
    assert decode([b"data: a\n\ndata: b\r"]) == [ServerSentEvent("message", "a")]


def test_close_resets_the_decoder() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: partial") == []
    assert decoder.close() == []
    assert decoder.feed(b"\xef\xbb\xbfdata: fresh\n\n") == [ServerSentEvent("message", "fresh")]


def test_empty_chunks_are_harmless() -> None:
    assert decode([b"", b"data: a", b"", b"\n", b"", b"\n", b""]) == [ServerSentEvent("message", "a")]


def test_long_line_in_many_small_chunks() -> None:
    payload = "x" * 50_000
    raw = f"data: {payload}\n\n".encode()
    assert decode([raw[i:i + 7] for i in range(0, len(raw), 7)]) == [ServerSentEvent("message", payload)]


@pytest.mark.parametrize(("data", "done"), [
    ("[DONE]", True), (" [DONE]", True), ("[DONE] ", True), ("  [DONE]  ", True),
    ("[done]", False), ("[DONE]x", False), ('{"x": "[DONE]"}', False), ("", False),
])
def test_is_done(data: str, done: bool) -> None:
    assert is_done(ServerSentEvent(data=data)) is done


def test_is_done_from_the_wire() -> None:
    events = decode([b"data: [DONE]\n\n", b"data:[DONE]\n\n", b"data:  [DONE]\n\n"])
    assert all(is_done(e) for e in events) and len(events) == 3


def test_event_json() -> None:
    assert ServerSentEvent(data='{"a": [1, 2]}').json() == {"a": [1, 2]}
    with pytest.raises(ValueError):
        ServerSentEvent(data="[DONE]").json()


def test_event_is_frozen() -> None:
    event = ServerSentEvent(data="x")
    with pytest.raises(AttributeError):
        event.data = "y"  # type: ignore[misc]


async def test_aiter_sse_over_async_chunks() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for part in (b"data: a\r", b"\n\r\nevent: e\n", b"data: b\n\n", b"data: trailing"):
            yield part

    events = [e async for e in aiter_sse(chunks())]
    assert events == [ServerSentEvent("message", "a"), ServerSentEvent("e", "b")]


async def test_aiter_sse_propagates_source_errors() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b"data: a\n\n"
        raise ConnectionError("dropped")

    seen: list[ServerSentEvent] = []
    with pytest.raises(ConnectionError):
        async for event in aiter_sse(chunks()):
            seen.append(event)
    assert seen == [ServerSentEvent("message", "a")]


# ---------------------------------------------------------------------------------------- property

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=12)


@dataclass
class Block:
    event: str | None
    data: list[str]
    id: str | None
    retry: str | None
    comment: str | None
    unknown: tuple[str, str] | None


_blocks = st.builds(
    Block,
    event=st.none() | _text,
    data=st.lists(_text, max_size=3),
    id=st.none() | _text,
    retry=st.none() | st.from_regex(r"\A[0-9]{1,6}\Z") | st.sampled_from(["+5", "-3", "1e3", " 7", "x"]),
    comment=st.none() | _text,
    unknown=st.none() | st.tuples(st.sampled_from(["foo", "Data", "ID", "eventx", ""]), _text),
)


def _field_line(draw: st.DrawFn, name: str, value: str) -> str:
    if value == "" and name != "" and draw(st.booleans()):
        return name  # field without a colon
    if not value.startswith(" ") and draw(st.booleans()):
        return f"{name}:{value}"
    return f"{name}: {value}"


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, list[ServerSentEvent]]:
    blocks = draw(st.lists(_blocks, max_size=6))
    lines: list[str] = []
    expected: list[ServerSentEvent] = []
    last_id = ""
    for b in blocks:
        block_lines: list[str] = []
        if b.comment is not None:
            block_lines.append(":" + b.comment)
        if b.unknown is not None and b.unknown[0] != "":
            block_lines.append(_field_line(draw, *b.unknown))
        if b.event is not None:
            block_lines.append(_field_line(draw, "event", b.event))
        if b.id is not None:
            block_lines.append(_field_line(draw, "id", b.id))
            if "\x00" not in b.id:
                last_id = b.id
        retry: int | None = None
        if b.retry is not None:
            block_lines.append(_field_line(draw, "retry", b.retry))
            if b.retry.isdigit():
                retry = int(b.retry)
        block_lines.extend(_field_line(draw, "data", d) for d in b.data)
        block_lines = draw(st.permutations(block_lines)) if not b.data else block_lines
        lines.extend(block_lines)
        lines.append("")
        if b.data:
            expected.append(ServerSentEvent(b.event or "message", "\n".join(b.data), last_id, retry))
    trailing = draw(st.sampled_from(["", "data: partial", "data: partial\n", "event: x\ndata: y\n"]))
    out: list[str] = []
    prev_end = ""
    for line in lines:
        choices = ["\n", "\r", "\r\n"]
        if prev_end == "\r" and line == "":
            choices = ["\r", "\r\n"]  # a lone LF after CR would merge into one CRLF line ending
        end = draw(st.sampled_from(choices))
        out.append(line + end)
        prev_end = end
    body = "".join(out)
    if trailing:
        if prev_end == "\r" and trailing.startswith("\n"):
            trailing = trailing[1:]
        body += trailing
    raw = body.encode("utf-8")
    if draw(st.booleans()):
        raw = b"\xef\xbb\xbf" + raw
    return raw, expected


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(streams(), st.lists(st.integers(min_value=0, max_value=2000), max_size=12))
def test_every_chunking_yields_the_model_events(stream: tuple[bytes, list[ServerSentEvent]], cuts: list[int]) -> None:
    raw, expected = stream
    assert decode([raw]) == expected
    assert decode(split_at(raw, cuts)) == expected


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(streams())
def test_byte_by_byte_equals_whole(stream: tuple[bytes, list[ServerSentEvent]]) -> None:
    raw, expected = stream
    assert decode([raw[i:i + 1] for i in range(len(raw))]) == expected
