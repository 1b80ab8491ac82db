"""``openai`` (Responses API): the request bodies sent and the SSE streams read, replayed from
``fixtures/responses`` (written from the OpenAI API reference; see its README)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
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
from seamkit_http import ReplayTransport, Reply, make_client
from seamkit_openai._common import image_url
from seamkit_openai.config import OpenAIResponsesConfig
from seamkit_openai.responses import OpenAIResponsesProvider, build, same_model

FIX = Path(__file__).parent / "fixtures" / "responses"
ERRORS = json.loads((FIX / "errors.json").read_text())
KEY = "sk-test-responses-5d1e9b7c3a"
SYSTEM = Message.system("You are a terse assistant.")
WEATHER = ToolSchema(
    "get_weather",
    "Current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False},
    False,
)
ANSWER = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"],
          "additionalProperties": False}
ANSWER_1001 = "No. 1001 = 7 \u00d7 11 \u00d7 13."  # multi-byte characters split across reads
ENCRYPTED = "gAAAAABoAajI0vXk3q9Jt7mQZ2lP4sR8wY1bN6cF0hT5uV3eK9xD2oG7aL4iM8jW1pS6yB0rE3nH5fU9tC2vQ7kZ4xA=="


def sse(name: str, size: int = 0) -> Reply:
    data = (FIX / name).read_bytes()
    chunks = [data] if size == 0 else [data[i:i + size] for i in range(0, len(data), size)]
    return Reply(200, {"content-type": "text/event-stream"}, chunks=chunks)


def events_reply(*events: dict[str, Any], with_event_lines: bool = True) -> Reply:
    """A stream of the given event payloads (sequence numbers added)."""
    out = []
    for i, ev in enumerate(events):
        payload = json.dumps({"type": ev["type"], "sequence_number": i, **ev})
        out.append((f"event: {ev['type']}\n" if with_event_lines else "") + f"data: {payload}\n\n")
    return Reply(200, {"content-type": "text/event-stream"}, chunks=["".join(out).encode()])


def error_reply(name: str) -> Reply:
    spec = ERRORS[name]
    return Reply(spec["status"], spec["headers"], body=json.dumps(spec["body"]).encode())


def expected(name: str) -> dict[str, Any]:
    body = json.loads((FIX / name).read_text())
    body.pop("_comment", None)
    return dict(body)


def provider(*replies: Reply | BaseException, model: str = "gpt-4.1", environ: dict[str, str] | None = None,
             **config: Any) -> tuple[OpenAIResponsesProvider, ReplayTransport]:
    transport = ReplayTransport(*replies)
    config.setdefault("api_key", KEY)
    p = build(OpenAIResponsesConfig(model=model, **config), client=make_client(transport=transport),
              environ={} if environ is None else environ)
    return p, transport


async def deltas(p: OpenAIResponsesProvider, request: ChatRequest) -> list[Delta]:
    return [d async for d in p.stream(request)]


def text_request(**kw: Any) -> ChatRequest:
    return ChatRequest((SYSTEM, Message.user("Say hello.")), max_tokens=256, **kw)


# --- requests ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scenario", "model", "request_", "settings"),
    [
        ("text", "gpt-4.1", text_request(), {}),
        ("tool_call", "gpt-4.1", ChatRequest((SYSTEM, Message.user("What is the weather in Paris?")),
                                             tools=(WEATHER,), tool_choice="required", max_tokens=256), {}),
        ("parallel_tool_calls", "gpt-4.1",
         ChatRequest((SYSTEM, Message.user("What is the weather in Paris and in Tokyo?")), tools=(WEATHER,),
                     max_tokens=256), {}),
        ("structured_output", "gpt-4.1",
         ChatRequest((SYSTEM, Message.user("What is six times seven?")), output_schema=ANSWER, max_tokens=256), {}),
        ("reasoning", "o4-mini", ChatRequest((Message.user("Is 1001 prime? Think it through."),), max_tokens=4096),
         {"reasoning_effort": "medium"}),
    ],
)
async def test_request_body_and_headers(scenario: str, model: str, request_: ChatRequest,
                                        settings: dict[str, Any]) -> None:
    p, t = provider(sse(f"{scenario}.sse"), model=model, organization="org-abc", project="proj_123", **settings)
    await p.chat(request_)
    assert t.json_bodies == [expected(f"{scenario}.request.json")]
    (sent,) = t.requests
    assert sent.method == "POST" and str(sent.url) == "https://api.openai.com/v1/responses"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.headers["accept"] == "text/event-stream"
    assert sent.headers["content-type"] == "application/json"
    assert sent.headers["openai-organization"] == "org-abc" and sent.headers["openai-project"] == "proj_123"


async def test_continuation_sends_reasoning_calls_results_and_images() -> None:
    signature = json.dumps({"v": 1, "items": [{
        "id": "rs_6801a8c7e8f98193b2c3d4e5f6a7b8c9",
        "summary": ["**Locating the photo**\n\nThe Eiffel Tower: Paris."],
        "encrypted_content": ENCRYPTED,
    }]})
    messages = (
        Message.system("Use the tools."),
        Message("user", (TextBlock("What is the weather where this photo was taken?"),
                         ImageBlock("image/png", data=b"\x89PNG\r\n\x1a\n"))),
        Message("assistant", (
            ReasoningBlock("**Locating the photo**\n\nThe Eiffel Tower: Paris.", signature, "openai",
                           "o4-mini-2025-04-16"),
            ToolCall("call_Dq7x2bV9mKs3LpQ8rT4wYz1N", "get_weather", {"city": "Paris"}),
        )),
        Message("tool", (ToolResult("call_Dq7x2bV9mKs3LpQ8rT4wYz1N", "get_weather",
                                    '{"temperature_c":18,"sky":"clear"}'),)),
        Message.system("Answer in one sentence."),
    )
    p, t = provider(sse("text.sse"), model="o4-mini", reasoning_effort="low")
    result = await p.chat(ChatRequest(messages, tools=(WEATHER,)))
    assert t.json_bodies == [expected("continuation.request.json")]
    assert result.warnings == ()


async def test_reasoning_round_trip_sends_back_the_encrypted_item() -> None:
    p, t = provider(sse("reasoning.sse"), sse("text.sse"), model="o4-mini")
    first_req = ChatRequest((Message.user("Is 1001 prime? Think it through."),))
    first = await p.chat(first_req)
    second = ChatRequest((*first_req.messages, first.message, Message.user("And 1003?")))
    await p.chat(second)
    sent = t.json_bodies[1]["input"]
    assert sent[1] == {
        "type": "reasoning",
        "id": "rs_6801a8c7e8f98193b2c3d4e5f6a7b8c9",
        "summary": [
            {"type": "summary_text", "text": "**Checking divisibility of 1001**\n\n1001 = 7 x 143."},
            {"type": "summary_text", "text": "**Factoring 143**\n\n143 = 11 x 13, so 1001 = 7 x 11 x 13."},
        ],
        "encrypted_content": ENCRYPTED,
    }
    assert sent[2] == {"role": "assistant", "content": ANSWER_1001}
    assert sent[3] == {"role": "user", "content": "And 1003?"}


@pytest.mark.parametrize(
    ("block", "who"),
    [
        (ReasoningBlock("thinking", "sig-anthropic", "anthropic", "claude-sonnet-4-5"), "anthropic:claude-sonnet-4-5"),
        (ReasoningBlock("thinking", json.dumps({"v": 1, "items": [{"id": "rs_1", "summary": []}]}), "openai", "gpt-5"),
         "openai:gpt-5"),
        (ReasoningBlock("thinking", None, "openai_chat", "o4-mini"), "openai_chat:o4-mini"),
    ],
)
async def test_foreign_reasoning_is_dropped_with_a_warning(block: ReasoningBlock, who: str) -> None:
    p, t = provider(sse("text.sse"), model="o4-mini")
    req = ChatRequest((Message.user("hi"), Message("assistant", (block, TextBlock("hello"))), Message.user("more")))
    ds = await deltas(p, req)
    assert all(item.get("type") != "reasoning" for item in t.json_bodies[0]["input"])
    assert t.json_bodies[0]["input"][1] == {"role": "assistant", "content": "hello"}
    warnings = [d.warning for d in ds if d.warning]
    assert len(warnings) == 1 and who in warnings[0] and "dropped a reasoning block" in warnings[0]
    assert ds.index(next(d for d in ds if d.warning)) < ds.index(next(d for d in ds if d.text))


async def test_own_reasoning_without_a_signature_is_dropped_with_a_warning() -> None:
    p, t = provider(sse("text.sse"), model="o4-mini")
    req = ChatRequest((Message.user("hi"), Message("assistant", (ReasoningBlock("t", None, "openai", "o4-mini"),
                                                                  TextBlock("x"))), Message.user("more")))
    result = await p.chat(req)
    assert [w for w in result.warnings if "no reasoning item id" in w]
    assert all(item.get("type") != "reasoning" for item in t.json_bodies[0]["input"])


def test_same_model_accepts_dated_snapshots_only_of_the_family() -> None:
    assert same_model("o4-mini-2025-04-16", "o4-mini")
    assert same_model("o4-mini", "o4-mini-2025-04-16")
    assert same_model("gpt-4.1", "gpt-4.1")
    assert not same_model("o4-mini", "o3")
    assert not same_model("gpt-4.1-mini", "gpt-4.1")
    assert not same_model(None, "gpt-4.1")


async def test_error_tool_result_says_error_in_its_content() -> None:
    # function_call_output has no error field: the text says it (error_marked)
    p, t = provider(sse("text.sse"))
    req = ChatRequest((
        Message.user("weather?"),
        Message("assistant", (ToolCall("call_1", "get_weather", {"city": "Atlantis"}),)),
        Message("tool", (ToolResult("call_1", "get_weather", "unknown city: Atlantis", is_error=True),)),
    ), tools=(WEATHER,))
    await p.chat(req)
    assert t.json_bodies[0]["input"][1:] == [
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city":"Atlantis"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "Error: unknown city: Atlantis"},
    ]


SHOT = ImageBlock("image/png", data=b"\x89PNG\r\n\x1a\n")  # data:image/png;base64,iVBORw0KGgo=
CHART = ImageBlock("image/jpeg", url="https://example.com/chart.jpg")


def _tool_turn(*results: ToolResult) -> ChatRequest:
    return ChatRequest((Message.user("Look."), Message("assistant", tuple(ToolCall(r.call_id, r.name, {})
                                                                          for r in results)),
                        Message("tool", results)), tools=(WEATHER,))


async def test_tool_result_images_are_sent_in_the_function_call_output() -> None:
    p, t = provider(sse("text.sse"))
    r = await p.chat(_tool_turn(ToolResult("call_1", "screenshot", "the page", images=(SHOT, CHART)),
                                ToolResult("call_2", "screenshot", "", is_error=True, images=(SHOT,)),
                                ToolResult("call_3", "get_weather", "sunny")))
    assert t.json_bodies[0]["input"][4:] == [
        {"type": "function_call_output", "call_id": "call_1", "output": [
            {"type": "input_text", "text": "the page"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"},
            {"type": "input_image", "image_url": "https://example.com/chart.jpg", "detail": "auto"},
        ]},
        {"type": "function_call_output", "call_id": "call_2", "output": [
            {"type": "input_text", "text": "Error"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"},
        ]},
        {"type": "function_call_output", "call_id": "call_3", "output": "sunny"},  # no images: a string
    ]
    assert r.warnings == ()


async def test_a_model_without_vision_gets_a_note_in_the_output_not_a_refusal() -> None:
    p, t = provider(sse("text.sse"), model="o3-mini")
    r = await p.chat(_tool_turn(ToolResult("call_1", "screenshot", "the page", images=(SHOT, CHART)),
                                ToolResult("call_2", "get_weather", "sunny")))
    assert t.json_bodies[0]["input"][3:] == [
        {"type": "function_call_output", "call_id": "call_1", "output": (
            "the page\n\n[2 images left out (image/png, 8 bytes; image/jpeg, by URL): "
            "this model does not take images]")},
        {"type": "function_call_output", "call_id": "call_2", "output": "sunny"},
    ]
    assert "2 images from tool call 'call_1' (screenshot) not sent: o3-mini does not take images; " \
           "the tool result says so instead" in r.warnings


@settings(max_examples=50, deadline=None)
@given(st.text(max_size=12), st.lists(st.binary(min_size=1, max_size=16), max_size=3), st.booleans())
def test_a_tool_results_output_holds_its_text_and_each_image_in_order(text: str, blobs: list[bytes],
                                                                        vision: bool) -> None:
    p, _ = provider(model="gpt-4.1" if vision else "o3-mini")
    images = tuple(ImageBlock("image/gif", data=b) for b in blobs)
    body, warnings = p.body(_tool_turn(ToolResult("call_1", "t", text, images=images)))
    output = body["input"][-1]["output"]
    if not images:
        assert output == text and warnings == []
    elif not vision:
        assert output.startswith(text) and output.endswith("this model does not take images]") and warnings
    else:
        head = [{"type": "input_text", "text": text}] if text else []
        assert output == head + [{"type": "input_image", "image_url": image_url(i), "detail": "auto"} for i in images]
        assert warnings == []


async def test_image_by_url_and_settings() -> None:
    p, t = provider(sse("text.sse"))
    req = ChatRequest((Message("user", (ImageBlock(url="https://example.com/cat.png"), TextBlock("What is it?"))),),
                      temperature=0.2, max_tokens=50, tool_choice="none", tools=(WEATHER,),
                      extra={"parallel_tool_calls": False, "service_tier": "flex"})
    await p.chat(req)
    body = t.json_bodies[0]
    assert body["input"] == [{"role": "user", "content": [
        {"type": "input_image", "image_url": "https://example.com/cat.png", "detail": "auto"},
        {"type": "input_text", "text": "What is it?"},
    ]}]
    assert body["temperature"] == 0.2 and body["max_output_tokens"] == 50
    assert body["tool_choice"] == "none"
    assert body["parallel_tool_calls"] is False and body["service_tier"] == "flex"
    assert "instructions" not in body and "reasoning" not in body and "include" not in body


async def test_named_tool_choice_and_non_strict_tool() -> None:
    search = ToolSchema("search", "Search.", {"type": "object", "properties": {
        "q": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["q"]}, False)
    p, t = provider(sse("tool_call.sse"))
    await p.chat(ChatRequest((Message.user("go"),), tools=(WEATHER, search), tool_choice="search"))
    body = t.json_bodies[0]
    assert body["tool_choice"] == {"type": "function", "name": "search"}
    weather, search_spec = body["tools"]
    assert weather["strict"] is True and weather["parameters"]["additionalProperties"] is False
    # an optional property would become required-and-nullable in strict mode: sent as written, strict false
    assert search_spec == {"type": "function", "name": "search", "description": "Search.",
                           "parameters": dict(search.parameters), "strict": False}


@pytest.mark.parametrize(
    ("model", "request_", "feature"),
    [
        ("o4-mini", text_request(temperature=0.5), "temperature"),
        ("gpt-4.1", text_request(stop=("\n",)), "stop"),
        ("gpt-4.1", ChatRequest((Message.user("x"),), tools=(WEATHER,), tool_choice="nope"), "tool_choice"),
        ("gpt-4.1", ChatRequest((Message.user("x"),), tool_choice="required"), "tool_choice"),
        ("o1-mini", ChatRequest((Message.user("x"),), tools=(WEATHER,)), "tools"),
    ],
)
async def test_unsupported_settings_are_refused_before_dispatch(model: str, request_: ChatRequest,
                                                                feature: str) -> None:
    p, t = provider(sse("text.sse"), model=model)
    with pytest.raises(UnsupportedFeature) as info:
        await deltas(p, request_)
    assert feature in (info.value.feature or "")
    assert t.requests == []


async def test_effort_mapped_to_nearest_level_and_seed_dropped_with_warnings() -> None:
    p, t = provider(sse("text.sse"), model="o3", reasoning_effort="minimal", reasoning_summary=None)
    result = await p.chat(text_request(seed=7))
    body = t.json_bodies[0]
    assert body["reasoning"] == {"effort": "low"}
    assert "seed" not in body
    assert "reasoning_effort 'minimal' not supported by o3; sent 'low'" in result.warnings
    assert any("seed" in w for w in result.warnings)


async def test_store_true_sends_no_include() -> None:
    p, t = provider(sse("text.sse"), model="o4-mini", store=True)
    await p.chat(text_request())
    assert t.json_bodies[0]["store"] is True and "include" not in t.json_bodies[0]


async def test_credentials_and_base_url_from_the_environment() -> None:
    env = {"OPENAI_API_KEY": "sk-env-key-0123", "OPENAI_BASE_URL": "https://gateway.example.net/openai/v1"}
    p, t = provider(sse("text.sse"), api_key=None, environ=env)
    await p.chat(text_request())
    assert str(t.requests[0].url) == "https://gateway.example.net/openai/v1/responses"
    assert t.requests[0].headers["authorization"] == "Bearer sk-env-key-0123"


async def test_no_key_for_openai_is_an_authentication_error_before_dispatch() -> None:
    p, t = provider(sse("text.sse"), api_key=None, environ={})
    with pytest.raises(ProviderError) as info:
        await deltas(p, text_request())
    assert info.value.failure_class is FailureClass.AUTHENTICATION
    assert t.requests == []


async def test_loopback_server_without_key_sends_no_authorization_and_costs_nothing() -> None:
    p, t = provider(sse("text.sse"), api_key=None, base_url="http://127.0.0.1:8080/v1", model="local-model")
    result = await p.chat(text_request())
    assert "authorization" not in t.requests[0].headers
    assert result.usage.cost == Decimal(0) and result.usage.cost_source == "local"
    assert result.warnings == ()


# --- streams ----------------------------------------------------------------------------------


async def test_text_stream_deltas_usage_and_model() -> None:
    p, _ = provider(sse("text.sse", size=7))
    ds = await deltas(p, text_request())
    assert [d.text for d in ds if d.text] == ["Hello", "!", " How can I help", " you today?"]
    last = ds[-1]
    assert last.finish_reason == "stop" and last.model == "gpt-4.1-2025-04-14"
    assert last.usage is not None and last.usage.input_tokens == 37 and last.usage.output_tokens == 11
    # gpt-4.1: $2.00 / $8.00 per 1M tokens
    assert last.usage.cost == (37 * Decimal("2.00") + 11 * Decimal("8.00")) / 1_000_000
    assert last.usage.cost_source == "estimated"
    assert last.raw_usage is not None and last.raw_usage["total_tokens"] == 48
    assert sum(1 for d in ds if d.finish_reason) == 1


async def test_cached_tokens_are_part_of_input_not_added_twice() -> None:
    p, _ = provider(sse("text_cached.sse"))
    r = await p.chat(text_request())
    u = r.usage
    assert (u.input_tokens, u.cache_read_tokens, u.output_tokens) == (2006, 1920, 4)
    # uncached 86 at $2.00, cached 1920 at $0.50, output 4 at $8.00
    assert u.cost == (86 * Decimal("2.00") + 1920 * Decimal("0.50") + 4 * Decimal("8.00")) / 1_000_000


async def test_reasoning_stream() -> None:
    p, _ = provider(sse("reasoning.sse", size=11), model="o4-mini")
    ds = await deltas(p, ChatRequest((Message.user("Is 1001 prime?"),)))
    first_text = next(i for i, d in enumerate(ds) if d.text)
    assert all(i < first_text for i, d in enumerate(ds) if d.reasoning)
    r = await collect_result(iter(ds), provider=p.provider, model=p.model)
    (block,) = [b for b in r.message.content if isinstance(b, ReasoningBlock)]
    assert block.text == ("**Checking divisibility of 1001**\n\n1001 = 7 x 143.\n\n"
                          "**Factoring 143**\n\n143 = 11 x 13, so 1001 = 7 x 11 x 13.")
    assert block.provider == "openai" and block.model == "o4-mini-2025-04-16"
    assert json.loads(block.signature or "")["items"][0]["encrypted_content"] == ENCRYPTED
    assert r.text == ANSWER_1001
    assert r.usage.reasoning_tokens == 384 and r.usage.output_tokens == 402


@pytest.mark.parametrize(("fixture", "finish", "text"), [
    ("incomplete_max_tokens.sse", "length", "Once upon a time there was a"),
    ("incomplete_content_filter.sse", "content_filter", "I can"),
    ("refusal.sse", "refusal", "I'm sorry, I can't help with that."),
])
async def test_incomplete_and_refusal_finish_reasons(fixture: str, finish: str, text: str) -> None:
    p, _ = provider(sse(fixture))
    r = await p.chat(text_request())
    assert r.finish_reason == finish and r.text == text
    assert r.usage.output_tokens > 0


@pytest.mark.parametrize(("fixture", "failure"), [
    ("failed_server_error.sse", FailureClass.SERVER_ERROR),
    ("failed_rate_limit.sse", FailureClass.RATE_LIMITED),
    ("error_midstream.sse", FailureClass.SERVER_ERROR),
    ("truncated.sse", FailureClass.SERVER_ERROR),
])
async def test_failures_in_the_stream_raise_and_never_finish(fixture: str, failure: FailureClass) -> None:
    p, t = provider(sse(fixture))
    seen: list[Delta] = []
    with pytest.raises(ProviderError) as info:
        async for d in p.stream(text_request()):
            seen.append(d)
    assert info.value.failure_class is failure
    assert info.value.provider == "openai" and info.value.status is None
    assert not any(d.finish_reason or d.usage for d in seen)
    assert t.closed == 1
    if fixture in ("error_midstream.sse", "truncated.sse"):
        assert "".join(d.text or "" for d in seen).startswith("Hello")


async def test_error_event_in_nested_form_and_image_codes() -> None:
    nested = events_reply({"type": "error", "error": {"type": "invalid_request_error", "code": "insufficient_quota",
                                                      "message": "You exceeded your current quota", "param": None}})
    p, _ = provider(nested)
    with pytest.raises(ProviderError) as info:
        await deltas(p, text_request())
    assert info.value.failure_class is FailureClass.QUOTA and not info.value.failure_class.transient
    failed = events_reply({"type": "response.failed", "response": {
        "id": "resp_1", "status": "failed", "error": {"code": "invalid_image_url", "message": "bad image url"}}})
    p, _ = provider(failed)
    with pytest.raises(ProviderError) as info:
        await deltas(p, text_request())
    assert info.value.failure_class is FailureClass.INVALID_REQUEST and info.value.code == "invalid_image_url"


async def test_dropped_connection_mid_stream_is_server_error() -> None:
    data = (FIX / "text.sse").read_bytes()
    reply = Reply(200, {"content-type": "text/event-stream"},
                  chunks=[data[:1500], httpx.ReadError("connection reset by peer")])
    p, t = provider(reply)
    with pytest.raises(ProviderError) as info:
        await deltas(p, text_request())
    assert info.value.failure_class is FailureClass.SERVER_ERROR
    assert t.closed == 1


async def test_invalid_json_event_is_server_error() -> None:
    reply = Reply(200, {"content-type": "text/event-stream"},
                  chunks=[b"event: response.output_text.delta\ndata: {not json\n\n"])
    p, _ = provider(reply)
    with pytest.raises(ProviderError) as info:
        await deltas(p, text_request())
    assert info.value.failure_class is FailureClass.SERVER_ERROR


async def test_closing_early_closes_the_response() -> None:
    p, t = provider(sse("text.sse", size=64))
    stream = p.stream(text_request())
    first = await stream.__anext__()  # type: ignore[attr-defined]
    assert first.text == "Hello"
    await stream.aclose()  # type: ignore[attr-defined]
    assert t.closed == 1


async def test_events_announced_only_when_done_and_data_only_lines() -> None:
    """A compatible server that sends no deltas, only the finished items, and no ``event:`` lines."""
    reply = events_reply(
        {"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0, "content_index": 0,
         "text": "Checking."},
        {"type": "response.output_item.done", "output_index": 0, "item": {
            "id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]}},
        {"type": "response.output_item.done", "output_index": 1, "item": {
            "id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_a", "name": "get_weather",
            "arguments": '{"city":"Paris"}'}},
        {"type": "response.function_call_arguments.done", "item_id": "fc_2", "output_index": 2,
         "arguments": '{"city":"Tokyo"}'},
        {"type": "response.output_item.done", "output_index": 2, "item": {
            "id": "fc_2", "type": "function_call", "status": "completed", "call_id": "call_b", "name": "get_weather",
            "arguments": '{"city":"Tokyo"}'}},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "model": "gpt-4.1",
                                                    "output": [], "usage": None}},
        with_event_lines=False,
    )
    p, _ = provider(reply)
    r = await p.chat(ChatRequest((Message.user("weather?"),), tools=(WEATHER,)))
    assert r.text == "Checking."
    assert [(c.id, c.name, dict(c.arguments)) for c in r.tool_calls] == [
        ("call_a", "get_weather", {"city": "Paris"}), ("call_b", "get_weather", {"city": "Tokyo"})]
    assert r.finish_reason == "tool_calls"
    assert r.usage.requests == 1 and r.usage.input_tokens == 0


async def test_unknown_events_are_ignored() -> None:
    reply = events_reply(
        {"type": "response.queued", "response": {"id": "resp_1", "status": "queued"}},
        {"type": "response.output_text.annotation.added", "item_id": "m", "annotation": {"type": "url_citation"}},
        {"type": "response.web_search_call.searching", "item_id": "ws_1", "output_index": 0},
        {"type": "response.output_text.delta", "item_id": "m", "output_index": 1, "content_index": 0, "delta": "ok"},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "model": "gpt-4.1",
                                                    "usage": {"input_tokens": 3, "output_tokens": 1}}},
    )
    p, _ = provider(reply)
    r = await p.chat(text_request())
    assert r.text == "ok" and r.finish_reason == "stop" and r.usage.input_tokens == 3


async def test_unpriced_model_warns_and_has_no_cost(caplog: pytest.LogCaptureFixture) -> None:
    p, _ = provider(sse("text.sse"), sse("text.sse"), model="ft:gpt-4.1:acme::abc123")
    r = await p.chat(text_request())
    assert r.usage.cost is None and r.usage.cost_source == "unpriced"
    assert any("no price" in w for w in r.warnings)
    r2 = await p.chat(text_request())
    assert any("no price" in w for w in r2.warnings)
    assert sum("no price" in rec.getMessage() for rec in caplog.records) == 1, "logged once per provider"


async def test_price_override_from_config() -> None:
    p, _ = provider(sse("text.sse"), price={"input": "1", "output": "2"})
    r = await p.chat(text_request())
    assert r.usage.cost == (37 * Decimal(1) + 11 * Decimal(2)) / 1_000_000


# --- HTTP errors and secrets ------------------------------------------------------------------


@pytest.mark.parametrize(("name", "failure", "status", "retry_after"), [
    ("error_auth", FailureClass.AUTHENTICATION, 401, None),
    ("error_quota", FailureClass.QUOTA, 429, None),
    ("error_rate_limited", FailureClass.RATE_LIMITED, 429, 2.0),
    ("error_server", FailureClass.SERVER_ERROR, 500, None),
    ("error_context_length", FailureClass.CONTEXT_LENGTH, 400, None),
    ("error_invalid_prompt", FailureClass.CONTENT_FILTER, 400, None),
])
async def test_http_errors_are_classified(name: str, failure: FailureClass, status: int,
                                          retry_after: float | None) -> None:
    p, t = provider(error_reply(name))
    with pytest.raises(ProviderError) as info:
        await deltas(p, text_request())
    err = info.value
    assert (err.failure_class, err.status, err.retry_after) == (failure, status, retry_after)
    assert err.request_id == ERRORS[name]["headers"]["x-request-id"]
    assert ERRORS[name]["body"]["error"]["message"][:30] in str(err)
    assert KEY not in str(err) and KEY not in repr(err.args)
    assert t.closed == 1


async def test_secrets_never_show() -> None:
    p, _ = provider(error_reply("error_auth"), headers={"X-Gateway-Token": "gw-secret-998877"})
    for text in (repr(p), str(p), repr(p.config), str(p.config), repr(p.config.model_dump())):
        assert KEY not in text and "gw-secret-998877" not in text
    with pytest.raises(ProviderError) as info:
        await deltas(p, text_request())
    assert KEY not in str(info.value) and "gw-secret-998877" not in str(info.value)


async def test_echoed_key_in_an_error_event_is_masked() -> None:
    reply = events_reply({"type": "error", "code": "server_error", "message": f"bad key {KEY} seen", "param": None})
    p, _ = provider(reply)
    with pytest.raises(ProviderError) as info:
        await deltas(p, text_request())
    assert KEY not in str(info.value)


def test_component_is_registered_and_builds() -> None:
    from seamkit._plugins.registry import get_registry

    spec = get_registry().resolve("provider", "openai")
    model = spec.build({"model": "gpt-4.1-mini", "reasoning_effort": "low"})
    assert isinstance(model, OpenAIResponsesProvider)
    assert model.provider == "openai" and model.model == "gpt-4.1-mini"
    assert model.price is not None and model.capabilities.reasoning is False


async def test_json_mode_for_a_model_without_json_schema_asks_for_json_in_instructions() -> None:
    p, t = provider(sse("structured_output.sse"), model="gpt-4-turbo")
    r = await p.chat(ChatRequest((SYSTEM, Message.user("What is six times seven?")), output_schema=ANSWER))
    body = t.json_bodies[0]
    assert body["text"] == {"format": {"type": "json_object"}}
    assert body["instructions"].startswith("You are a terse assistant.\n\nReply with one JSON document")
    assert json.dumps(ANSWER, separators=(",", ":")) in body["instructions"]
    assert any("JSON mode" in w for w in r.warnings)


async def test_structured_output_optional_property_is_sent_nullable_and_required() -> None:
    schema = {"type": "object", "title": "Weather report", "properties": {
        "city": {"type": "string"}, "note": {"type": "string"}}, "required": ["city"]}
    p, t = provider(sse("structured_output.sse"))
    await p.chat(ChatRequest((Message.user("x"),), output_schema=schema))
    fmt = t.json_bodies[0]["text"]["format"]
    assert fmt["name"] == "Weather_report" and fmt["strict"] is True
    assert fmt["schema"]["required"] == ["city", "note"]
    assert fmt["schema"]["additionalProperties"] is False
    assert fmt["schema"]["properties"]["note"]["type"] == ["string", "null"]


async def test_reasoning_item_without_encrypted_content_needs_store() -> None:
    signature = json.dumps({"v": 1, "items": [{"id": "rs_stored", "summary": ["s"]}]})
    block = ReasoningBlock("s", signature, "openai", "o4-mini")
    req = ChatRequest((Message.user("hi"), Message("assistant", (block, TextBlock("x"))), Message.user("more")))
    p, t = provider(sse("text.sse"), model="o4-mini", store=True)
    await p.chat(req)
    assert t.json_bodies[0]["input"][1] == {"type": "reasoning", "id": "rs_stored",
                                            "summary": [{"type": "summary_text", "text": "s"}]}
    p, t = provider(sse("text.sse"), model="o4-mini")  # store: false: an id alone would be unknown
    r = await p.chat(req)
    assert all(item.get("type") != "reasoning" for item in t.json_bodies[0]["input"])
    assert any("dropped a reasoning block" in w for w in r.warnings)


# --- issue 10: a 2xx answer that is not an event stream ----------------------------------------

CAPTIVE_PORTAL = (b"<!DOCTYPE html>\n<html><head><title>Corporate Proxy - Access Denied</title></head>\n"
                  b"<body>api.openai.com is blocked by policy.</body></html>\n")


async def test_a_proxy_page_with_200_is_a_classified_failure() -> None:
    p, t = provider(Reply(200, {"content-type": "text/html"}, body=CAPTIVE_PORTAL))
    with pytest.raises(ProviderError) as info:
        await deltas(p, text_request())
    err = info.value
    assert (err.failure_class, err.status, err.code, err.provider) == (
        FailureClass.UNKNOWN, 200, "unexpected_body", "openai")
    assert "got text/html: '<!DOCTYPE html> <html><head><title>Corporate Proxy - Access Denied" in str(err)
    assert KEY not in str(err) and t.closed == 1


async def test_an_error_object_with_200_is_classified_from_its_body() -> None:
    body = {"error": {"message": "You exceeded your current quota.", "type": "insufficient_quota", "param": None,
                      "code": "insufficient_quota"}}
    p, _ = provider(Reply(200, json=body))
    with pytest.raises(ProviderError) as info:
        await deltas(p, text_request())
    assert (info.value.failure_class, info.value.status) == (FailureClass.QUOTA, 200)


@pytest.mark.parametrize("chunks", [
    [CAPTIVE_PORTAL],
    [b": keep-alive\n\n", CAPTIVE_PORTAL],  # a comment first: it ends having dispatched no event
    [],  # an empty body
], ids=["html", "comment_first", "empty"])
async def test_a_page_declared_as_an_event_stream_is_a_classified_failure(chunks: list[bytes]) -> None:
    p, t = provider(Reply(200, {"content-type": "text/event-stream; charset=utf-8"}, chunks=chunks))
    with pytest.raises(ProviderError) as info:
        await deltas(p, text_request())
    err = info.value
    assert (err.failure_class, err.status, err.code, err.provider) == (
        FailureClass.UNKNOWN, 200, "unexpected_body", "openai")
    assert "expected an event stream, got text/event-stream; charset=utf-8" in str(err)
    assert ("Corporate Proxy" in str(err)) == bool(chunks)
    assert KEY not in str(err) and t.closed == 1
