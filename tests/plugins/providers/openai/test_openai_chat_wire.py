"""Wire-level tests of ``openai_chat``: the request each call sends is asserted against the JSON in
``fixtures/chat/*.request.json`` and the SSE byte streams in ``fixtures/chat/*.sse`` are replayed
through ``seamkit_http.ReplayTransport`` (see ``fixtures/chat/README.md`` for the reference sections)."""

from __future__ import annotations

import json
import logging
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pytest_seamkit.conformance import ProviderConformance
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
)
from seamkit_http import ReplayTransport, Reply, make_client
from seamkit_openai.chat import OpenAIChatProvider, build
from seamkit_openai.config import OpenAIChatConfig

FIX = Path(__file__).parent / "fixtures" / "chat"
SECRET = "sk-test-5f1e2d3c4b5a69788796a5b4"
request_for = ProviderConformance.request_for


def sse_reply(name: str, size: int | None = 97) -> Reply:
    data = (FIX / f"{name}.sse").read_bytes()
    chunks = [data] if size is None else [data[i:i + size] for i in range(0, len(data), size)]
    return Reply(200, {"content-type": "text/event-stream; charset=utf-8", "x-request-id": "req_abc"}, chunks=chunks)


def error_reply(name: str) -> Reply:
    spec = json.loads((FIX / f"{name}.reply.json").read_text())
    return Reply(spec["status"], spec["headers"], body=json.dumps(spec["body"]).encode())


def expected(name: str) -> dict[str, Any]:
    return json.loads((FIX / f"{name}.request.json").read_text())


def make(
    *replies: Reply, environ: dict[str, str] | None = None, **cfg: Any
) -> tuple[OpenAIChatProvider, ReplayTransport]:
    transport = ReplayTransport(*replies)
    cfg.setdefault("model", "gpt-4.1-mini")
    if "api_key" not in cfg:
        cfg["api_key"] = SECRET
    elif cfg["api_key"] is None:
        del cfg["api_key"]
    provider = build(OpenAIChatConfig(**cfg), client=make_client(transport=transport), environ=environ or {})
    return provider, transport


async def deltas(p: OpenAIChatProvider, req: ChatRequest) -> list[Delta]:
    return [d async for d in p.stream(req)]


# --- requests sent ------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", ["text", "tool_call", "parallel_tool_calls", "structured_output"])
async def test_request_body_matches_the_fixture(scenario: str) -> None:
    p, t = make(sse_reply(scenario))
    request = request_for(scenario)
    if scenario == "tool_call":  # the fixture is the API reference's forced call (the suite leaves it auto)
        request = request.replace(tool_choice="required")
    await p.chat(request)
    assert t.json_bodies == [expected(scenario)]
    (req,) = t.requests
    assert req.method == "POST"
    assert str(req.url) == "https://api.openai.com/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {SECRET}"
    assert req.headers["accept"] == "text/event-stream"
    assert req.headers["content-type"] == "application/json"


async def test_reasoning_request_uses_max_completion_tokens_and_maps_effort() -> None:
    p, t = make(sse_reply("reasoning"), model="o4-mini", reasoning_effort="minimal")
    r = await p.chat(request_for("reasoning"))
    assert t.json_bodies == [expected("reasoning")]
    assert r.warnings == ("reasoning_effort 'minimal' not supported by o4-mini; sent 'low'",)
    assert r.usage.reasoning_tokens == 384 and r.usage.output_tokens == 410
    assert r.text == "No: 1001 = 7 \u00d7 11 \u00d7 13."


async def test_system_becomes_developer_for_reasoning_models() -> None:
    p, t = make(sse_reply("reasoning"), model="o3", reasoning_effort="high")
    await p.chat(ChatRequest((Message.system("Be brief."), Message.user("Hi"))))
    body = t.json_bodies[0]
    assert body["messages"] == [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert body["reasoning_effort"] == "high"
    assert "max_tokens" not in body and "max_completion_tokens" not in body


async def test_temperature_on_a_reasoning_model_is_refused_before_dispatch() -> None:
    p, t = make(sse_reply("reasoning"), model="o4-mini")
    with pytest.raises(UnsupportedFeature) as info:
        await p.chat(ChatRequest((Message.user("Hi"),), temperature=0.2))
    assert info.value.feature == "temperature"
    assert "o4-mini" in str(info.value)
    assert t.requests == []


async def test_stop_sequences_on_a_reasoning_model_are_refused() -> None:
    p, t = make(sse_reply("reasoning"), model="gpt-5")
    with pytest.raises(UnsupportedFeature, match="stop"):
        await p.chat(ChatRequest((Message.user("Hi"),), stop=("END",)))
    assert t.requests == []


async def test_settings_on_a_chat_model_are_sent() -> None:
    p, t = make(sse_reply("text"))
    await p.chat(ChatRequest((Message.user("Hi"),), temperature=0.3, seed=7, stop=("END",), max_tokens=9,
                             extra={"top_p": 0.5, "user": "u-1"}))
    body = t.json_bodies[0]
    assert (body["temperature"], body["seed"], body["stop"], body["max_completion_tokens"]) == (0.3, 7, ["END"], 9)
    assert body["top_p"] == 0.5 and body["user"] == "u-1"


async def test_named_tool_choice_and_none() -> None:
    from pytest_seamkit.conformance.provider import WEATHER

    p, t = make(sse_reply("tool_call"), sse_reply("text"))
    await p.chat(ChatRequest((Message.user("x"),), tools=(WEATHER,), tool_choice="get_weather"))
    await p.chat(ChatRequest((Message.user("x"),), tools=(WEATHER,), tool_choice="none"))
    assert t.json_bodies[0]["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert t.json_bodies[1]["tool_choice"] == "none"


async def test_tools_with_optional_arguments_are_not_sent_strict() -> None:
    from seamkit.values import ToolSchema

    tool = ToolSchema("search", "Search.", {"type": "object", "properties": {"q": {"type": "string"},
                                                                            "limit": {"type": "integer"}},
                                            "required": ["q"]}, False)
    p, t = make(sse_reply("text"))
    await p.chat(ChatRequest((Message.user("x"),), tools=(tool,)))
    fn = t.json_bodies[0]["tools"][0]["function"]
    assert "strict" not in fn
    assert fn["parameters"] == {"type": "object", "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}},
                                "required": ["q"]}


def _chunks(*chunks: dict[str, Any]) -> Reply:
    text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return Reply(200, {"content-type": "text/event-stream"}, chunks=[text.encode()])


def _delta(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4.1-mini",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


async def test_root_unions_and_free_form_maps_are_sent_in_a_form_the_api_accepts() -> None:
    """A tool whose parameters have a root ``oneOf`` was sent as is (the API answers 400: parameters
    must be ``type: object``) and an output schema with ``additionalProperties: true`` was refused
    before sending; now the first is wrapped (its arguments unwrapped from the stream) and the second
    sent with ``strict: false``, each with one warning naming the construct and its JSON path."""
    from seamkit.values import ToolSchema

    by_id = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"],
             "additionalProperties": False}
    by_name = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"],
               "additionalProperties": False}
    lookup = ToolSchema("lookup", "Find a customer by id or by name.", {"oneOf": [by_id, by_name]}, False)
    report = {"type": "object", "properties": {"summary": {"type": "string"},
                                               "extra": {"type": "object", "additionalProperties": True}},
              "required": ["summary", "extra"], "additionalProperties": False}
    args = '{"value": {"name": "Ada"}}'
    p, t = make(
        _chunks(_delta({"tool_calls": [{"index": 0, "id": "call_9", "type": "function",
                                         "function": {"name": "lookup", "arguments": args[:11]}}]}),
                _delta({"tool_calls": [{"index": 0, "function": {"arguments": args[11:]}}]}),
                _delta({}, "tool_calls")),
        _chunks(_delta({"content": '{"summary": "ok", "extra": {"k": 1}}'}), _delta({}, "stop")),
    )
    first = await p.chat(ChatRequest((Message.user("Who is Ada?"),), tools=(lookup,)))
    fn = t.json_bodies[0]["tools"][0]["function"]
    assert fn["parameters"]["type"] == "object" and fn["parameters"]["required"] == ["value"]
    assert fn["parameters"]["properties"]["value"]["oneOf"] == [by_id, by_name]
    assert "strict" not in fn  # strict mode would send the oneOf as anyOf: the canonical schema goes, not strict
    (call,) = first.tool_calls
    assert call.id == "call_9" and dict(call.arguments) == {"name": "Ada"}
    assert [w for w in first.warnings if "lookup" in w] == [
        "tool 'lookup' parameters: oneOf at the root ($) cannot be sent to OpenAI (the root must be an object "
        "schema); sent as an object with one property 'value', unwrapped from the reply before it is validated "
        "against the schema"]

    second = await p.chat(ChatRequest((Message.user("Report."),), output_schema=report))
    rf = t.json_bodies[1]["response_format"]
    assert rf == {"type": "json_schema", "json_schema": {"name": "output", "schema": report}}  # strict: false
    assert json.loads(second.text) == {"summary": "ok", "extra": {"k": 1}}
    (warning,) = [w for w in second.warnings if w.startswith("structured output")]
    assert warning.startswith("structured output: additionalProperties at $.properties.extra cannot be expressed "
                              "in OpenAI strict mode")


async def test_transcript_mapping() -> None:
    png = b"\x89PNG\r\n\x1a\n"
    call = ToolCall("call_1", "get_weather", {"city": "Paris"})
    messages = (
        Message.system("Sys."),
        Message("user", (TextBlock("Look: "), ImageBlock(url="https://example.com/a.png"),
                         ImageBlock(media_type="image/png", data=png))),
        Message("assistant", (ReasoningBlock("hmm", "sig-1", "anthropic", "claude-sonnet-4-5"), TextBlock("Checking."),
                              call)),
        Message("tool", (ToolResult("call_1", "get_weather", "boom", is_error=True),)),
        Message("assistant", (call,)),
        Message("tool", (ToolResult("call_1", "get_weather", '{"temp": 21}'),)),
    )
    p, t = make(sse_reply("text"))
    r = await p.chat(ChatRequest(messages))
    assert t.json_bodies[0]["messages"] == [
        {"role": "system", "content": "Sys."},
        {"role": "user", "content": [
            {"type": "text", "text": "Look: "},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ]},
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Error: boom"},  # no error field: the text says it
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 21}'},
    ]
    assert any("reasoning from anthropic:claude-sonnet-4-5 dropped" in w for w in r.warnings)


async def test_images_refused_for_a_model_without_vision() -> None:
    p, t = make(sse_reply("text"), model="o3-mini")
    with pytest.raises(UnsupportedFeature) as info:
        await p.chat(ChatRequest((Message("user", (ImageBlock(url="https://example.com/a.png"),)),)))
    assert info.value.feature == "images"
    assert t.requests == []


# --- images a tool returned ---------------------------------------------------------------------

SHOT = ImageBlock("image/png", data=b"\x89PNG\r\n\x1a\n")  # data:image/png;base64,iVBORw0KGgo=
CHART = ImageBlock("image/jpeg", url="https://example.com/chart.jpg")
CALLS = Message("assistant", (ToolCall("call_1", "screenshot", {}), ToolCall("call_2", "get_weather", {}),
                              ToolCall("call_3", "screenshot", {})))
_ASSISTANT_WIRE = {"role": "assistant", "content": None, "tool_calls": [
    {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": "{}"}}
    for i, n in ((1, "screenshot"), (2, "get_weather"), (3, "screenshot"))]}


async def test_tool_result_images_follow_all_the_tool_messages_in_one_user_message() -> None:
    # the two screenshot results come in two tool messages: the images wait for both
    messages = (Message.user("Look."), CALLS,
                Message("tool", (ToolResult("call_1", "screenshot", "the page", images=(SHOT, CHART)),
                                 ToolResult("call_2", "get_weather", "sunny"))),
                Message("tool", (ToolResult("call_3", "screenshot", "", is_error=True, images=(SHOT,)),)),
                Message.user("What do you see?"))
    p, t = make(sse_reply("text"))
    r = await p.chat(ChatRequest(messages))
    assert t.json_bodies[0]["messages"] == [
        {"role": "user", "content": "Look."},
        _ASSISTANT_WIRE,
        {"role": "tool", "tool_call_id": "call_1", "content": "the page"},
        {"role": "tool", "tool_call_id": "call_2", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_3", "content": "Error"},
        {"role": "user", "content": [
            {"type": "text", "text": "The tool call call_1 (screenshot) returned 2 images:"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            {"type": "image_url", "image_url": {"url": "https://example.com/chart.jpg"}},
            {"type": "text", "text": "The tool call call_3 (screenshot) returned 1 image:"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ]},
        {"role": "user", "content": "What do you see?"},
    ]
    assert r.warnings == ()


async def test_tool_result_images_at_the_end_of_the_transcript_and_before_the_next_assistant_turn() -> None:
    one = Message("assistant", (ToolCall("call_1", "screenshot", {}),))
    first = Message("tool", (ToolResult("call_1", "screenshot", "a", images=(CHART,)),))
    p, t = make(sse_reply("text"), sse_reply("text"))
    await p.chat(ChatRequest((Message.user("Go."), one, first)))
    await p.chat(ChatRequest((Message.user("Go."), one, first, Message.assistant("Seen."))))
    image_turn = {"role": "user", "content": [
        {"type": "text", "text": "The tool call call_1 (screenshot) returned 1 image:"},
        {"type": "image_url", "image_url": {"url": "https://example.com/chart.jpg"}}]}
    assert [m["role"] for m in t.json_bodies[0]["messages"]] == ["user", "assistant", "tool", "user"]
    assert t.json_bodies[0]["messages"][-1] == image_turn
    assert t.json_bodies[1]["messages"][3:] == [image_turn, {"role": "assistant", "content": "Seen."}]


async def test_a_model_without_vision_gets_a_note_in_the_tool_message_not_a_refusal() -> None:
    messages = (Message.user("Look."), CALLS,
                Message("tool", (ToolResult("call_1", "screenshot", "the page", images=(SHOT, CHART)),
                                 ToolResult("call_2", "get_weather", "sunny"),
                                 ToolResult("call_3", "screenshot", "", images=(SHOT,)))))
    p, t = make(sse_reply("text"), model="gpt-3.5-turbo")
    r = await p.chat(ChatRequest(messages))
    assert t.json_bodies[0]["messages"][2:] == [
        {"role": "tool", "tool_call_id": "call_1", "content": "the page\n\n[2 images left out "
                                                               "(image/png, 8 bytes; image/jpeg, by URL): "
                                                               "this model does not take images]"},
        {"role": "tool", "tool_call_id": "call_2", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_3",
         "content": "[1 image left out (image/png, 8 bytes): this model does not take images]"},
    ]
    assert "2 images from tool call 'call_1' (screenshot) not sent: gpt-3.5-turbo does not take images; " \
           "the tool result says so instead" in r.warnings
    assert r.text  # the run goes on


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3)), min_size=1, max_size=5))
def test_every_tool_message_directly_follows_the_calls_and_every_image_is_sent_once(
        results: list[tuple[bool, int]]) -> None:
    from seamkit_openai.chat import chat_messages

    calls = Message("assistant", tuple(ToolCall(f"c{i}", "t", {}) for i in range(len(results))))
    tool = Message("tool", tuple(ToolResult(f"c{i}", "t", "x" if text else "", images=(SHOT,) * n)
                                 for i, (text, n) in enumerate(results)))
    out, warnings = chat_messages((Message.user("q"), calls, tool, Message.user("next")), developer_role=False,
                                  system_role=True, provider="openai_chat", model="m")
    roles = [m["role"] for m in out]
    with_images = any(n for _, n in results)
    assert roles == ["user", "assistant", *["tool"] * len(results), *(["user"] if with_images else []), "user"]
    sent = [p for m in out if isinstance(m["content"], list) for p in m["content"] if p["type"] == "image_url"]
    assert len(sent) == sum(n for _, n in results) and warnings == []


# --- responses parsed ---------------------------------------------------------------------------


async def test_text_usage_counts_cached_tokens_once_and_prices_them() -> None:
    p, _ = make(sse_reply("text"))
    r = await p.chat(request_for("text"))
    assert r.text == "Hello! How can I help?"
    assert r.finish_reason == "stop"
    assert r.model == "gpt-4.1-mini-2025-04-14"
    u = r.usage
    assert (u.input_tokens, u.cache_read_tokens, u.output_tokens, u.requests) == (1920, 1792, 8, 1)
    # gpt-4.1-mini: 128 uncached x $0.40 + 1792 cached x $0.10 + 8 out x $1.60 per 1M
    assert u.cost == Decimal("0.0002432") and u.cost_source == "estimated"
    assert r.raw_usage is not None and r.raw_usage["prompt_tokens_details"]["cached_tokens"] == 1792
    assert r.warnings == ()


@pytest.mark.parametrize("size", [1, 5, 64, None])
async def test_any_chunking_gives_the_same_result(size: int | None) -> None:
    p, _ = make(sse_reply("parallel_tool_calls", size))
    r = await p.chat(request_for("parallel_tool_calls"))
    assert [(c.id, dict(c.arguments)) for c in r.tool_calls] == [
        ("call_P4ris0aaaaaa", {"city": "Paris"}), ("call_T0ky0bbbbbbb", {"city": "Tokyo"})]


async def test_tool_call_fragments_are_joined() -> None:
    p, _ = make(sse_reply("tool_call"))
    r = await p.chat(request_for("tool_call"))
    assert r.finish_reason == "tool_calls"
    assert [(c.id, c.name, dict(c.arguments)) for c in r.tool_calls] == [
        ("call_Vq3xM2pLk8Rz1", "get_weather", {"city": "Paris"})]
    assert r.text == ""


async def test_parallel_calls_all_on_index_0_are_kept_apart() -> None:
    p, _ = make(sse_reply("parallel_tool_calls_index0"))
    r = await p.chat(request_for("parallel_tool_calls"))
    assert [(c.id, c.arguments["city"]) for c in r.tool_calls] == [
        ("call_P4ris0aaaaaa", "Paris"), ("call_T0ky0bbbbbbb", "Tokyo")]


async def test_structured_output_text() -> None:
    p, _ = make(sse_reply("structured_output"))
    r = await p.chat(request_for("structured_output"))
    assert json.loads(r.text) == {"answer": 42}


async def test_refusal_is_text_with_finish_refusal() -> None:
    p, _ = make(sse_reply("refusal"))
    r = await p.chat(request_for("structured_output"))
    assert r.finish_reason == "refusal"
    assert r.text == "I'm sorry, I can't help with that."


# --- OpenAI-compatible servers --------------------------------------------------------------------


async def test_local_server_without_key_sends_no_authorization_and_costs_nothing() -> None:
    env = {"OPENAI_API_KEY": "sk-env-should-not-leave-0123456789"}
    p, t = make(sse_reply("local_reasoning"), model="qwen3-0.6b", base_url="http://127.0.0.1:8080/v1/",
                api_key=None, environ=env)
    r = await p.chat(request_for("reasoning"))
    (req,) = t.requests
    assert str(req.url) == "http://127.0.0.1:8080/v1/chat/completions"
    assert "authorization" not in req.headers
    assert t.json_bodies == [expected("local_reasoning")]
    assert r.message.content[0] == ReasoningBlock("1001 = 7 \u00d7 143.", None, "openai_chat", "qwen3-0.6b")
    assert r.text == "Not prime."
    assert (r.usage.input_tokens, r.usage.output_tokens) == (17, 14)
    assert r.usage.cost == 0 and r.usage.cost_source == "local"
    assert p.local and p.price is not None and (p.price.input, p.price.output) == (0, 0)
    assert r.warnings == ()


async def test_compatible_server_capabilities_can_be_overridden() -> None:
    from pytest_seamkit.conformance.provider import ANSWER_SCHEMA

    p, t = make(sse_reply("local_no_usage"), model="my-model", base_url="http://localhost:11434/v1", api_key=None,
                capabilities={"json_schema": False, "stream_options": False})
    r = await p.chat(ChatRequest((Message.user("Hi"),), output_schema=ANSWER_SCHEMA, max_tokens=5))
    body = t.json_bodies[0]
    assert "stream_options" not in body
    assert body["response_format"] == {"type": "json_object"}
    assert body["max_tokens"] == 5
    assert any("no json_schema mode" in w for w in r.warnings)
    # no usage from the server: estimated, said so; stream without [DONE] after a finish_reason is complete
    assert any("no usage" in w for w in r.warnings)
    assert r.text == "Hi there." and r.finish_reason == "stop"
    assert r.usage.input_tokens > 0 and r.usage.output_tokens > 0


async def test_compatible_server_gets_the_canonical_schema() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "minLength": 2}}}
    p, t = make(sse_reply("structured_output"), model="m", base_url="http://10.0.0.5:8000/v1", api_key="k")
    await p.chat(ChatRequest((Message.user("Hi"),), output_schema=schema))
    assert t.json_bodies[0]["response_format"] == {"type": "json_schema", "json_schema": {"name": "output",
                                                                                          "schema": schema}}
    assert t.requests[0].headers["authorization"] == "Bearer k"


async def test_remote_compatible_server_is_unpriced_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    p, _ = make(sse_reply("text"), sse_reply("text"), model="deepseek-chat", base_url="https://api.deepseek.com/v1",
                api_key="k")
    with caplog.at_level(logging.WARNING, logger="seamkit_openai"):
        r1 = await p.chat(request_for("text"))
        r2 = await p.chat(request_for("text"))
    assert r1.usage.cost is None and r1.usage.cost_source == "unpriced"
    assert any("no price" in w for w in r1.warnings) and any("no price" in w for w in r2.warnings)
    assert len([rec for rec in caplog.records if "no price" in rec.getMessage()]) == 1


async def test_price_override() -> None:
    p, _ = make(sse_reply("text"), model="deepseek-chat", base_url="https://api.deepseek.com/v1", api_key="k",
                price={"input": "0.28", "output": "0.42", "cache_read": "0.028"})
    r = await p.chat(request_for("text"))
    # 128 x 0.28 + 1792 x 0.028 + 8 x 0.42 per 1M
    assert r.usage.cost == (128 * Decimal("0.28") + 1792 * Decimal("0.028") + 8 * Decimal("0.42")) / 1_000_000


# --- credentials and headers ----------------------------------------------------------------------


async def test_key_and_headers_from_the_environment() -> None:
    env = {"OPENAI_API_KEY": "sk-env-1234567890", "OPENAI_ORG_ID": "org-9", "OPENAI_PROJECT_ID": "proj_7"}
    p, t = make(sse_reply("text"), api_key=None, environ=env, headers={"X-Trace": "t-1"})
    await p.chat(request_for("text"))
    h = t.requests[0].headers
    assert h["authorization"] == "Bearer sk-env-1234567890"
    assert (h["openai-organization"], h["openai-project"], h["x-trace"]) == ("org-9", "proj_7", "t-1")


async def test_base_url_from_the_environment_pairs_with_the_env_key() -> None:
    env = {"OPENAI_API_KEY": "sk-env-1234567890", "OPENAI_BASE_URL": "https://gateway.example.com/v1"}
    p, t = make(sse_reply("text"), api_key=None, environ=env)
    await p.chat(request_for("text"))
    assert str(t.requests[0].url) == "https://gateway.example.com/v1/chat/completions"
    assert t.requests[0].headers["authorization"] == "Bearer sk-env-1234567890"


async def test_openai_key_is_not_sent_to_another_configured_host() -> None:
    env = {"OPENAI_API_KEY": "sk-env-1234567890", "OPENROUTER_API_KEY": "sk-or-42"}
    p, t = make(sse_reply("text"), sse_reply("text"), api_key=None, environ=env,
                base_url="https://openrouter.ai/api/v1", model="openai/gpt-4.1-mini")
    await p.chat(request_for("text"))
    assert "authorization" not in t.requests[0].headers
    p2, t2 = make(sse_reply("text"), api_key=None, environ=env, base_url="https://openrouter.ai/api/v1",
                  model="openai/gpt-4.1-mini", api_key_env="OPENROUTER_API_KEY")
    r = await p2.chat(request_for("text"))
    assert t2.requests[0].headers["authorization"] == "Bearer sk-or-42"
    assert r.usage.cost_source == "estimated"  # openai/ prefix priced as gpt-4.1-mini


async def test_missing_key_for_openai_fails_before_dispatch() -> None:
    p, t = make(sse_reply("text"), api_key=None, environ={})
    with pytest.raises(ProviderError) as info:
        await p.chat(request_for("text"))
    assert info.value.failure_class is FailureClass.AUTHENTICATION
    assert "OPENAI_API_KEY" in str(info.value)
    assert t.requests == []


def test_secrets_never_show_in_reprs() -> None:
    cfg = OpenAIChatConfig(model="gpt-4o", api_key=SECRET, headers={"X-Api-Token": "hdr-secret-123"})
    p = build(cfg)
    for text in (repr(cfg), str(cfg), repr(p), str(p), repr(cfg.model_dump())):
        assert SECRET not in text and "hdr-secret-123" not in text


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "cls", "status", "code"),
    [
        ("error_auth", FailureClass.AUTHENTICATION, 401, "invalid_api_key"),
        ("error_quota", FailureClass.QUOTA, 429, "insufficient_quota"),
        ("error_rate_limited", FailureClass.RATE_LIMITED, 429, "rate_limit_exceeded"),
        ("error_server", FailureClass.SERVER_ERROR, 500, "server_error"),
        ("error_context_length", FailureClass.CONTEXT_LENGTH, 400, "context_length_exceeded"),
        ("error_invalid_prompt", FailureClass.CONTENT_FILTER, 400, "invalid_prompt"),
    ],
)
async def test_errors_before_the_stream(name: str, cls: FailureClass, status: int, code: str) -> None:
    p, t = make(error_reply(name))
    with pytest.raises(ProviderError) as info:
        await deltas(p, request_for("text"))
    err = info.value
    assert (err.failure_class, err.status, err.code, err.provider) == (cls, status, code, "openai_chat")
    assert err.request_id == f"req_{name}0123456789abcdef"
    assert err.retry_after == (2.0 if name == "error_rate_limited" else None)
    spec = json.loads((FIX / f"{name}.reply.json").read_text())
    assert spec["body"]["error"]["message"] in str(err)
    assert SECRET not in str(err) and SECRET not in repr(err.args)
    assert t.closed == 1


async def test_error_event_mid_stream_raises_after_text() -> None:
    p, t = make(sse_reply("error_midstream"))
    seen: list[Delta] = []
    with pytest.raises(ProviderError) as info:
        async for d in p.stream(request_for("text")):
            seen.append(d)
    assert "".join(d.text or "" for d in seen) == "Hello there"
    assert not any(d.finish_reason for d in seen)
    assert info.value.failure_class is FailureClass.SERVER_ERROR and info.value.status is None
    assert t.closed == 1


async def test_dropped_connection_raises_server_error() -> None:
    p, _ = make(sse_reply("dropped"))
    with pytest.raises(ProviderError) as info:
        await p.chat(request_for("text"))
    assert info.value.failure_class is FailureClass.SERVER_ERROR


async def test_malformed_chunk_is_a_server_error() -> None:
    p, _ = make(Reply(200, {"content-type": "text/event-stream"}, body=b"data: {not json\n\n"))
    with pytest.raises(ProviderError, match="malformed") as info:
        await p.chat(request_for("text"))
    assert info.value.failure_class is FailureClass.SERVER_ERROR


async def test_closing_early_closes_the_response() -> None:
    p, t = make(sse_reply("text", 40))
    stream = p.stream(request_for("text"))
    async for d in stream:
        if d.text:
            break
    await stream.aclose()  # type: ignore[attr-defined]
    assert t.closed == 1


async def test_chat_equals_collected_stream() -> None:
    p, _ = make(sse_reply("tool_call"), sse_reply("tool_call"))
    a = await p.chat(request_for("tool_call"))
    b = await collect_result(p.stream(request_for("tool_call")), provider=p.provider, model=p.model)
    assert a == b


# --- plugin registration ------------------------------------------------------------------------


def test_registered_components_build_from_params() -> None:
    from seamkit._plugins.registry import load_registry

    reg = load_registry()
    spec = reg.resolve("provider", "openai_chat")
    assert spec.config_model() is OpenAIChatConfig
    p = spec.build({"model": "gpt-4o-mini", "base_url": "http://127.0.0.1:9/v1"})
    assert isinstance(p, OpenAIChatProvider) and p.model == "gpt-4o-mini"
    assert "openai" in reg.names("provider")
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=r"temprature\s+Extra inputs are not permitted"):
        spec.config_model()(model="x", temprature=1)


# --- clients ------------------------------------------------------------------------------------


async def test_pooled_clients() -> None:
    a = build(OpenAIChatConfig(model="m", base_url="http://127.0.0.1:9/v1"))
    b = build(OpenAIChatConfig(model="n", base_url="http://127.0.0.1:9/v1"))
    assert a.http_client() is b.http_client()  # the process-wide pool for these timeouts
    own = build(OpenAIChatConfig(model="m", base_url="http://127.0.0.1:9/v1", http2=False))
    c = own.http_client()
    assert c is own.http_client() and c is not a.http_client()
    await own.aclose()
    assert c.is_closed


async def test_schema_inside_json_mode_for_llama_cpp_python_servers() -> None:
    from pytest_seamkit.conformance.provider import ANSWER_SCHEMA

    p, t = make(sse_reply("structured_output"), model="gemma-3-270m", base_url="http://127.0.0.1:8000/v1",
                api_key=None, capabilities={"json_schema": False, "json_object_schema": True})
    r = await p.chat(ChatRequest((Message.user("6*7?"),), output_schema=ANSWER_SCHEMA))
    assert t.json_bodies[0]["response_format"] == {
        "type": "json_object",
        "schema": {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"],
                   "additionalProperties": False},
    }
    assert r.warnings == ()


_SCENARIOS = ["text", "tool_call", "parallel_tool_calls", "parallel_tool_calls_index0", "structured_output",
              "refusal", "local_reasoning"]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(_SCENARIOS), st.lists(st.integers(1, 4000), max_size=12))
async def test_random_network_chunkings_give_the_same_result(scenario: str, cuts: list[int]) -> None:
    data = (FIX / f"{scenario}.sse").read_bytes()
    points = sorted({c % len(data) for c in cuts} - {0})
    chunks = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    reference, _ = make(sse_reply(scenario, None), model="m", base_url="http://127.0.0.1:1/v1")
    chunked, _ = make(Reply(200, {"content-type": "text/event-stream"}, chunks=chunks), model="m",
                      base_url="http://127.0.0.1:1/v1")
    a = await reference.chat(request_for("text"))
    b = await chunked.chat(request_for("text"))
    assert (a.message, a.usage, a.finish_reason, a.raw_usage) == (b.message, b.usage, b.finish_reason, b.raw_usage)


async def test_an_agent_turn_over_the_wire() -> None:
    from seamkit import Agent, tool

    @tool(side_effecting=False)
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return f"18C in {city}"

    p, t = make(sse_reply("tool_call"), sse_reply("text"))
    result = await Agent(p, prompt="You are a terse assistant.", tools=[get_weather]).run("Weather in Paris?")
    assert result.output == "Hello! How can I help?"
    second = t.json_bodies[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_Vq3xM2pLk8Rz1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}
    assert second[-1] == {"role": "tool", "tool_call_id": "call_Vq3xM2pLk8Rz1", "content": "18C in Paris"}
    assert result.usage.requests == 2 and result.usage.input_tokens == 71 + 1920


# --- issue 10: a 2xx answer that is not an event stream ----------------------------------------

CAPTIVE_PORTAL = (b"<!DOCTYPE html>\n<html lang=\"en\"><head><title>Airport Free WiFi</title></head>\n"
                  b"<body><h1>Welcome</h1><p>Accept the terms of use to continue.</p></body></html>\n")


async def test_a_captive_portal_page_with_200_is_a_classified_failure() -> None:
    p, t = make(Reply(200, {"content-type": "text/html; charset=UTF-8"}, body=CAPTIVE_PORTAL))
    with pytest.raises(ProviderError) as info:
        await deltas(p, request_for("text"))
    err = info.value
    assert (err.failure_class, err.status, err.code, err.provider) == (
        FailureClass.UNKNOWN, 200, "unexpected_body", "openai_chat")
    assert "got text/html; charset=UTF-8: '<!DOCTYPE html> <html lang=\"en\"><head><title>Airport Free WiFi" in str(err)
    assert SECRET not in str(err) and t.closed == 1


async def test_an_error_object_with_200_is_classified_from_its_body() -> None:
    body = {"error": {"message": "This model's maximum context length is 128000 tokens.",
                      "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}
    p, _ = make(Reply(200, json=body))
    with pytest.raises(ProviderError) as info:
        await deltas(p, request_for("text"))
    assert (info.value.failure_class, info.value.status, info.value.param) == (
        FailureClass.CONTEXT_LENGTH, 200, "messages")


@pytest.mark.parametrize("chunks", [
    [CAPTIVE_PORTAL],
    [CAPTIVE_PORTAL[:3], CAPTIVE_PORTAL[3:50], CAPTIVE_PORTAL[50:]],
    [b": ok\n\n", CAPTIVE_PORTAL],  # a comment first: it ends having dispatched no event
    [b"data: <html>Blocked by policy for " + SECRET.encode() + b"</html>"],  # no blank line: never dispatched
], ids=["whole", "split", "comment_first", "no_event"])
async def test_a_page_declared_as_an_event_stream_is_a_classified_failure(chunks: list[bytes]) -> None:
    p, t = make(Reply(200, {"content-type": "text/event-stream"}, chunks=chunks))
    with pytest.raises(ProviderError) as info:
        await deltas(p, request_for("text"))
    err = info.value
    assert (err.failure_class, err.status, err.code, err.provider) == (
        FailureClass.UNKNOWN, 200, "unexpected_body", "openai_chat")
    assert "expected an event stream, got text/event-stream: '" in str(err)
    assert "<html" in str(err) and SECRET not in str(err) and t.closed == 1


async def test_a_history_with_a_result_out_of_place_goes_out_with_each_tool_message_after_its_call() -> None:
    # OpenAI answers 400 "messages with role 'tool' must be a response to a preceding message with
    # 'tool_calls'" otherwise (issue 10 item 5)
    from seamkit import Agent
    from seamkit.values import Message, ToolCall, ToolResult

    history = [
        Message.user("Weather in Paris?"),
        Message("assistant", (ToolCall("call_1", "get_weather", {"city": "Paris"}),)),
        Message.user("Also, hello."),
        Message("tool", (ToolResult("call_1", "get_weather", "18C in Paris"), ToolResult("call_X", "x", "?"))),
    ]
    p, t = make(sse_reply("text"))
    result = await Agent(p).run("Thanks.", history=history)
    sent = t.json_bodies[0]["messages"]
    assert [(m["role"], m.get("tool_call_id")) for m in sent] == [
        ("user", None), ("assistant", None), ("tool", "call_1"), ("user", None), ("user", None)]
    assert sent[2]["content"] == "18C in Paris"
    assert any("call_X" in w for w in result.warnings)
