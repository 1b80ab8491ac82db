"""``openai`` (Responses API): the parsed result does not depend on how the byte stream is split
into network reads (hypothesis), for the reference fixtures and for generated event streams."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seamkit.values import ChatRequest, LLMResult, Message
from seamkit_http import ReplayTransport, Reply, make_client
from seamkit_openai.config import OpenAIResponsesConfig
from seamkit_openai.responses import build

FIX = Path(__file__).parent / "fixtures" / "responses"
STREAMS = ["text.sse", "tool_call.sse", "parallel_tool_calls.sse", "structured_output.sse", "reasoning.sse",
           "refusal.sse", "incomplete_max_tokens.sse"]
REQUEST = ChatRequest((Message.user("hi"),))


def _run(data: bytes, cuts: list[int], model: str = "gpt-4.1") -> LLMResult:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    chunks = [data[a:b] for a, b in itertools.pairwise(points) if b > a]
    transport = ReplayTransport(Reply(200, {"content-type": "text/event-stream"}, chunks=chunks))
    p = build(OpenAIResponsesConfig(model=model, api_key="sk-chunking"), client=make_client(transport=transport),
              environ={})
    return asyncio.run(p.chat(REQUEST))


_WHOLE = {name: _run((FIX / name).read_bytes(), []) for name in STREAMS}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(STREAMS), cuts=st.lists(st.integers(min_value=0, max_value=100_000), max_size=40))
def test_fixture_result_is_independent_of_chunking(name: str, cuts: list[int]) -> None:
    data = (FIX / name).read_bytes()
    assert _run(data, cuts) == _WHOLE[name]


def _stream(texts: list[str], args: list[str], crlf: bool) -> bytes:
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}]
    for t in texts:
        events.append({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
                       "content_index": 0, "delta": t})
    if args:
        events.append({"type": "response.output_item.added", "output_index": 1, "item": {
            "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": ""}})
        for a in args:
            events.append({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1,
                           "delta": a})
    events.append({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "model": "m",
                                                               "usage": {"input_tokens": 5, "output_tokens": 7}}})
    nl = "\r\n" if crlf else "\n"
    out = "".join(f"event: {e['type']}{nl}data: {json.dumps(e, ensure_ascii=False)}{nl}{nl}" for e in events)
    return out.encode()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(st.text(min_size=1, max_size=12), max_size=8),
    values=st.lists(st.text(max_size=6), max_size=4),
    crlf=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=30),
)
def test_generated_streams_round_trip(texts: list[str], values: list[str], crlf: bool, cuts: list[int]) -> None:
    arg_json = json.dumps({"v": values}, ensure_ascii=False)
    # the arguments split into fragments at arbitrary character positions
    pieces = [arg_json[i:i + 5] for i in range(0, len(arg_json), 5)] if values else []
    result = _run(_stream(texts, pieces, crlf), cuts)
    assert result.text == "".join(texts)
    if values:
        (call,) = result.tool_calls
        assert call.id == "call_1" and list(call.arguments["v"]) == values
        assert result.finish_reason == "tool_calls"
    else:
        assert result.tool_calls == () and result.finish_reason == "stop"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (5, 7)
