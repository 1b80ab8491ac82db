"""Wire-level tests of the anthropic provider: the request each call sends (body and headers) is
compared with the fixtures written from the Messages API reference, and the recorded event streams
are parsed into deltas / results. Nothing touches the network (``ReplayTransport``)."""

from __future__ import annotations

import base64
import itertools
import json
import logging
from decimal import Decimal
from typing import Any

import pytest
from anthropic_wire_helpers import (
    SECRET,
    SSE_HEADERS,
    Build,
    error_fixture,
    error_reply,
    expected_body,
    sse_bytes,
    sse_reply,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seamkit._accumulate import collect_result
from seamkit.errors import FailureClass, ProviderError, UnsupportedFeature
from seamkit.values import (
    ChatRequest,
    Delta,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCall,
    ToolResult,
    ToolSchema,
)
from seamkit_anthropic.config import AnthropicConfig
from seamkit_anthropic.provider import AnthropicProvider
from seamkit_anthropic.request import BLOCKS_PREFIX, decode_thinking
from seamkit_http import ReplayTransport, Reply, make_client

SYSTEM = Message.system("You are a terse assistant.")
WEATHER = ToolSchema(
    "get_weather",
    "Current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False},
    False,
)
ANSWER = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"],
          "additionalProperties": False}
M = Decimal(1_000_000)


def hello(**kw: object) -> ChatRequest:
    return ChatRequest((SYSTEM, Message.user("Say hello.")), max_tokens=256, **kw)  # type: ignore[arg-type]


async def deltas_of(provider: AnthropicProvider, request: ChatRequest) -> list[Delta]:
    return [d async for d in provider.stream(request)]


# --- text ------------------------------------------------------------------------------------


async def test_text_request_body_headers_and_result(build_provider: Build) -> None:
    p, t = build_provider(sse_reply("text"))
    r = await p.chat(hello())
    assert t.json_bodies == [expected_body("text")]
    req = t.requests[0]
    assert str(req.url) == "https://api.anthropic.com/v1/messages"
    assert req.method == "POST"
    assert req.headers["x-api-key"] == SECRET
    assert req.headers["anthropic-version"] == "2023-06-01"
    assert req.headers["content-type"] == "application/json"
    assert req.headers["accept"] == "text/event-stream"
    assert "authorization" not in req.headers and "anthropic-beta" not in req.headers
    assert r.text == "Hello!" and r.finish_reason == "stop"
    assert r.model == "claude-sonnet-4-5-20250929"  # the answering snapshot, from message_start
    u = r.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, u.requests) == (25, 15, 0, 0, 1)
    assert u.cost == (25 * Decimal(3) + 15 * Decimal(15)) / M and u.cost_source == "estimated"
    assert dict(r.raw_usage or {}) == {"input_tokens": 25, "output_tokens": 15}
    assert t.closed == 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=1, max_value=len(sse_bytes("parallel_tool_calls")) - 1), max_size=30))
async def test_any_chunking_of_the_stream_gives_the_same_result(cuts: list[int]) -> None:
    raw = sse_bytes("parallel_tool_calls")
    points = [0, *sorted(set(cuts)), len(raw)]
    chunks = [raw[a:b] for a, b in itertools.pairwise(points)]
    transport = ReplayTransport(Reply(200, SSE_HEADERS, chunks=chunks))
    p = AnthropicProvider(AnthropicConfig(model="claude-sonnet-4-5", api_key=SECRET),
                          client=make_client(transport=transport), env={})
    r = await p.chat(ChatRequest((Message.user("Paris and Tokyo?"),), tools=(WEATHER,)))
    assert r.text == "I'll check both cities."
    assert [(c.id, dict(c.arguments)) for c in r.tool_calls] == [
        ("toolu_01A09q90qw90lq917835lq9", {"city": "Paris"}),
        ("toolu_01B5kD8cxj3ZfWoYq2JkQy7P", {"city": "Tokyo"}),
    ]
    assert r.finish_reason == "tool_calls" and r.usage.output_tokens == 118


async def test_one_byte_chunks(build_provider: Build) -> None:
    p, _ = build_provider(sse_reply("reasoning", chunk=1), thinking={"type": "enabled", "budget_tokens": 2048})
    r = await p.chat(ChatRequest((Message.user("Is 1001 prime? Think it through."),), max_tokens=4096))
    assert r.text == "No: 1001 = 7 \u00d7 11 \u00d7 13."  # multi-byte characters split across reads


@pytest.mark.parametrize(
    ("stop_reason", "finish", "warns"),
    [("end_turn", "stop", False), ("stop_sequence", "stop", False), ("max_tokens", "length", False),
     ("model_context_window_exceeded", "length", False), ("refusal", "refusal", False), ("pause_turn", "stop", True)],
)
async def test_stop_reasons(build_provider: Build, stop_reason: str, finish: str, warns: bool) -> None:
    raw = sse_bytes("text").replace(b'"stop_reason": "end_turn"', f'"stop_reason": "{stop_reason}"'.encode())
    p, _ = build_provider(Reply(200, SSE_HEADERS, chunks=[raw]))
    r = await p.chat(hello())
    assert r.finish_reason == finish
    assert any("pause_turn" in w for w in r.warnings) is warns


async def test_unknown_events_and_block_types_are_ignored(build_provider: Build) -> None:
    extra = (b'event: future_event\ndata: {"type": "future_event", "x": 1}\n\n'
             b'event: content_block_start\ndata: {"type": "content_block_start", "index": 7, '
             b'"content_block": {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}}\n\n'
             b'event: content_block_stop\ndata: {"type": "content_block_stop", "index": 7}\n\n')
    raw = sse_bytes("text").replace(b"event: ping", extra + b"event: ping", 1)
    p, _ = build_provider(Reply(200, SSE_HEADERS, chunks=[raw]))
    r = await p.chat(hello())
    assert r.text == "Hello!" and r.finish_reason == "stop"


# --- tools -----------------------------------------------------------------------------------


async def test_tool_call(build_provider: Build) -> None:
    p, t = build_provider(sse_reply("tool_call"))
    r = await p.chat(ChatRequest((SYSTEM, Message.user("What is the weather in Paris?")), tools=(WEATHER,),
                                 tool_choice="required", max_tokens=256))
    assert t.json_bodies == [expected_body("tool_call")]
    assert r.text == "Okay, let's check the weather for Paris:"
    assert r.tool_calls == (ToolCall("toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather", {"city": "Paris"}),)
    assert r.finish_reason == "tool_calls" and r.usage.input_tokens == 472 and r.usage.output_tokens == 89


async def test_parallel_tool_calls(build_provider: Build) -> None:
    p, t = build_provider(sse_reply("parallel_tool_calls"))
    r = await p.chat(ChatRequest((SYSTEM, Message.user("What is the weather in Paris and in Tokyo?")),
                                 tools=(WEATHER,), max_tokens=256))
    assert t.json_bodies == [expected_body("parallel_tool_calls")]
    assert len({c.id for c in r.tool_calls}) == 2
    assert sorted(c.arguments["city"] for c in r.tool_calls) == ["Paris", "Tokyo"]


@pytest.mark.parametrize(
    ("choice", "sent"),
    [("auto", None), ("none", {"type": "none"}), ("required", {"type": "any"}),
     ("get_weather", {"type": "tool", "name": "get_weather"})],
)
async def test_tool_choice_mapping(build_provider: Build, choice: str, sent: dict[str, str] | None) -> None:
    p, _ = build_provider()
    body = p.prepare(ChatRequest((Message.user("hi"),), tools=(WEATHER,), tool_choice=choice)).body
    assert body.get("tool_choice") == sent


async def test_tool_choice_naming_an_unknown_tool_is_refused(build_provider: Build) -> None:
    p, t = build_provider()
    with pytest.raises(UnsupportedFeature, match="tool_choice"):
        await deltas_of(p, ChatRequest((Message.user("hi"),), tools=(WEATHER,), tool_choice="nope"))
    assert t.requests == []


async def test_tool_results_merge_into_one_user_turn(build_provider: Build) -> None:
    p, _ = build_provider()
    call = ToolCall("toolu_1", "get_weather", {"city": "Paris"})
    body = p.prepare(ChatRequest((
        Message.user("Weather?"),
        Message("assistant", (TextBlock(""), call)),
        Message("tool", (ToolResult("toolu_1", "get_weather", "boom", is_error=True),
                         ToolResult("toolu_2", "get_weather", ""))),
        Message.user("And tomorrow?"),
    ), tools=(WEATHER,))).body
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "boom", "is_error": True},
            {"type": "tool_result", "tool_use_id": "toolu_2"},
            {"type": "text", "text": "And tomorrow?"},
        ]},
    ]


# --- structured output -----------------------------------------------------------------------


async def test_structured_output_native(build_provider: Build) -> None:
    p, t = build_provider(sse_reply("structured_output"))
    r = await p.chat(ChatRequest((SYSTEM, Message.user("What is six times seven?")), output_schema=ANSWER,
                                 max_tokens=256))
    assert t.json_bodies == [expected_body("structured_output")]
    assert "anthropic-beta" not in t.requests[0].headers  # GA: no beta header
    assert json.loads(r.text) == {"answer": 42}


async def test_structured_output_through_a_forced_tool(build_provider: Build) -> None:
    p, t = build_provider(sse_reply("structured_output_tool"), model="claude-opus-4-1")
    r = await p.chat(ChatRequest((SYSTEM, Message.user("What is six times seven?")), output_schema=ANSWER,
                                 max_tokens=256))
    assert t.json_bodies == [expected_body("structured_output_tool")]
    assert json.loads(r.text) == {"answer": 42}
    assert r.tool_calls == () and r.finish_reason == "stop"


async def test_structured_output_tool_with_real_tools_uses_any(build_provider: Build) -> None:
    p, _ = build_provider(model="claude-opus-4-1")
    body = p.prepare(ChatRequest((Message.user("hi"),), tools=(WEATHER,), output_schema=ANSWER)).body
    assert [t["name"] for t in body["tools"]] == ["get_weather", "structured_output"]
    assert body["tool_choice"] == {"type": "any"}
    final = p.prepare(ChatRequest((Message.user("hi"),), tools=(WEATHER,), output_schema=ANSWER,
                                  tool_choice="none")).body
    assert final["tool_choice"] == {"type": "tool", "name": "structured_output"}


async def test_structured_output_tool_name_avoids_a_real_tool(build_provider: Build) -> None:
    p, _ = build_provider(model="claude-opus-4-1")
    clash = ToolSchema("structured_output", "a real tool", {"type": "object"}, False)
    body = p.prepare(ChatRequest((Message.user("hi"),), tools=(clash,), output_schema=ANSWER)).body
    assert [t["name"] for t in body["tools"]] == ["structured_output", "structured_output_"]


def _events(*events: dict[str, Any]) -> Reply:
    """A Messages API event stream: ``message_start``, then ``events``, then ``message_stop``."""
    start = {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                                  "model": "claude-sonnet-4-5-20250929", "content": [],
                                                  "usage": {"input_tokens": 50, "output_tokens": 1}}}
    stop = [{"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 20}},
            {"type": "message_stop"}]
    text = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in (start, *events, *stop))
    return Reply(200, SSE_HEADERS, chunks=[text.encode()])


def _pieces(index: int, kind: str, text: str, size: int = 7) -> list[dict[str, Any]]:
    key = "partial_json" if kind == "input_json_delta" else "text"
    return [{"type": "content_block_delta", "index": index, "delta": {"type": kind, key: text[i:i + size]}}
            for i in range(0, len(text), size)]


_TICKET = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}
_UNION = {"anyOf": [_TICKET, {"type": "string"}]}  # an output type ``Ticket | str``


async def test_a_root_union_is_wrapped_for_native_output_and_for_tools_and_unwrapped(build_provider: Build) -> None:
    """A root ``anyOf`` was refused before sending for ``output_config.format`` and sent as is in a
    tool's ``input_schema`` (the API answers 400: no anyOf at the top level); now both are wrapped in
    an object with one property, with one warning each, and the answer and arguments unwrapped."""
    lookup = ToolSchema("lookup", "Find a ticket by id or by title.", {"oneOf": [
        {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
        {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}]}, False)
    args = '{"value": {"title": "printer on fire"}}'
    answer = '{"value": {"id": 7}}'
    p, t = build_provider(
        _events({"type": "content_block_start", "index": 0,
                 "content_block": {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}},
                *_pieces(0, "input_json_delta", args), {"type": "content_block_stop", "index": 0}),
        _events({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                *_pieces(0, "text_delta", answer), {"type": "content_block_stop", "index": 0}),
    )
    first = await p.chat(ChatRequest((Message.user("Which ticket?"),), tools=(lookup,), output_schema=_UNION))
    second = await p.chat(ChatRequest((Message.user("Which ticket?"),), tools=(lookup,), output_schema=_UNION))
    body = t.json_bodies[0]
    schema = body["output_config"]["format"]["schema"]
    assert schema["type"] == "object" and schema["required"] == ["value"] and "anyOf" not in schema
    assert schema["properties"]["value"]["anyOf"][1] == {"type": "string"}
    (tool,) = body["tools"]
    assert tool["input_schema"]["type"] == "object" and "oneOf" not in tool["input_schema"]
    assert tool["input_schema"]["properties"]["value"]["oneOf"] == lookup.parameters["oneOf"]
    (call,) = first.tool_calls
    assert call.id == "toolu_1" and dict(call.arguments) == {"title": "printer on fire"}
    assert json.loads(second.text) == {"id": 7}
    assert first.warnings[:2] == (
        "tool 'lookup' input_schema: oneOf at the root ($) cannot be sent to the Anthropic tools API (the root must "
        "be an object schema); sent as an object with one property 'value', unwrapped from the reply before it is "
        "validated against the schema",
        "structured output: anyOf at the root ($) cannot be sent to Claude's structured outputs (the root must be "
        "an object schema); sent as an object with one property 'value', unwrapped from the reply before it is "
        "validated against the schema")


async def test_constructs_native_output_cannot_express_go_through_the_forced_tool(build_provider: Build) -> None:
    """``minimum`` and ``additionalProperties: true`` (a pydantic ``dict[str, Any]``) were refused
    before sending; now the answer goes through the forced tool, with one warning naming the
    construct and its path."""
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0},
                                               "meta": {"type": "object", "additionalProperties": True}},
              "required": ["n", "meta"]}
    p, t = build_provider(_events(
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "tool_use", "id": "toolu_2", "name": "structured_output", "input": {}}},
        *_pieces(0, "input_json_delta", '{"n": 3, "meta": {"any": ["thing"]}}'),
        {"type": "content_block_stop", "index": 0}))
    r = await p.chat(ChatRequest((Message.user("hi"),), output_schema=schema))
    body = t.json_bodies[0]
    assert "output_config" not in body
    assert body["tools"] == [{"name": "structured_output",
                              "description": "Give your final answer by calling this tool; its input is the answer.",
                              "input_schema": schema}]
    assert body["tool_choice"] == {"type": "tool", "name": "structured_output"}
    assert json.loads(r.text) == {"n": 3, "meta": {"any": ["thing"]}} and r.tool_calls == ()
    assert r.warnings[0] == (
        "structured output: minimum at $.properties.n is not supported in Claude's native structured outputs "
        "('JSON Schema limitations'); sent through a forced tool 'structured_output' instead; the answer is "
        "validated against the schema")


async def test_without_forced_tool_use_the_schema_goes_in_the_system_prompt(build_provider: Build) -> None:
    """Extended thinking excludes forced tool use: a schema neither native output nor a forced tool
    can carry was refused; it now goes in the system prompt, with a warning saying why."""
    p, t = build_provider(sse_reply("text"), model="claude-opus-4-1",
                          thinking={"type": "enabled", "budget_tokens": 1024})
    r = await p.chat(ChatRequest((SYSTEM, Message.user("hi"),), output_schema=ANSWER, max_tokens=4096))
    assert ("structured output: forced tool use cannot be combined with extended thinking: the schema is sent in "
            "the system prompt instead; the answer is validated against the schema") in r.warnings
    body = t.json_bodies[0]
    assert "tools" not in body and "output_config" not in body
    assert body["system"][-1]["text"] == ("Reply with one JSON document valid for this JSON Schema, and nothing "
                                          "else: " + json.dumps(ANSWER, separators=(",", ":")))
    assert body["system"][0]["text"] == "You are a terse assistant."


# --- thinking --------------------------------------------------------------------------------


async def test_reasoning_is_kept_with_its_signature(build_provider: Build) -> None:
    p, t = build_provider(sse_reply("reasoning"), thinking={"type": "enabled", "budget_tokens": 2048})
    r = await p.chat(ChatRequest((Message.user("Is 1001 prime? Think it through."),), max_tokens=4096))
    assert t.json_bodies == [expected_body("reasoning")]
    (block,) = [b for b in r.message.content if isinstance(b, ReasoningBlock)]
    assert block.text == "1001 = 7 \u00d7 143, and 143 = 11 \u00d7 13.\nSo 1001 = 7 \u00d7 11 \u00d7 13: not prime."
    assert block.signature == "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds..."
    assert block.provider == "anthropic" and block.model == "claude-sonnet-4-5-20250929"


async def test_thinking_and_redacted_thinking_go_back_unchanged_with_tool_results(build_provider: Build) -> None:
    p, t = build_provider(sse_reply("thinking_redacted"), sse_reply("text"),
                          thinking={"type": "enabled", "budget_tokens": 10000}, max_tokens=16000)
    first = await p.chat(ChatRequest((Message.user("What's the weather in Paris?"),), tools=(WEATHER,)))
    (block,) = [b for b in first.message.content if isinstance(b, ReasoningBlock)]
    assert block.signature is not None and block.signature.startswith(BLOCKS_PREFIX)
    assert [b["type"] for b in decode_thinking(block)] == ["thinking", "redacted_thinking"]
    (call,) = first.tool_calls
    transcript = (Message.user("What's the weather in Paris?"), first.message,
                  Message("tool", (ToolResult(call.id, call.name, "Current temperature: 88°F"),)))
    await p.chat(ChatRequest(transcript, tools=(WEATHER,)))
    assert t.json_bodies[1] == expected_body("thinking_continuation")


@pytest.mark.parametrize(
    ("provider", "model", "kept"),
    [("anthropic", "claude-sonnet-4-5", True), ("anthropic", "claude-sonnet-4-5-20250929", True),
     ("anthropic", "claude-opus-4-1", False), ("openai", "o3", False), (None, None, False)],
)
async def test_reasoning_from_another_provider_or_model_is_dropped_with_a_warning(
    build_provider: Build, provider: str | None, model: str | None, kept: bool
) -> None:
    p, t = build_provider(sse_reply("text"))
    reasoning = ReasoningBlock("thought", "sig-1", provider, model)
    transcript = (Message.user("hi"), Message("assistant", (reasoning, TextBlock("hello"))), Message.user("again"))
    r = await p.chat(ChatRequest(transcript))
    sent = t.json_bodies[0]["messages"][1]["content"]
    if kept:
        assert sent[0] == {"type": "thinking", "thinking": "thought", "signature": "sig-1"}
        assert r.warnings == ()
    else:
        assert sent == [{"type": "text", "text": "hello"}]
        assert any("dropped a reasoning block" in w for w in r.warnings)


async def test_unsigned_reasoning_is_dropped(build_provider: Build) -> None:
    p, _ = build_provider()
    prepared = p.prepare(ChatRequest((Message.user("hi"), Message("assistant", (
        ReasoningBlock("x", None, "anthropic", "claude-sonnet-4-5"), TextBlock("y"))), Message.user("z"))))
    assert prepared.body["messages"][1]["content"] == [{"type": "text", "text": "y"}]
    assert any("without a signature" in w for w in prepared.warnings)


async def test_temperature_with_thinking_is_refused_before_dispatch(build_provider: Build) -> None:
    p, t = build_provider(thinking={"type": "enabled", "budget_tokens": 1024})
    with pytest.raises(UnsupportedFeature, match="temperature") as info:
        await deltas_of(p, ChatRequest((Message.user("hi"),), temperature=0.2, max_tokens=2048))
    assert info.value.feature == "temperature" and t.requests == []


async def test_thinking_budget_must_be_below_max_tokens(build_provider: Build) -> None:
    p, t = build_provider(thinking={"type": "enabled", "budget_tokens": 4096})
    with pytest.raises(UnsupportedFeature) as info:
        await deltas_of(p, hello())  # max_tokens 256
    assert info.value.feature == "thinking.budget_tokens" and t.requests == []
    q, _ = build_provider(thinking={"type": "enabled", "budget_tokens": 4096},
                          betas=["interleaved-thinking-2025-05-14"])
    assert q.prepare(hello()).body["thinking"] == {"type": "enabled", "budget_tokens": 4096}


@pytest.mark.parametrize(
    ("model", "config", "request_kw", "feature"),
    [
        ("claude-opus-4-7", {}, {"temperature": 0.0}, "temperature"),
        ("claude-sonnet-5", {}, {"temperature": 1.0}, "temperature"),
        ("claude-opus-4-7", {"thinking": {"type": "enabled", "budget_tokens": 2048}}, {}, "thinking"),
        ("claude-sonnet-4-5", {"thinking": {"type": "adaptive"}}, {}, "thinking"),
        ("claude-3-haiku-20240307", {"thinking": {"type": "enabled", "budget_tokens": 2048}}, {}, "thinking"),
    ],
)
async def test_settings_a_model_cannot_take_are_refused(
    build_provider: Build, model: str, config: dict[str, object], request_kw: dict[str, object], feature: str
) -> None:
    p, t = build_provider(model=model, **config)
    with pytest.raises(UnsupportedFeature) as info:
        await deltas_of(p, ChatRequest((Message.user("hi"),), max_tokens=8192, **request_kw))  # type: ignore[arg-type]
    assert info.value.feature == feature and info.value.model == model
    assert t.requests == []


async def test_adaptive_thinking_on_a_model_that_takes_it(build_provider: Build) -> None:
    p, _ = build_provider(model="claude-opus-4-7", thinking={"type": "adaptive", "display": "summarized"})
    assert p.prepare(hello()).body["thinking"] == {"type": "adaptive", "display": "summarized"}


async def test_capability_overrides_from_config(build_provider: Build) -> None:
    p, _ = build_provider(model="claude-opus-4-7", capabilities={"sampling": True})
    assert p.prepare(hello(temperature=0.5)).body["temperature"] == 0.5


async def test_forced_tool_choice_degrades_with_a_warning(build_provider: Build) -> None:
    p, t = build_provider(sse_reply("text"), thinking={"type": "enabled", "budget_tokens": 1024}, max_tokens=2048)
    r = await p.chat(ChatRequest((Message.user("hi"),), tools=(WEATHER,), tool_choice="required"))
    assert "tool_choice" not in t.json_bodies[0]
    assert any("tool_choice 'required' not sent" in w for w in r.warnings)
    q, _ = build_provider(model="claude-opus-5-5")
    prepared = q.prepare(ChatRequest((Message.user("hi"),), tools=(WEATHER,), tool_choice="get_weather"))
    assert "tool_choice" not in prepared.body and prepared.warnings


async def test_seed_is_reported_as_ignored(build_provider: Build) -> None:
    p, t = build_provider(sse_reply("text"))
    r = await p.chat(hello(seed=7, stop=("END",)))
    assert "seed" not in t.json_bodies[0] and t.json_bodies[0]["stop_sequences"] == ["END"]
    assert any("seed" in w for w in r.warnings)


async def test_extra_settings_pass_through(build_provider: Build) -> None:
    p, _ = build_provider()
    body = p.prepare(ChatRequest((Message.user("hi"),), output_schema=ANSWER,
                                 extra={"top_k": 5, "metadata": {"user_id": "u1"},
                                        "output_config": {"effort": "low"}})).body
    assert body["top_k"] == 5 and body["metadata"] == {"user_id": "u1"}
    assert body["output_config"]["effort"] == "low" and body["output_config"]["format"]["type"] == "json_schema"


# --- caching, images -------------------------------------------------------------------------


async def test_prompt_caching_breakpoints_and_cached_usage(build_provider: Build) -> None:
    lookup = ToolSchema("lookup", "Look up a chapter.",
                        {"type": "object", "properties": {"chapter": {"type": "integer"}}, "required": ["chapter"]},
                        False)
    p, t = build_provider(sse_reply("caching"), cache=True)
    transcript = (
        Message.system("You are an AI assistant tasked with analyzing literary works."),
        Message.system("<the entire contents of Pride and Prejudice>"),
        Message.user("Analyze the major themes in Pride and Prejudice."),
        Message("assistant", (ToolCall("toolu_01LiTq3kPb7v2X9mZr4cDsEf", "lookup", {"chapter": 1}),)),
        Message("tool", (ToolResult("toolu_01LiTq3kPb7v2X9mZr4cDsEf", "lookup",
                                    "It is a truth universally acknowledged..."),)),
        Message.assistant("Chapter 1 opens with the famous line."),
        Message.user("Now summarise the themes."),
    )
    r = await p.chat(ChatRequest(transcript, tools=(lookup,), max_tokens=1024))
    assert t.json_bodies == [expected_body("caching")]
    u = r.usage
    assert (u.input_tokens, u.cache_read_tokens, u.cache_write_tokens, u.output_tokens) == (
        21 + 1200 + 188086, 188086, 1200, 393)
    expected = (21 * Decimal(3) + 188086 * Decimal("0.30") + 1200 * Decimal("3.75") + 393 * Decimal(15)) / M
    assert u.cost == expected


async def test_one_hour_cache_writes_cost_twice_the_input_price(build_provider: Build) -> None:
    p, _ = build_provider(cache=True, cache_ttl="1h")
    body = p.prepare(ChatRequest((Message.system("s"), Message.user("u")))).body
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    usage, warning = p.usage_of({"input_tokens": 10, "cache_creation_input_tokens": 1000, "output_tokens": 5,
                                 "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 1000}})
    assert warning is None
    assert usage.cost == (10 * Decimal(3) + 1000 * Decimal(6) + 5 * Decimal(15)) / M


async def test_cache_breakpoints_skip_thinking_blocks(build_provider: Build) -> None:
    p, _ = build_provider(cache=True)
    reasoning = ReasoningBlock("t", "sig", "anthropic", "claude-sonnet-4-5")
    call = ToolCall("toolu_9", "get_weather", {"city": "Paris"})
    body = p.prepare(ChatRequest((Message.user("q"), Message("assistant", (reasoning, call)),
                                  Message("tool", (ToolResult("toolu_9", "get_weather", "sunny"),))),
                                 tools=(WEATHER,))).body
    thinking, tool_use = body["messages"][1]["content"]
    assert "cache_control" not in thinking and tool_use["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in body["messages"][2]["content"][0]


async def test_images_base64_and_url(build_provider: Build) -> None:
    p, _ = build_provider()
    png = bytes.fromhex("89504e470d0a1a0a")
    msg = Message("user", (ImageBlock("image/png", data=png),
                           ImageBlock("image/jpeg", url="https://upload.wikimedia.org/wikipedia/commons/a/a7/"
                                                        "Camponotus_flavomarginatus_ant.jpg"),
                           TextBlock("Compare these two images.")))
    assert p.prepare(ChatRequest((msg,), max_tokens=1024)).body == expected_body("vision")
    q, _ = build_provider(capabilities={"images": False})
    with pytest.raises(UnsupportedFeature) as info:
        q.prepare(ChatRequest((msg,)))
    assert info.value.feature == "images"


# --- images a tool returned --------------------------------------------------------------------

SHOT = ImageBlock("image/png", data=bytes.fromhex("89504e470d0a1a0a") + bytes(2040))
SHOT_B64 = base64.b64encode(SHOT.data or b"").decode()
CHART = ImageBlock("image/jpeg", url="https://example.com/chart.jpg")


def _tool_turns(*results: ToolResult) -> ChatRequest:
    calls = tuple(ToolCall(r.call_id, r.name, {}) for r in results)
    return ChatRequest((Message.user("Look."), Message("assistant", calls), Message("tool", results)),
                       tools=(WEATHER,), max_tokens=256)


async def test_tool_result_images_are_sent_in_the_tool_result(build_provider: Build) -> None:
    p, t = build_provider(sse_reply("text"))
    await p.chat(_tool_turns(ToolResult("toolu_1", "screenshot", "the page", images=(SHOT, CHART)),
                             ToolResult("toolu_2", "screenshot", "", is_error=True, images=(SHOT,)),
                             ToolResult("toolu_3", "get_weather", "sunny")))
    assert t.json_bodies[0]["messages"][2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
            {"type": "text", "text": "the page"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": SHOT_B64}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/chart.jpg"}},
        ]},
        {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": True, "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": SHOT_B64}},
        ]},
        {"type": "tool_result", "tool_use_id": "toolu_3", "content": "sunny"},  # no images: a string, as before
    ]}


async def test_a_text_only_model_gets_a_note_instead_of_a_tool_results_images(build_provider: Build) -> None:
    p, t = build_provider(sse_reply("text"), capabilities={"images": False})
    deltas = await deltas_of(p, _tool_turns(ToolResult("toolu_1", "screenshot", "the page", images=(SHOT, CHART)),
                                            ToolResult("toolu_2", "screenshot", "", images=(SHOT,))))
    assert t.json_bodies[0]["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": (
            "the page\n\n[2 images left out (image/png, 2,048 bytes; image/jpeg, by URL): "
            "this model does not take images]")},
        {"type": "tool_result", "tool_use_id": "toolu_2",
         "content": "[1 image left out (image/png, 2,048 bytes): this model does not take images]"},
    ]
    warnings = [d.warning for d in deltas if d.warning]
    assert "2 images from tool call 'toolu_1' (screenshot) not sent: claude-sonnet-4-5 does not take images; " \
           "the tool result says so instead" in warnings
    assert any("'toolu_2'" in w for w in warnings)
    assert any(d.finish_reason == "stop" for d in deltas)  # the run goes on


async def test_cache_breakpoint_with_tool_result_images(build_provider: Build) -> None:
    p, _ = build_provider(cache=True)
    request = _tool_turns(ToolResult("toolu_1", "screenshot", "the page", images=(SHOT,)))
    request = ChatRequest((*request.messages, Message.assistant("Seen."), Message.user("Now what?")),
                          tools=request.tools)
    body = p.prepare(request).body
    tool_turn, answer = body["messages"][2], body["messages"][3]
    assert answer["content"][-1]["cache_control"] == {"type": "ephemeral"}  # the prefix before the newest turn
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in json.dumps(tool_turn)  # nothing else marked: at most 4 breakpoints
    # a tool result with images closing the prefix carries the breakpoint on the tool_result block itself
    body = p.prepare(ChatRequest((*request.messages[:3], Message.user("Now what?")), tools=request.tools)).body
    assert body["messages"][1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    blocks = body["messages"][2]["content"]
    assert [b["type"] for b in blocks] == ["tool_result", "text"]
    assert all("cache_control" not in c for c in blocks[0]["content"])


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=20), st.lists(st.one_of(
    st.binary(min_size=1, max_size=32).map(lambda b: ImageBlock("image/webp", data=b)),
    st.sampled_from(["https://a.example/1.png", "https://b.example/2.gif"]).map(lambda u: ImageBlock(url=u)),
), min_size=1, max_size=4), st.booleans())
def test_every_tool_image_is_sent_in_order(build_provider: Build, text: str, images: list[ImageBlock],
                                           vision: bool) -> None:
    p, _ = build_provider(capabilities={"images": vision})
    block = p.prepare(_tool_turns(ToolResult("toolu_1", "t", text, images=tuple(images)))).body["messages"][2][
        "content"][0]
    if not vision:
        assert isinstance(block["content"], str) and block["content"].startswith(text)
        assert f"[{len(images)} image" in block["content"]
        return
    sent = block["content"]
    if text:
        assert sent[0] == {"type": "text", "text": text}
        sent = sent[1:]
    assert len(sent) == len(images)
    for got, image in zip(sent, images, strict=True):
        src = got["source"]
        if image.data is not None:
            assert src == {"type": "base64", "media_type": "image/webp", "data": base64.b64encode(image.data).decode()}
        else:
            assert src == {"type": "url", "url": image.url}


# --- errors ----------------------------------------------------------------------------------

_ERRORS = [n for n in json.loads((__import__("anthropic_wire_helpers").FIXTURES / "errors.json").read_text())]


@pytest.mark.parametrize("name", _ERRORS)
async def test_http_errors_are_classified(build_provider: Build, name: str) -> None:
    e = error_fixture(name)
    p, t = build_provider(error_reply(name))
    with pytest.raises(ProviderError) as info:
        await deltas_of(p, hello())
    err = info.value
    assert err.failure_class is FailureClass(e["failure_class"])
    assert err.status == e["status"] and err.provider == "anthropic"
    assert err.code == e["body"]["error"].get("details", {}).get("error_code", e["body"]["error"]["type"])
    assert e["body"]["error"]["message"] in str(err)
    if "request-id" in e["headers"]:
        assert err.request_id == e["headers"]["request-id"]
    if name == "error_rate_limited":
        assert err.retry_after == 2.0
    for text in (str(err), repr(err), repr(err.args)):
        assert SECRET not in text
    assert t.closed == 1


async def test_an_error_event_mid_stream_raises(build_provider: Build) -> None:
    p, t = build_provider(sse_reply("error_midstream"))
    seen: list[Delta] = []
    with pytest.raises(ProviderError) as info:
        async for d in p.stream(hello()):
            seen.append(d)
    assert [d.text for d in seen if d.text] == ["Hel"]
    assert not any(d.finish_reason for d in seen)
    assert info.value.failure_class is FailureClass.OVERLOADED and info.value.code == "overloaded_error"
    assert info.value.failure_class.transient and t.closed == 1


async def test_a_stream_without_message_stop_raises_server_error(build_provider: Build) -> None:
    p, t = build_provider(sse_reply("truncated"))
    with pytest.raises(ProviderError) as info:
        await deltas_of(p, hello())
    assert info.value.failure_class is FailureClass.SERVER_ERROR and t.closed == 1


async def test_a_dropped_connection_mid_stream_raises_server_error(build_provider: Build) -> None:
    import httpx

    raw = sse_bytes("text")
    p, _ = build_provider(Reply(200, SSE_HEADERS, chunks=[raw[:300], httpx.ReadError("connection reset")]))
    with pytest.raises(ProviderError) as info:
        await deltas_of(p, hello())
    assert info.value.failure_class is FailureClass.SERVER_ERROR


async def test_closing_the_stream_early_closes_the_response(build_provider: Build) -> None:
    p, t = build_provider(sse_reply("text"))
    stream = p.stream(hello())
    first = await stream.__anext__()
    assert first.model == "claude-sonnet-4-5-20250929"
    await stream.aclose()
    assert t.closed == 1


# --- credentials, base URL, headers ----------------------------------------------------------


async def test_auth_token_is_sent_as_bearer(build_provider: Build) -> None:
    p, t = build_provider(sse_reply("text"), auth_token="oauth-token-123")
    await p.chat(hello())
    h = t.requests[0].headers
    assert h["authorization"] == "Bearer oauth-token-123" and "x-api-key" not in h


@pytest.mark.parametrize(
    ("env", "key", "bearer"),
    [({"ANTHROPIC_API_KEY": "env-key"}, "env-key", None),
     ({"ANTHROPIC_AUTH_TOKEN": "env-token"}, None, "Bearer env-token"),
     ({"ANTHROPIC_API_KEY": "env-key", "ANTHROPIC_AUTH_TOKEN": "env-token"}, "env-key", "Bearer env-token")],
)
async def test_credentials_from_the_environment_at_dispatch(
    build_provider: Build, env: dict[str, str], key: str | None, bearer: str | None
) -> None:
    live: dict[str, str] = {}
    p, t = build_provider(sse_reply("text"), env=live)
    live.update(env)  # read at dispatch, not when the provider was built
    await p.chat(hello())
    h = t.requests[0].headers
    assert h.get("x-api-key") == key and h.get("authorization") == bearer


async def test_config_credential_wins_over_the_environment(build_provider: Build) -> None:
    p, t = build_provider(sse_reply("text"), env={"ANTHROPIC_AUTH_TOKEN": "env-token"}, api_key="cfg-key")
    await p.chat(hello())
    h = t.requests[0].headers
    assert h["x-api-key"] == "cfg-key" and "authorization" not in h


async def test_no_credential_fails_before_sending(build_provider: Build) -> None:
    p, t = build_provider(env={})
    with pytest.raises(ProviderError) as info:
        await deltas_of(p, hello())
    assert info.value.failure_class is FailureClass.AUTHENTICATION and t.requests == []


async def test_base_url_from_environment_and_config(build_provider: Build) -> None:
    p, t = build_provider(sse_reply("text"), env={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/"})
    await p.chat(hello())
    assert str(t.requests[0].url) == "http://127.0.0.1:9/v1/messages"
    q, u = build_provider(sse_reply("text"), base_url="https://proxy.example/anthropic",
                          env={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://ignored"})
    await q.chat(hello())
    assert str(u.requests[0].url) == "https://proxy.example/anthropic/v1/messages"


async def test_betas_and_extra_headers(build_provider: Build) -> None:
    p, t = build_provider(sse_reply("text"), betas=["interleaved-thinking-2025-05-14", "context-1m-2025-08-07"],
                          headers={"X-Team": "search"})
    await p.chat(hello())
    h = t.requests[0].headers
    assert h["anthropic-beta"] == "interleaved-thinking-2025-05-14,context-1m-2025-08-07"
    assert h["x-team"] == "search"


async def test_secrets_never_show(build_provider: Build, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    p, _ = build_provider(sse_reply("text"), error_reply("error_auth"), model="claude-unknown-9",
                          auth_token="tok-SECRET-42", headers={"X-Custom-Auth": "hdr-SECRET-43"}, api_key=SECRET)
    await p.chat(hello())
    with pytest.raises(ProviderError) as info:
        await p.chat(hello())
    texts = [repr(p), str(p), repr(p.config), str(p.config), str(p.config.model_dump()), str(info.value),
             repr(info.value), caplog.text]
    for secret in (SECRET, "tok-SECRET-42", "hdr-SECRET-43"):
        for text in texts:
            assert secret not in text
    with pytest.raises(ValueError) as bad:
        AnthropicConfig(model="m", api_key=SECRET, max_tokens=0)
    assert SECRET not in str(bad.value) and SECRET not in repr(bad.value)


# --- pricing ---------------------------------------------------------------------------------


async def test_an_unknown_model_is_unpriced_with_a_warning_logged_once(
    build_provider: Build, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="seamkit_anthropic")
    p, _ = build_provider(sse_reply("text"), sse_reply("text"), model="claude-unknown-9")
    assert p.price is None
    r1 = await p.chat(hello())
    r2 = await p.chat(hello())
    for r in (r1, r2):
        assert r.usage.cost is None and r.usage.cost_source == "unpriced"
        assert any("no price known" in w for w in r.warnings)
    assert caplog.text.count("no price known") == 1


async def test_price_override_and_dated_model_ids(build_provider: Build) -> None:
    p, _ = build_provider(sse_reply("text"), model="claude-unknown-9", price={"input": "1", "output": "2"})
    r = await p.chat(hello())
    assert r.usage.cost == (25 + 15 * 2) / M and r.usage.cost_source == "estimated"
    dated, _ = build_provider(model="claude-haiku-4-5-20251001")
    assert dated.price is not None and dated.price.input == Decimal(1)


async def test_long_prompt_pricing(build_provider: Build) -> None:
    p, _ = build_provider(model="claude-haiku-5-5")
    short, _ = p.usage_of({"input_tokens": 100_000, "output_tokens": 10})
    long, _ = p.usage_of({"input_tokens": 50_000, "cache_read_input_tokens": 50_001, "output_tokens": 10})
    assert short.cost == (100_000 * Decimal("0.10") + 10 * Decimal("0.50")) / M
    assert long.cost == (50_000 * Decimal("0.50") + 50_001 * Decimal("0.05") + 10 * Decimal("2.50")) / M


async def test_collect_result_equals_chat(build_provider: Build) -> None:
    p, _ = build_provider(sse_reply("tool_call"), sse_reply("tool_call"))
    req = ChatRequest((SYSTEM, Message.user("What is the weather in Paris?")), tools=(WEATHER,),
                      tool_choice="required", max_tokens=256)
    assert await collect_result(p.stream(req), provider="anthropic", model=p.model) == await p.chat(req)


async def test_interleaved_thinking_goes_back_in_its_original_order(build_provider: Build) -> None:
    p, t = build_provider(sse_reply("thinking_interleaved"), sse_reply("text"),
                          thinking={"type": "enabled", "budget_tokens": 8000},
                          betas=["interleaved-thinking-2025-05-14"])
    question = Message.user("Weather in Paris and Tokyo?")
    first = await p.chat(ChatRequest((question,), tools=(WEATHER,)))
    (block,) = [b for b in first.message.content if isinstance(b, ReasoningBlock)]
    assert block.text == "First Paris.Now Tokyo."
    paris, tokyo = first.tool_calls
    results = Message("tool", (ToolResult(paris.id, paris.name, "sunny"), ToolResult(tokyo.id, tokyo.name, "rain")))
    await p.chat(ChatRequest((question, first.message, results), tools=(WEATHER,)))
    assert t.json_bodies[1] == expected_body("thinking_interleaved_continuation")
    assert t.requests[1].headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"


# --- issue 10: a 2xx answer that is not an event stream --------------------------------------------

CAPTIVE_PORTAL = (b"<!DOCTYPE html>\n<html><head><title>Hotel Guest Network</title></head>\n"
                  b"<body>Enter your room number to connect.</body></html>\n")


async def test_a_captive_portal_page_with_200_is_a_classified_failure(build_provider: Build) -> None:
    p, t = build_provider(Reply(200, {"content-type": "text/html; charset=utf-8"}, body=CAPTIVE_PORTAL))
    with pytest.raises(ProviderError) as info:
        await deltas_of(p, hello())
    err = info.value
    assert (err.failure_class, err.status, err.code, err.provider) == (
        FailureClass.UNKNOWN, 200, "unexpected_body", "anthropic")
    assert "got text/html; charset=utf-8: '<!DOCTYPE html> <html><head><title>Hotel Guest Network" in str(err)
    assert SECRET not in str(err) and t.closed == 1


async def test_an_error_object_with_200_is_classified_from_its_body(build_provider: Build) -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"},
            "request_id": "req_011CSHoEeqs5C35K2UUqR7Fz"}
    p, _ = build_provider(Reply(200, json=body))
    with pytest.raises(ProviderError) as info:
        await deltas_of(p, hello())
    assert (info.value.failure_class, info.value.status, info.value.request_id) == (
        FailureClass.OVERLOADED, 200, "req_011CSHoEeqs5C35K2UUqR7Fz")


async def test_prompt_is_too_long_is_context_length(build_provider: Build) -> None:
    p, _ = build_provider(error_reply("error_prompt_too_long"))
    with pytest.raises(ProviderError) as info:
        await deltas_of(p, hello())
    err = info.value
    assert (err.failure_class, err.status, err.code) == (FailureClass.CONTEXT_LENGTH, 400, "invalid_request_error")
    assert "prompt is too long: 208310 tokens > 200000 maximum" in str(err)


@pytest.mark.parametrize("chunks", [
    [CAPTIVE_PORTAL],
    [CAPTIVE_PORTAL[:2], CAPTIVE_PORTAL[2:]],
    [b": ping\n\n", CAPTIVE_PORTAL],  # a comment first: it ends having dispatched no event
], ids=["whole", "split", "comment_first"])
async def test_a_page_declared_as_an_event_stream_is_a_classified_failure(
    build_provider: Build, chunks: list[bytes]
) -> None:
    p, t = build_provider(Reply(200, {"content-type": "text/event-stream"}, chunks=chunks))
    with pytest.raises(ProviderError) as info:
        await deltas_of(p, hello())
    err = info.value
    assert (err.failure_class, err.status, err.code, err.provider) == (
        FailureClass.UNKNOWN, 200, "unexpected_body", "anthropic")
    assert "got text/event-stream" in str(err) and "Hotel Guest Network" in str(err)
    assert SECRET not in str(err) and t.closed == 1
