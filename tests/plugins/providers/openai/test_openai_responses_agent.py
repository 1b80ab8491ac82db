"""``openai`` (Responses API) driven by the agent loop: a reasoning model calls a tool, and the
next request carries the reasoning item (encrypted), the call and the tool's output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel
from seamkit._agent.agent import Agent
from seamkit._tools import tool
from seamkit.values import ReasoningBlock
from seamkit_http import ReplayTransport, Reply, make_client
from seamkit_openai.config import OpenAIResponsesConfig
from seamkit_openai.responses import build

FIX = Path(__file__).parent / "fixtures" / "responses"


@tool(side_effecting=False)
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return json.dumps({"city": city, "temperature_c": 18})


def _sse(name: str) -> Reply:
    return Reply(200, {"content-type": "text/event-stream"}, chunks=[(FIX / name).read_bytes()])


async def test_agent_turn_with_reasoning_and_a_tool_call() -> None:
    transport = ReplayTransport(_sse("reasoning_tool_call.sse"), _sse("text.sse"))
    model = build(OpenAIResponsesConfig(model="o4-mini", api_key="sk-agent-test"),
                  client=make_client(transport=transport), environ={})
    result = await Agent(model, prompt="Use the tools.", tools=[get_weather]).run("Weather in Paris?")

    assert result.output == "Hello! How can I help you today?"
    assert result.stop_reason == "completed" and result.steps == 2
    first, second = transport.json_bodies
    assert first["instructions"] == "Use the tools." and first["tools"][0]["name"] == "get_weather"
    assert second["input"][0] == {"role": "user", "content": "Weather in Paris?"}
    reasoning, call, output = second["input"][1:]
    assert reasoning["type"] == "reasoning" and reasoning["id"] == "rs_6801b04fa6b7819bd0e1f2a3b4c5d6e7"
    assert reasoning["encrypted_content"].startswith("gAAAAABoAbBP")
    assert call == {"type": "function_call", "call_id": "call_Hn2kW8pQ4rT6yU1iO3aS5dF7", "name": "get_weather",
                    "arguments": '{"city":"Paris"}'}
    assert output == {"type": "function_call_output", "call_id": "call_Hn2kW8pQ4rT6yU1iO3aS5dF7",
                      "output": json.dumps({"city": "Paris", "temperature_c": 18})}
    blocks = [b for m in result.transcript for b in m.content if isinstance(b, ReasoningBlock)]
    assert len(blocks) == 1 and blocks[0].provider == "openai"
    assert result.usage.requests == 2 and result.usage.reasoning_tokens == 128
    assert result.usage.cost is not None and result.usage.cost_source == "estimated"


# --- schemas strict mode cannot express (issue 10, item 6) -------------------------------------


class Refund(BaseModel):
    kind: Literal["refund"]
    amount: int


class Escalation(BaseModel):
    kind: Literal["escalation"]
    reason: str
    details: dict[str, Any]  # additionalProperties: true, which strict mode cannot express


@tool(side_effecting=False)
def record(note: str, meta: dict[str, Any]) -> str:
    """Record a note with free-form metadata."""
    return "recorded"


def _events(*events: dict[str, Any]) -> Reply:
    text = "".join(f"event: {e['type']}\ndata: {json.dumps({**e, 'sequence_number': i})}\n\n"
                   for i, e in enumerate(events))
    return Reply(200, {"content-type": "text/event-stream"}, chunks=[text.encode()])


_DONE = {"type": "response.completed",
         "response": {"model": "gpt-4.1-2025-04-14", "usage": {"input_tokens": 40, "output_tokens": 12}}}


async def test_schemas_strict_mode_cannot_express_are_sent_non_strict_and_the_union_answer_unwrapped() -> None:
    """A union output type (root anyOf) and ``dict[str, Any]`` fields were refused before sending
    (UnsupportedFeature); now each goes out in a form the API accepts, with one warning naming the
    construct and its path, and the final value is validated against the canonical schema."""
    answer = '{"value": {"kind": "escalation", "reason": "double charge", "details": {"order": [7, 9]}}}'
    transport = ReplayTransport(
        _events({"type": "response.output_item.added", "output_index": 0,
                 "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "record",
                          "arguments": ""}},
                {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0,
                 "delta": '{"note": "called", "meta": {"channel": "phone"}}'}, _DONE),
        _events(*[{"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
                   "content_index": 0, "delta": answer[i:i + 9]} for i in range(0, len(answer), 9)], _DONE),
    )
    model = build(OpenAIResponsesConfig(model="gpt-4.1", api_key="sk-agent-test"),
                  client=make_client(transport=transport), environ={})
    result = await Agent(model, prompt="Triage.", tools=[record], output=Refund | Escalation).run("Help!")

    assert result.output == Escalation(kind="escalation", reason="double charge", details={"order": [7, 9]})
    first, second = transport.json_bodies
    fmt = first["text"]["format"]
    assert fmt["type"] == "json_schema" and fmt["strict"] is False
    root = fmt["schema"]
    assert root["type"] == "object" and root["required"] == ["value"] and "anyOf" not in root
    assert root["properties"]["value"]["anyOf"] == [{"$ref": "#/$defs/Refund"}, {"$ref": "#/$defs/Escalation"}]
    (spec,) = first["tools"]
    assert spec["name"] == "record" and spec["strict"] is False
    assert spec["parameters"]["properties"]["meta"]["additionalProperties"] is True
    assert second["input"][1]["arguments"] == '{"note":"called","meta":{"channel":"phone"}}'
    output_warnings = [w for w in result.warnings if w.startswith("structured output:")]
    tool_warnings = [w for w in result.warnings if w.startswith("tool 'record'")]
    assert len(output_warnings) == len(tool_warnings) == 1  # said on each request, kept once per run
    assert "anyOf at the root ($)" in output_warnings[0]
    assert "additionalProperties at $.$defs.Escalation.properties.details" in output_warnings[0]
    assert "additionalProperties at $.properties.meta" in tool_warnings[0] and "strict: false" in tool_warnings[0]
