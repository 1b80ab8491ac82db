"""The provider conformance suite's recorder: what counts as "sent" (SentRequest.mentions) and
the recording httpx transport."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

import httpx
import pytest
from pytest_seamkit.conformance import Recorder, RecordingTransport, SentRequest, WireReply
from seamkit_http import ReplayTransport, Reply


def test_markers_are_found_structurally() -> None:
    image = b"\x89PNG-marker-\x00"
    sent = SentRequest(
        {"messages": [{"content": [{"text": "hi Marker-1"}, {"url": "data:image/png;base64,"
                                                                   + base64.b64encode(image).decode()}]}],
         "max_tokens": 1234, "stream": True},
        {"Authorization": "Bearer sk-x"}, "https://api.example/v1/chat",
    )
    assert sent.mentions("Marker-1") and sent.mentions("sk-x") and sent.mentions("/v1/chat")
    assert sent.mentions(1234) and not sent.mentions(12) and not sent.mentions(1)  # True is not 1
    assert sent.mentions(image) and not sent.mentions(b"other")
    assert sent.header("authorization") == "Bearer sk-x" and sent.header("x-missing") is None
    with pytest.raises(TypeError):
        sent.mentions(True)


def test_in_process_records_are_searched_through_dataclasses_and_bytes() -> None:
    @dataclass(frozen=True)
    class Block:
        data: bytes
        temperature: float

    sent = SentRequest((Block(b"raw-image-bytes", 0.37),))
    assert sent.mentions(b"image") and sent.mentions(0.37) and not sent.mentions("0.37")


async def test_the_transport_records_and_replays() -> None:
    recorder = Recorder()
    assert recorder.last_sent() is None
    t = recorder.transport(WireReply.sse(b"data: one\n\ndata: two\n\n", chunk_size=5),
                           WireReply.json(429, {"error": "slow down"}, {"retry-after": "2"}))
    async with httpx.AsyncClient(transport=t) as client:
        async with client.stream("POST", "https://x.test/a", json={"k": 1}, headers={"api-key": "s"}) as r:
            chunks = [c async for c in r.aiter_bytes()]
        second = await client.post("https://x.test/b", content=b"not json")
    assert b"".join(chunks) == b"data: one\n\ndata: two\n\n" and len(chunks) > 1
    assert second.status_code == 429 and second.json() == {"error": "slow down"}
    assert [s.body for s in t.sent] == [{"k": 1}, "not json"]
    assert t.sent[0].header("api-key") == "s" and t.closed == 2
    assert recorder.last_sent() is t.sent[-1]


async def test_the_transport_can_wrap_another_and_runs_out_loudly() -> None:
    recorder = Recorder()
    t = recorder.transport(inner=ReplayTransport(Reply(200, {}, body=b"ok")))
    async with httpx.AsyncClient(transport=t) as client:
        assert (await client.get("https://x.test/")).text == "ok"
    assert recorder.last_sent() is not None and recorder.last_sent().url == "https://x.test/"  # type: ignore[union-attr]
    empty = RecordingTransport()
    async with httpx.AsyncClient(transport=empty) as client:
        with pytest.raises(AssertionError, match="no reply left"):
            await client.get("https://x.test/")


def test_hook_records_come_after_transports_and_count_when_no_transport_sent() -> None:
    recorder = Recorder()
    recorder.record(SentRequest({"prompt": "p"}))
    assert recorder.last_sent() == SentRequest({"prompt": "p"})
    assert recorder.all_sent == [SentRequest({"prompt": "p"})]


async def test_responses_left_open_are_counted_also_through_an_inner_transport() -> None:
    recorder = Recorder()
    own = recorder.transport(WireReply.sse(b"data: one\n\ndata: two\n\n", chunk_size=5))
    wrapped = recorder.transport(inner=ReplayTransport(Reply(200, {}, body=b"ok")))
    async with httpx.AsyncClient(transport=own) as client:
        response = await client.send(client.build_request("POST", "https://x.test/a", json={}), stream=True)
        await response.aiter_bytes().__anext__()  # read one chunk, then stop without closing
    async with httpx.AsyncClient(transport=wrapped) as client:
        assert (await client.get("https://x.test/b")).text == "ok"  # read whole: closed
    assert (own.opened, own.closed, wrapped.opened, wrapped.closed) == (1, 0, 1, 1)
    assert recorder.unclosed == 1 and len(recorder.sent_over_http) == 2
    await response.aclose()
    assert recorder.unclosed == 0


def test_in_process_records_are_not_sent_over_http() -> None:
    recorder = Recorder()
    recorder.record(SentRequest({"prompt": "p"}))
    assert recorder.sent_over_http == [] and recorder.unclosed == 0


async def test_an_ndjson_reply_streams_one_json_object_per_line_in_network_sized_reads() -> None:
    objects = [{"message": {"content": "Hé"}, "done": False}, {"message": {"content": "!"}, "done": True}]
    t = Recorder().transport(WireReply.ndjson(objects, chunk_size=7),
                             WireReply.ndjson(b'{"done": false}\n', headers={"content-type": "text/plain"}))
    async with httpx.AsyncClient(transport=t) as client:
        async with client.stream("POST", "https://x.test/api/chat", json={}) as r:
            chunks = [c async for c in r.aiter_bytes()]
            assert r.status_code == 200 and r.headers["content-type"] == "application/x-ndjson"
        second = await client.post("https://x.test/api/chat", json={})
    body = b"".join(chunks)
    assert body.endswith(b"\n") and [json.loads(line) for line in body.splitlines()] == objects
    assert len(chunks) > 2 and all(len(c) <= 7 for c in chunks)  # lines split across reads
    assert second.content == b'{"done": false}\n' and second.headers["content-type"] == "text/plain"
