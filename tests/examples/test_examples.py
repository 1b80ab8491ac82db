"""The shipped examples: every one validates against the installed plugins; the OpenAI and
Anthropic quickstarts run end to end over their real wire formats (replayed HTTP, no key needed);
with a key in the environment they also run against the live API (the only tests that may skip:
they need a paid API key)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from seamkit.composition import build_agent, load_composition
from seamkit_http import ReplayTransport, Reply

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events)


def _stream(body: bytes) -> Reply:
    return Reply(200, headers={"content-type": "text/event-stream"}, chunks=[body[i:i + 97] for i in
                                                                           range(0, len(body), 97)])


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_validates(path: Path) -> None:
    comp = load_composition(path, env={})
    assert comp.agent.model.use


# --- OpenAI Responses API (API reference "Streaming events") ---------------------------------------


def _responses_call(call_id: str, args: str) -> bytes:
    item = {"id": "fc_1", "type": "function_call", "status": "in_progress", "arguments": "", "call_id": call_id,
            "name": "calculator"}
    done = {**item, "status": "completed", "arguments": args}
    usage = {"input_tokens": 120, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 18,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 138}
    resp = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "gpt-4.1-mini-2025-04-14",
            "output": [], "usage": None}
    return _sse([
        ("response.created", {"type": "response.created", "sequence_number": 0, "response": resp}),
        ("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 1,
                                        "output_index": 0, "item": item}),
        ("response.function_call_arguments.delta", {"type": "response.function_call_arguments.delta",
                                                    "sequence_number": 2, "item_id": "fc_1", "output_index": 0,
                                                    "delta": args}),
        ("response.output_item.done", {"type": "response.output_item.done", "sequence_number": 3,
                                       "output_index": 0, "item": done}),
        ("response.completed", {"type": "response.completed", "sequence_number": 4,
                                "response": {**resp, "status": "completed", "output": [done], "usage": usage}}),
    ])


def _responses_text(text: str) -> bytes:
    msg = {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    usage = {"input_tokens": 160, "input_tokens_details": {"cached_tokens": 128}, "output_tokens": 9,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 169}
    resp = {"id": "resp_2", "object": "response", "status": "in_progress", "model": "gpt-4.1-mini-2025-04-14",
            "output": [], "usage": None}
    part = {"type": "output_text", "text": text, "annotations": []}
    return _sse([
        ("response.created", {"type": "response.created", "sequence_number": 0, "response": resp}),
        ("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 1,
                                        "output_index": 0, "item": msg}),
        ("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": 2,
                                        "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": text}),
        ("response.output_item.done", {"type": "response.output_item.done", "sequence_number": 3, "output_index": 0,
                                       "item": {**msg, "status": "completed", "content": [part]}}),
        ("response.completed", {"type": "response.completed", "sequence_number": 4,
                                "response": {**resp, "status": "completed", "usage": usage}}),
    ])


async def _run(agent: Any, task: str) -> Any:
    try:
        return await agent.run(task)
    finally:
        if agent.checkpointer is not None:  # the embedded default: .seamkit/seamkit.db in the cwd
            await agent.checkpointer.aclose()


async def test_the_openai_quickstart_over_the_wire(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-example-test-0000")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    comp = load_composition(EXAMPLES / "quickstart-openai.yaml", env={})
    agent = build_agent(comp)
    replay = ReplayTransport(_stream(_responses_call("call_1", '{"expression": "17 * 23"}')),
                             _stream(_responses_text('{"answer": 391}')))
    agent.model._client = httpx.AsyncClient(transport=replay)
    result = await _run(agent, "What is 17 times 23?")
    assert result.output == {"answer": 391}
    first, second = replay.json_bodies
    assert first["model"] == "gpt-4.1-mini" and first["tool_choice"] == "required"
    assert first["tools"][0]["name"] == "calculator"
    assert second["text"]["format"]["type"] == "json_schema"
    outputs = [i for i in second["input"] if i.get("type") == "function_call_output"]
    assert outputs == [{"type": "function_call_output", "call_id": "call_1", "output": "391"}]
    assert replay.requests[0].headers["authorization"] == "Bearer sk-example-test-0000"
    assert result.usage.cost is not None and result.usage.cost_source == "estimated"
    assert result.usage.cache_read_tokens == 128


# --- Anthropic Messages API (reference "Streaming Messages") ---------------------------------------


def _messages(blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]], stop: str, out_tokens: int) -> bytes:
    start = {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5-20251001", "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 90, "cache_creation_input_tokens": 400, "cache_read_input_tokens": 0,
                  "output_tokens": 1}}}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", start), ("ping", {"type": "ping"})]
    for i, (block, deltas) in enumerate(blocks):
        events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": block}))
        events += [("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d}) for d in deltas]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                     "usage": {"output_tokens": out_tokens}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return _sse(events)


async def test_the_anthropic_quickstart_over_the_wire(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-example-test-0000")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    agent = build_agent(load_composition(EXAMPLES / "quickstart-anthropic.yaml", env={}))
    call = _messages([({"type": "tool_use", "id": "toolu_1", "name": "calculator", "input": {}},
                       [{"type": "input_json_delta", "partial_json": '{"expression": '},
                        {"type": "input_json_delta", "partial_json": '"17 * 23"}'}])], "tool_use", 30)
    answer = _messages([({"type": "text", "text": ""}, [{"type": "text_delta", "text": '{"answer": 391}'}])],
                       "end_turn", 9)
    replay = ReplayTransport(_stream(call), _stream(answer))
    agent.model._client = httpx.AsyncClient(transport=replay)
    result = await _run(agent, "What is 17 times 23?")
    assert result.output == {"answer": 391}
    first, second = replay.json_bodies
    assert first["model"] == "claude-haiku-4-5" and first["tool_choice"]["type"] in ("any", "tool")
    assert first["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    results = [b for m in second["messages"] for b in (m["content"] if isinstance(m["content"], list) else [])
               if b.get("type") == "tool_result"]
    assert results and results[0]["tool_use_id"] == "toolu_1" and "391" in json.dumps(results[0]["content"])
    headers = replay.requests[0].headers
    assert headers["x-api-key"] == "sk-ant-example-test-0000" and headers["anthropic-version"] == "2023-06-01"
    assert result.usage.cache_write_tokens == 800 and result.usage.cost_source == "estimated"


# --- live APIs: run only with a paid key in the environment ----------------------------------------


@pytest.mark.parametrize(("example", "key"), [("quickstart-openai.yaml", "OPENAI_API_KEY"),
                                             ("quickstart-anthropic.yaml", "ANTHROPIC_API_KEY")])
async def test_live_quickstart(example: str, key: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    if not os.environ.get(key):
        pytest.skip(f"needs a paid API key: set {key} to run {example} against the live API")
    agent = build_agent(load_composition(EXAMPLES / example))
    result = await _run(agent, "What is 17 times 23?")
    assert result.output == {"answer": 391}
    assert result.usage.cost is not None and result.usage.cost > 0
