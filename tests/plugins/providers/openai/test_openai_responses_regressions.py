"""Regressions in ``openai`` (Responses API) found by a newcomer: credentials echoed back in an error
event, and events whose fields have the wrong JSON types."""

from __future__ import annotations

import json
from typing import Any

import pytest
from seamkit.errors import FailureClass, ProviderError
from seamkit.values import ChatRequest, Delta, Message
from seamkit_http import ReplayTransport, Reply, make_client
from seamkit_openai.config import OpenAIResponsesConfig
from seamkit_openai.responses import OpenAIResponsesProvider, build

KEY = "sk-newcomer-SECRET-123"
HEADER_SECRET = "gateway-token-9f8e7d6c5b"
ITEM = "msg_1"


def events(*evs: dict[str, Any]) -> Reply:
    text = "".join(f"event: {e['type']}\ndata: {json.dumps({'sequence_number': i, **e})}\n\n"
                   for i, e in enumerate(evs))
    return Reply(200, {"content-type": "text/event-stream"}, chunks=[text.encode()])


def make(*replies: Reply, **cfg: Any) -> OpenAIResponsesProvider:
    cfg.setdefault("model", "gpt-4.1")
    cfg.setdefault("api_key", KEY)
    return build(OpenAIResponsesConfig(**cfg), client=make_client(transport=ReplayTransport(*replies)), environ={})


async def run(p: OpenAIResponsesProvider) -> list[Delta]:
    return [d async for d in p.stream(ChatRequest((Message.user("hi"),)))]


TEXT = {"type": "response.output_text.delta", "item_id": ITEM, "output_index": 0, "content_index": 0,
        "delta": "Hel"}


@pytest.mark.parametrize("secret", [KEY, HEADER_SECRET])
async def test_credentials_echoed_in_an_error_event_are_masked(secret: str) -> None:
    p = make(events(TEXT, {"type": "error", "code": "server_error", "message": f"oops {secret}", "param": None}),
             headers={"X-Gateway": HEADER_SECRET})
    with pytest.raises(ProviderError) as info:
        await run(p)
    assert info.value.failure_class is FailureClass.SERVER_ERROR
    assert secret not in str(info.value) and "oops ***" in str(info.value)


async def test_a_header_value_echoed_in_a_4xx_is_masked() -> None:
    body = {"error": {"message": f"bad {HEADER_SECRET}", "type": "invalid_request_error", "code": None}}
    p = make(Reply(400, {"content-type": "application/json"}, body=json.dumps(body).encode()),
             headers={"X-Gateway": HEADER_SECRET})
    with pytest.raises(ProviderError) as info:
        await run(p)
    assert HEADER_SECRET not in str(info.value)


@pytest.mark.parametrize("bad", [
    {**TEXT, "delta": 42},
    {**TEXT, "delta": {"text": "x"}},
    {"type": "response.completed", "response": "done"},
    {"type": "response.completed", "response": {"status": "completed", "usage": "lots"}},
    {"type": "response.completed", "response": {"status": "completed", "usage": [1, 2]}},
    {"type": "response.incomplete", "response": ["x"]},
    {"type": "response.failed", "response": 3},
    {"type": "response.output_item.added", "output_index": 0,
     "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": 7, "arguments": ""}},
    {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": ["{"]},
    {"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "summary_index": 0, "delta": 1},
    {**TEXT, "content_index": "first"},
])
async def test_an_event_of_the_wrong_json_types_is_a_classified_error(bad: dict[str, Any]) -> None:
    p = make(events(bad, {"type": "response.completed", "response": {"status": "completed"}}))
    with pytest.raises(ProviderError, match="malformed event") as info:
        await run(p)
    assert info.value.failure_class is FailureClass.SERVER_ERROR and info.value.provider == "openai"


async def test_null_usage_is_still_accepted() -> None:
    p = make(events(TEXT, {"type": "response.completed", "response": {"status": "completed", "usage": None}}))
    ds = await run(p)
    assert "".join(d.text or "" for d in ds) == "Hel" and ds[-1].finish_reason == "stop"
