"""``openai`` (Responses API) driven by the agent loop: a reasoning model calls a tool, and the
next request carries the reasoning item (encrypted), the call and the tool's output."""

from __future__ import annotations

import json
from pathlib import Path

from seamkit.agent.agent import Agent
from seamkit.tools import tool
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
