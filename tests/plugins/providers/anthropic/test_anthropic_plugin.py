"""The ``anthropic`` component in the plugin registry and in compositions, and a full agent run
over replayed wire fixtures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from anthropic_wire_helpers import SECRET, build, expected_body, sse_reply
from pydantic import ValidationError
from seamkit._agent.agent import Agent
from seamkit._plugins.registry import load_registry
from seamkit._tools import tool
from seamkit.composition import load_composition
from seamkit.errors import ConfigError
from seamkit_anthropic.config import AnthropicConfig
from seamkit_anthropic.provider import AnthropicProvider


def test_registered_with_its_config_model() -> None:
    spec = load_registry().resolve("provider", "anthropic")
    assert spec.config_model() is AnthropicConfig
    provider = spec.build({"model": "claude-haiku-4-5", "api_key": SECRET, "cache": True})
    assert isinstance(provider, AnthropicProvider)
    assert provider.provider == "anthropic" and provider.model == "claude-haiku-4-5"
    assert provider.config.cache is True


def test_the_plugin_module_is_cheap_to_import() -> None:
    code = ("import sys, seamkit_anthropic.plugin; "
            "print(sorted(m for m in ('httpx', 'seamkit_anthropic.provider', 'seamkit_http') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_config_rejects_unknown_keys_and_bad_values() -> None:
    with pytest.raises(ValidationError, match="temprature"):
        AnthropicConfig(model="claude-sonnet-4-5", temprature=0)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="budget_tokens"):
        AnthropicConfig(model="claude-sonnet-4-5", thinking={"type": "enabled", "budget_tokens": 10})
    with pytest.raises(ValidationError):
        AnthropicConfig(model="claude-sonnet-4-5", thinking={"type": "sometimes"})


def test_a_composition_using_anthropic_validates(tmp_path: Path) -> None:
    good = tmp_path / "agent.yaml"
    good.write_text(
        "seamkit: 1\n"
        "agent:\n"
        "  name: quickstart\n"
        "  model:\n"
        "    use: anthropic\n"
        "    model: claude-sonnet-4-5\n"
        "    api_key: ${ANTHROPIC_API_KEY}\n"
        "    cache: true\n"
        "    thinking: {type: enabled, budget_tokens: 2048}\n"
        "  prompt: You are terse.\n",
        encoding="utf-8",
    )
    comp = load_composition(good, env={"ANTHROPIC_API_KEY": SECRET})
    assert SECRET not in repr(comp)
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "seamkit: 1\nagent:\n  name: q\n  model: {use: anthropic, model: claude-sonnet-4-5, cache_ttl: 2h}\n"
        "  prompt: hi\n", encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load_composition(bad)
    assert "cache_ttl" in str(info.value)


async def test_an_agent_runs_a_tool_loop_over_the_wire() -> None:
    @tool(side_effecting=False)
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return f"Sunny in {city}"

    provider, transport = build(sse_reply("tool_call"), sse_reply("text"))
    agent = Agent(model=provider, name="weather", prompt="You are a terse assistant.", tools=[get_weather],
                  tool_choice="required", max_tokens=256)
    result = await agent.run("What is the weather in Paris?")
    assert result.output == "Hello!"
    first, second = transport.json_bodies
    assert first["tool_choice"] == {"type": "any"}
    assert first["messages"] == expected_body("tool_call")["messages"]
    assert second["messages"][1] == {"role": "assistant", "content": [
        {"type": "text", "text": "Okay, let's check the weather for Paris:"},
        {"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "get_weather", "input": {"city": "Paris"}},
    ]}
    assert second["messages"][2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "content": "Sunny in Paris"}]}
    assert "tool_choice" not in second  # reset to auto after the tool batch
    assert result.usage.input_tokens == 472 + 25 and result.usage.requests == 2
    assert json.dumps(second).count(SECRET) == 0
