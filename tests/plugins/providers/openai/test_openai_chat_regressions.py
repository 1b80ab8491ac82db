"""Regressions found by a newcomer testing ``openai_chat`` (and the shared OpenAI config): keys echoed
in a mid-stream error event, chunks of the wrong JSON types, unparseable base URLs, float prices and
the local-pricing rule."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from pytest_seamkit.conformance import ProviderConformance
from seamkit.composition import load_composition
from seamkit.errors import ConfigError, FailureClass, ProviderError
from seamkit.values import ChatRequest, Delta, Message
from seamkit_http import ReplayTransport, Reply, make_client
from seamkit_openai.chat import OpenAIChatProvider, build
from seamkit_openai.config import OpenAIChatConfig, OpenAIResponsesConfig

KEY = "sk-newcomer-SECRET-123"
HEADER_SECRET = "gateway-token-9f8e7d6c5b"
FIX = Path(__file__).parent / "fixtures" / "chat"
request_for = ProviderConformance.request_for


def stream_of(*chunks: Any, done: bool = True) -> Reply:
    text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + ("data: [DONE]\n\n" if done else "")
    return Reply(200, {"content-type": "text/event-stream"}, chunks=[text.encode()])


def make(*replies: Reply, environ: dict[str, str] | None = None, **cfg: Any
         ) -> tuple[OpenAIChatProvider, ReplayTransport]:
    transport = ReplayTransport(*replies)
    cfg.setdefault("model", "gpt-4.1-mini")
    provider = build(OpenAIChatConfig(**cfg), client=make_client(transport=transport), environ=environ or {})
    return provider, transport


async def run(p: OpenAIChatProvider) -> list[Delta]:
    return [d async for d in p.stream(request_for("text"))]


TEXT = {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4.1-mini",
        "choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": None}]}


# --- 1. secrets echoed back mid-stream ----------------------------------------------------------------


@pytest.mark.parametrize("where", ["config", "environment"])
async def test_a_key_echoed_in_a_midstream_error_event_is_masked(where: str) -> None:
    error = {"error": {"message": f"oops {KEY}", "type": "server_error"}}
    if where == "config":
        p, _ = make(stream_of(TEXT, error), api_key=KEY)
    else:
        p, _ = make(stream_of(TEXT, error), environ={"OPENAI_API_KEY": KEY})
    with pytest.raises(ProviderError) as info:
        await run(p)
    err = info.value
    assert err.failure_class is FailureClass.SERVER_ERROR
    assert KEY not in str(err) and KEY not in repr(err) and all(KEY not in str(a) for a in err.args)
    assert "oops ***" in str(err)


async def test_a_header_value_echoed_mid_stream_or_in_a_4xx_is_masked() -> None:
    error = {"error": {"message": f"header was {HEADER_SECRET}", "type": "invalid_request_error"}}
    p, _ = make(stream_of(TEXT, error),
                Reply(400, {"content-type": "application/json"}, body=json.dumps(error).encode()),
                api_key=KEY, headers={"X-Gateway": HEADER_SECRET})
    for _ in range(2):
        with pytest.raises(ProviderError) as info:
            await run(p)
        assert HEADER_SECRET not in str(info.value) and "***" in str(info.value)


async def test_a_key_in_a_malformed_chunk_is_masked() -> None:
    reply = Reply(200, {"content-type": "text/event-stream"}, chunks=[f"data: nope {KEY}\n\n".encode()])
    p, _ = make(reply, api_key=KEY)
    with pytest.raises(ProviderError, match="malformed chunk") as info:
        await run(p)
    assert KEY not in str(info.value)


# --- 5. chunks with the wrong JSON types ----------------------------------------------------------------


@pytest.mark.parametrize("chunk", [
    {"choices": "nope"},
    {"choices": {"index": 0}},
    {"choices": ["nope"]},
    {"choices": [{"index": 0, "delta": "nope"}]},
    {"choices": [{"index": 0, "delta": ["x"]}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": "nope"}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": {"index": 0}}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [7]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": "f"}]}}]},
    {"choices": [], "usage": "lots"},
])
async def test_a_chunk_of_the_wrong_json_types_is_a_classified_error(chunk: dict[str, Any]) -> None:
    p, _ = make(stream_of(chunk), api_key=KEY)
    with pytest.raises(ProviderError, match="malformed chunk") as info:
        await run(p)
    assert info.value.failure_class is FailureClass.SERVER_ERROR
    assert info.value.provider == "openai_chat"


async def test_null_fields_are_still_accepted() -> None:
    chunks = [{"choices": [{"index": 0, "delta": {"content": "Hi", "tool_calls": None}, "finish_reason": None}],
               "usage": None},
              {"choices": [{"index": 0, "delta": None, "finish_reason": "stop"}]},
              {"choices": None, "usage": {"prompt_tokens": 3, "completion_tokens": 1}}]
    p, _ = make(stream_of(*chunks), api_key=KEY)
    ds = await run(p)
    assert "".join(d.text or "" for d in ds) == "Hi"
    assert ds[-1].finish_reason == "stop" and ds[-1].usage is not None and ds[-1].usage.input_tokens == 3


# --- 3. base URLs that cannot be parsed -------------------------------------------------------------------


@pytest.mark.parametrize("url", ["http://[::1", "http://", "ftp://example.com/v1", "http://host:99999/v1",
                                 "http://host:port/v1", "localhost:8080"])
@pytest.mark.parametrize("model_cls", [OpenAIChatConfig, OpenAIResponsesConfig])
def test_bad_base_urls_are_refused_by_the_config(url: str, model_cls: type[OpenAIChatConfig]) -> None:
    with pytest.raises(ValidationError, match="base_url"):
        model_cls(model="m", base_url=url)


def test_good_base_urls_are_kept() -> None:
    assert OpenAIChatConfig(model="m", base_url=" http://[::1]:8080/v1/ ").base_url == "http://[::1]:8080/v1"
    assert OpenAIChatConfig(model="m", base_url="HTTPS://api.openai.com/v1").base_url == "HTTPS://api.openai.com/v1"


def test_a_bad_base_url_is_a_located_config_error(tmp_path: Path) -> None:
    f = tmp_path / "agent.yaml"
    f.write_text('seamkit: 1\nagent:\n  name: q\n  prompt: hi\n  model:\n    use: openai_chat\n    model: m\n'
                 '    base_url: "http://[::1"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_composition(f)
    (issue,) = [i for i in info.value.issues if "base_url" in i.message or "base_url" in str(i.path)]
    assert issue.line is not None and issue.line >= 7
    assert "Invalid IPv6 URL" in issue.message or "not a valid URL" in issue.message


# --- 6. float prices ------------------------------------------------------------------------------------


def test_float_prices_are_refused_as_inexact() -> None:
    with pytest.raises(ValidationError, match="strings or integers"):
        OpenAIChatConfig(model="m", price={"input": 0.1, "output": "0.4"})
    with pytest.raises(ValidationError, match="float"):
        OpenAIResponsesConfig(model="m", price={"input": "0.1", "output": 0.4})
    cfg = OpenAIChatConfig(model="m", price={"input": "0.10", "output": 2})
    assert cfg.price is not None and cfg.price.input == Decimal("0.10") and cfg.price.output == Decimal(2)


def test_prices_in_yaml_quoted_or_not_are_exact(tmp_path: Path) -> None:
    f = tmp_path / "agent.yaml"
    f.write_text('seamkit: 1\nagent:\n  name: q\n  prompt: hi\n  model:\n    use: openai_chat\n    model: m\n'
                 '    base_url: "http://10.0.0.5:8000/v1"\n    price: {input: "0.10", output: 0.40}\n',
                 encoding="utf-8")
    params = load_composition(f).agent.model.params
    cfg = OpenAIChatConfig(**params)
    assert cfg.price is not None
    assert str(cfg.price.input) == "0.10" and str(cfg.price.output) == "0.40"


# --- 7. local pricing -------------------------------------------------------------------------------------


def loc(**cfg: Any) -> OpenAIChatProvider:
    return make(**cfg)[0]


def test_a_priced_model_behind_a_loopback_proxy_is_priced() -> None:
    p = loc(model="gpt-4o", base_url="http://127.0.0.1:4000/v1")  # e.g. LiteLLM forwarding to OpenAI
    assert p.local is False and p.price is not None and p.price.input == Decimal("2.50")


async def test_a_loopback_proxy_usage_is_estimated_not_local() -> None:
    p, _ = make(Reply(200, {"content-type": "text/event-stream"}, chunks=[(FIX / "text.sse").read_bytes()]),
                model="gpt-4o", base_url="http://localhost:4000/v1")
    r = await p.chat(request_for("text"))
    assert r.usage.cost_source == "estimated" and r.usage.cost is not None and r.usage.cost > 0


@pytest.mark.parametrize("base", ["http://127.0.0.1:8080/v1", "http://[::1]:8080/v1", "http://localhost:8080/v1"])
def test_an_unknown_model_on_loopback_is_local(base: str) -> None:
    p = loc(model="gemma-3-270m", base_url=base)
    assert p.local is True and p.price == type(p.price)(Decimal(0), Decimal(0))


def test_explicit_local_and_price_override_the_default() -> None:
    assert loc(model="gpt-4o", base_url="http://127.0.0.1:4000/v1", local=True).local is True
    off = loc(model="gemma-3-270m", base_url="http://127.0.0.1:8080/v1", local=False)
    assert off.local is False and off.price is None  # unpriced, never $0
    priced = loc(model="gemma-3-270m", base_url="http://127.0.0.1:8080/v1", price={"input": "1", "output": "2"})
    assert priced.local is False and priced.price is not None and priced.price.output == Decimal(2)


# --- issue 10 (7): the unpriced-model warning once per run, not once per call ------------------------


def _sse(name: str) -> Reply:
    return Reply(200, {"content-type": "text/event-stream"}, chunks=[(FIX / f"{name}.sse").read_bytes()])


async def test_the_unpriced_warning_appears_once_per_run_for_a_shared_provider() -> None:
    from seamkit._agent.agent import Agent
    from seamkit._tools import tool

    @tool(side_effecting=False)
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return f"18 C in {city}"

    # one provider instance serves two runs; the first run takes two model calls
    p, t = make(_sse("tool_call"), _sse("text"), _sse("text"), model="deepseek-chat",
                base_url="https://api.deepseek.com/v1", api_key="k")
    agent = Agent(p, tools=[get_weather])
    first = await agent.run("Weather in Paris?")
    second = await agent.run("Hi")
    assert len(t.requests) == 3 and first.steps == 2
    for result in (first, second):
        unpriced = [w for w in result.warnings if "has no price" in w]
        assert len(unpriced) == 1, result.warnings
        assert "deepseek-chat" in unpriced[0]
        assert len(result.warnings) == len(set(result.warnings))


# --- issue 10 (8): a server that refuses response_format json_schema ---------------------------------

# Recorded from llama-cpp-python's server (python -m seamkit_llamacpp.server) answering
# response_format {"type": "json_schema", ...}: HTTP 500, its request validation rendered as text.
LLAMA_CPP_REFUSAL = {"error": {
    "message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
               "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
               "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File \"/srv/venv/lib/python3.11/"
               "site-packages/llama_cpp/server/app.py\", line 376, in create_chat_completion\n    "
               "POST /v1/chat/completions",
    "type": "internal_server_error", "param": None, "code": None}}
ANSWER = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
ANSWER_CHUNKS = [
    {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gemma-3-270m",
     "choices": [{"index": 0, "delta": {"role": "assistant", "content": '{"answer": '}, "finish_reason": None}]},
    {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gemma-3-270m",
     "choices": [{"index": 0, "delta": {"content": "42}"}, "finish_reason": "stop"}]},
]


def refusal() -> Reply:
    return Reply(500, {"content-type": "application/json", "x-request-id": "fbbc005eebf5451a92009d08a1921368"},
                 json=LLAMA_CPP_REFUSAL)


async def test_a_server_refusing_json_schema_gets_json_mode_with_the_schema_in_the_prompt() -> None:
    from seamkit._agent.agent import Agent
    from seamkit_openai.chat import SCHEMA_INSTRUCTION

    # a loopback OpenAI-compatible server, no capability overrides: json_schema is tried first
    p, t = make(refusal(), stream_of(*ANSWER_CHUNKS), stream_of(*ANSWER_CHUNKS), model="gemma-3-270m",
                base_url="http://127.0.0.1:8000/v1")
    agent = Agent(p, output=ANSWER)
    first = await agent.run("What is six times seven?")
    assert first.output == {"answer": 42}
    refused, degraded = t.json_bodies
    assert refused["response_format"]["type"] == "json_schema"
    assert degraded["response_format"] == {"type": "json_object", "schema": ANSWER}
    instruction = SCHEMA_INSTRUCTION.format(schema=json.dumps(ANSWER, separators=(",", ":")))
    assert degraded["messages"][-1] == {"role": "user", "content": f"What is six times seven?\n\n{instruction}"}
    said = [w for w in first.warnings if "refused response_format" in w]
    assert said == ["structured output: http://127.0.0.1:8000/v1 refused response_format json_schema "
                    "(response_format.type); sent json_object with the schema inside and in the prompt instead; "
                    "the answer is validated against the schema"]
    # remembered: the next run goes straight to JSON mode (one request), and says so once again
    second = await agent.run("What is six times seven?")
    assert second.output == {"answer": 42} and len(t.requests) == 3
    assert t.json_bodies[2]["response_format"]["type"] == "json_object"
    assert [w for w in second.warnings if "refused response_format" in w] == said


async def test_a_server_refusing_the_schema_in_json_mode_too_gets_plain_json_mode() -> None:
    strict = {"error": {"message": "Unrecognized request argument supplied: schema", "type": "invalid_request_error",
                        "param": "response_format.schema", "code": None}}
    p, t = make(refusal(), Reply(400, json=strict), stream_of(*ANSWER_CHUNKS), model="m",
                base_url="http://127.0.0.1:8000/v1")
    deltas = [d async for d in p.stream(ChatRequest((Message.user("6*7?"),), output_schema=ANSWER))]
    assert "".join(d.text or "" for d in deltas) == '{"answer": 42}'
    assert [b["response_format"] for b in t.json_bodies] == [
        {"type": "json_schema", "json_schema": {"name": "output", "schema": ANSWER}},
        {"type": "json_object", "schema": ANSWER},
        {"type": "json_object"},
    ]
    assert "Answer with one JSON object" in t.json_bodies[2]["messages"][-1]["content"]
    assert p.refused_modes == {"json_schema": "response_format.type", "json_object_schema": "response_format.schema"}


async def test_a_refused_schema_is_not_a_refused_mode() -> None:
    # OpenAI refusing the schema itself (strict-mode rules): not degraded, the error reaches the caller
    bad = {"error": {"message": "Invalid schema for response_format 'output': In context=(), 'additionalProperties' "
                                "is required to be supplied and to be false.", "type": "invalid_request_error",
                     "param": "response_format", "code": "invalid_json_schema"}}
    p, t = make(Reply(400, json=bad), api_key=KEY)
    with pytest.raises(ProviderError) as info:
        _ = [d async for d in p.stream(ChatRequest((Message.user("x"),), output_schema=ANSWER))]
    assert info.value.code == "invalid_json_schema" and len(t.requests) == 1 and p.refused_modes == {}


async def test_a_refusal_without_structured_output_is_not_retried_in_another_mode() -> None:
    p, t = make(refusal(), model="m", base_url="http://127.0.0.1:8000/v1")
    with pytest.raises(ProviderError) as info:
        await run(p)
    assert info.value.failure_class is FailureClass.INVALID_REQUEST and len(t.requests) == 1
