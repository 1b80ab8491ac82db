"""Regressions in ``anthropic`` found by a newcomer: credentials echoed in a mid-stream error event,
environment credentials sent to any configured base URL, unparseable base URLs, float prices, the
local-pricing rule, a thinking budget not below the configured max_tokens, and events whose fields
have the wrong JSON types."""

from __future__ import annotations

import json
import logging
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from anthropic_wire_helpers import sse_reply
from pydantic import ValidationError
from seamkit.composition import load_composition
from seamkit.errors import ConfigError, FailureClass, ProviderError, UnsupportedFeature
from seamkit.values import ChatRequest, Delta, Message
from seamkit_anthropic.config import AnthropicConfig
from seamkit_anthropic.provider import AnthropicProvider
from seamkit_http import ReplayTransport, Reply, make_client

KEY = "sk-newcomer-SECRET-123"
TOKEN = "oauth-newcomer-TOKEN-456"
HEADER_SECRET = "gateway-token-9f8e7d6c5b"
SSE = {"content-type": "text/event-stream"}


def make(*replies: Reply, env: dict[str, str] | None = None, **cfg: Any) -> tuple[AnthropicProvider, ReplayTransport]:
    cfg.setdefault("model", "claude-sonnet-4-5")
    transport = ReplayTransport(*replies)
    return AnthropicProvider(AnthropicConfig(**cfg), client=make_client(transport=transport), env=env or {}), transport


def events(*evs: dict[str, Any]) -> Reply:
    text = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in evs)
    return Reply(200, SSE, chunks=[text.encode()])


async def run(p: AnthropicProvider, **kw: Any) -> list[Delta]:
    return [d async for d in p.stream(ChatRequest((Message.user("hi"),), max_tokens=256, **kw))]


START = {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
                                               "model": "claude-sonnet-4-5", "usage": {"input_tokens": 5,
                                                                                       "output_tokens": 1}}}
BLOCK = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
TEXT = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}
END = [{"type": "content_block_stop", "index": 0},
       {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}},
       {"type": "message_stop"}]


# --- 1. secrets echoed mid-stream ----------------------------------------------------------------------


@pytest.mark.parametrize(("secret", "cfg", "env"), [
    (KEY, {"api_key": KEY}, None),
    (TOKEN, {"auth_token": TOKEN}, None),
    (KEY, {}, {"ANTHROPIC_API_KEY": KEY}),
    (HEADER_SECRET, {"api_key": KEY, "headers": {"X-Gateway": HEADER_SECRET}}, None),
])
async def test_credentials_echoed_in_a_midstream_error_event_are_masked(
        secret: str, cfg: dict[str, Any], env: dict[str, str] | None) -> None:
    error = {"type": "error", "error": {"type": "api_error", "message": f"oops {secret}"}}
    p, _ = make(events(START, BLOCK, TEXT, error), env=env, **cfg)
    with pytest.raises(ProviderError) as info:
        await run(p)
    assert info.value.failure_class is FailureClass.SERVER_ERROR
    assert secret not in str(info.value) and secret not in repr(info.value) and "oops ***" in str(info.value)


async def test_a_header_value_echoed_in_a_4xx_is_masked() -> None:
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": f"bad {HEADER_SECRET}"}}
    p, _ = make(Reply(400, {"content-type": "application/json"}, body=json.dumps(body).encode()),
                api_key=KEY, headers={"X-Gateway": HEADER_SECRET})
    with pytest.raises(ProviderError) as info:
        await run(p)
    assert HEADER_SECRET not in str(info.value)


async def test_a_key_in_a_malformed_event_is_masked() -> None:
    p, _ = make(Reply(200, SSE, chunks=[f"event: {KEY}\ndata: not json\n\n".encode()]), api_key=KEY)
    with pytest.raises(ProviderError, match="malformed event") as info:
        await run(p)
    assert KEY not in str(info.value)


# --- 2. environment credentials and the base URL ---------------------------------------------------------

ENV = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_AUTH_TOKEN": TOKEN}


async def test_environment_credentials_are_not_sent_to_a_configured_foreign_base_url(
        caplog: pytest.LogCaptureFixture) -> None:
    p, t = make(sse_reply("text"), env=ENV, base_url="https://collector.example.com")
    with caplog.at_level(logging.WARNING, logger="seamkit_anthropic"):
        await p.chat(ChatRequest((Message.user("hi"),), max_tokens=256))
    (req,) = t.requests
    assert str(req.url) == "https://collector.example.com/v1/messages"
    assert "x-api-key" not in req.headers and "authorization" not in req.headers
    assert KEY not in str(req.headers) and TOKEN not in str(req.headers)
    assert "not sent" in caplog.text and KEY not in caplog.text


@pytest.mark.parametrize(("env", "cfg", "url"), [
    (ENV, {}, "https://api.anthropic.com/v1/messages"),
    (ENV, {"base_url": "https://api.anthropic.com/"}, "https://api.anthropic.com/v1/messages"),
    ({**ENV, "ANTHROPIC_BASE_URL": "https://proxy.corp.example"}, {}, "https://proxy.corp.example/v1/messages"),
])
async def test_environment_credentials_go_to_anthropic_or_to_the_environment_base_url(
        env: dict[str, str], cfg: dict[str, Any], url: str) -> None:
    p, t = make(sse_reply("text"), env=env, **cfg)
    await p.chat(ChatRequest((Message.user("hi"),), max_tokens=256))
    (req,) = t.requests
    assert str(req.url) == url
    assert req.headers["x-api-key"] == KEY and req.headers["authorization"] == f"Bearer {TOKEN}"


async def test_configured_credentials_go_to_a_configured_base_url() -> None:
    p, t = make(sse_reply("text"), env=ENV, base_url="http://127.0.0.1:4000", api_key="sk-mine-0000")
    await p.chat(ChatRequest((Message.user("hi"),), max_tokens=256))
    assert t.requests[0].headers["x-api-key"] == "sk-mine-0000" and "authorization" not in t.requests[0].headers


async def test_anthropic_host_without_any_credential_is_refused_before_dispatch() -> None:
    p, t = make(sse_reply("text"))
    with pytest.raises(ProviderError) as info:
        await run(p)
    assert info.value.failure_class is FailureClass.AUTHENTICATION and t.requests == []


# --- 3. base URLs -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["http://[::1", "http://", "ftp://example.com", "http://host:99999",
                                 "localhost:8080"])
def test_bad_base_urls_are_refused_by_the_config(url: str) -> None:
    with pytest.raises(ValidationError, match="base_url"):
        AnthropicConfig(model="claude-sonnet-4-5", base_url=url)


def test_a_bad_base_url_is_a_located_config_error(tmp_path: Path) -> None:
    f = tmp_path / "agent.yaml"
    f.write_text('seamkit: 1\nagent:\n  name: q\n  prompt: hi\n  model:\n    use: anthropic\n'
                 '    model: claude-sonnet-4-5\n    base_url: "http://[::1"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_composition(f)
    (issue,) = [i for i in info.value.issues if "base_url" in i.message or "base_url" in str(i.path)]
    assert issue.line is not None and issue.line >= 7


# --- 6. float prices -----------------------------------------------------------------------------------------


def test_float_prices_are_refused_as_inexact() -> None:
    with pytest.raises(ValidationError, match="strings or integers"):
        AnthropicConfig(model="m", price={"input": 0.1, "output": "0.4"})
    cfg = AnthropicConfig(model="m", price={"input": "0.10", "output": 4})
    assert cfg.price is not None and cfg.price.input == Decimal("0.10") and cfg.price.output == Decimal(4)


# --- 7. local pricing -----------------------------------------------------------------------------------------


async def test_a_priced_model_behind_a_loopback_proxy_is_priced() -> None:
    p, _ = make(sse_reply("text"), base_url="http://127.0.0.1:4000", api_key=KEY)  # e.g. LiteLLM
    assert p.local is False and p.price is not None and p.price.input > 0
    r = await p.chat(ChatRequest((Message.user("hi"),), max_tokens=256))
    assert r.usage.cost_source == "estimated" and r.usage.cost is not None and r.usage.cost > 0


@pytest.mark.parametrize("base", ["http://127.0.0.1:8080", "http://[::1]:8080", "http://localhost:8080"])
async def test_an_unknown_model_on_loopback_is_local(base: str) -> None:
    p, _ = make(sse_reply("text"), model="my-local-model", base_url=base)
    assert p.local is True
    r = await p.chat(ChatRequest((Message.user("hi"),), max_tokens=256))
    assert r.usage.cost == 0 and r.usage.cost_source == "local"
    assert not r.warnings or all("price" not in w for w in r.warnings)


async def test_explicit_local_and_price_override_the_default() -> None:
    p, _ = make(sse_reply("text"), base_url="http://127.0.0.1:4000", api_key=KEY, local=True)
    r = await p.chat(ChatRequest((Message.user("hi"),), max_tokens=256))
    assert r.usage.cost == 0 and r.usage.cost_source == "local"
    off, _ = make(model="my-local-model", base_url="http://127.0.0.1:8080", local=False)
    assert off.local is False and off.price is None
    priced, _ = make(model="my-local-model", base_url="http://127.0.0.1:8080", price={"input": "1", "output": "2"})
    assert priced.local is False and priced.price is not None and priced.price.output == Decimal(2)
    remote, _ = make(model="my-model", base_url="https://models.example.com")
    assert remote.local is False and remote.price is None


# --- 8. thinking budget vs max_tokens -------------------------------------------------------------------------


def test_a_budget_not_below_the_configured_max_tokens_is_refused_at_load() -> None:
    with pytest.raises(ValidationError, match="budget_tokens"):
        AnthropicConfig(model="claude-sonnet-4-5", max_tokens=2048, thinking={"type": "enabled", "budget_tokens": 2048})
    # interleaved thinking lifts the limit; an unset max_tokens is checked per call instead
    AnthropicConfig(model="claude-sonnet-4-5", max_tokens=2048, thinking={"type": "enabled", "budget_tokens": 4096},
                    betas=["interleaved-thinking-2025-05-14"])
    AnthropicConfig(model="claude-sonnet-4-5", thinking={"type": "enabled", "budget_tokens": 8192})


def test_the_budget_error_is_located_in_yaml(tmp_path: Path) -> None:
    f = tmp_path / "agent.yaml"
    f.write_text("seamkit: 1\nagent:\n  name: q\n  prompt: hi\n  model:\n    use: anthropic\n"
                 "    model: claude-sonnet-4-5\n    max_tokens: 1024\n"
                 "    thinking: {type: enabled, budget_tokens: 2048}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_composition(f)
    assert any("budget_tokens" in i.message and i.line is not None for i in info.value.issues)


async def test_the_call_time_check_against_a_request_max_tokens_stays() -> None:
    p, t = make(api_key=KEY, thinking={"type": "enabled", "budget_tokens": 2048})
    with pytest.raises(UnsupportedFeature, match="budget_tokens"):
        await run(p)  # the request's max_tokens is 256
    assert t.requests == []


# --- 5. events with the wrong JSON types ------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [
    {"type": "content_block_delta", "index": 0, "delta": "nope"},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 5}},
    {"type": "content_block_delta", "index": "0", "delta": {"type": "text_delta", "text": "x"}},
    {"type": "message_delta", "delta": "end_turn", "usage": {"output_tokens": 3}},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": "lots"},
    {"type": "content_block_start", "index": 1, "content_block": "text"},
    {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": 1, "name": "f"}},
])
async def test_an_event_of_the_wrong_json_types_is_a_classified_error(bad: dict[str, Any]) -> None:
    p, _ = make(events(START, BLOCK, TEXT, bad, *END), api_key=KEY)
    with pytest.raises(ProviderError, match="malformed event") as info:
        await run(p)
    assert info.value.failure_class is FailureClass.SERVER_ERROR


@pytest.mark.parametrize("start", [
    {"type": "message_start", "message": "msg"},
    {"type": "message_start", "message": {"usage": [1], "model": "claude-sonnet-4-5"}},
])
async def test_a_malformed_message_start_is_a_classified_error(start: dict[str, Any]) -> None:
    p, _ = make(events(start, BLOCK, TEXT, *END), api_key=KEY)
    with pytest.raises(ProviderError, match="malformed event"):
        await run(p)
