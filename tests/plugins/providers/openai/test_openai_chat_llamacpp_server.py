"""openai_chat against a REAL OpenAI-compatible server on loopback: llama-cpp-python's server with
the packaged Gemma 3 270M GGUF (started and stopped by the ``llama_server`` fixture). Streaming
text, JSON-schema output, a forced tool call and usage, over real HTTP and real SSE."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from seamkit.values import ChatRequest, Message, ToolSchema
from seamkit_openai.chat import build
from seamkit_openai.config import OpenAIChatConfig

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[4]
# llama-cpp-python's server takes JSON mode with an embedded schema, not response_format
# json_schema, and sends no usage in streams: both are described here, as a user would in YAML.
LOCAL_CAPABILITIES = {"json_schema": False, "json_object_schema": True}
WEATHER = ToolSchema(
    "get_weather", "Current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, False,
)


def provider(base_url: str, **extra: Any) -> Any:
    cfg = OpenAIChatConfig(model="gemma-3-270m", base_url=base_url, capabilities=LOCAL_CAPABILITIES, **extra)
    return build(cfg, environ={})


async def test_streaming_chat_with_usage(llama_server: str) -> None:
    p = provider(llama_server)
    deltas = [d async for d in p.stream(ChatRequest((Message.user("Say hello."),), max_tokens=16, temperature=0))]
    texts = [d.text for d in deltas if d.text]
    assert len(texts) >= 2, "text arrives in several deltas, not one"
    final = deltas[-1]
    assert final.finish_reason in ("stop", "length")
    u = final.usage
    assert u is not None and u.input_tokens > 0 and u.output_tokens > 0 and u.requests == 1
    assert u.cost == 0 and u.cost_source == "local"


async def test_json_schema_output(llama_server: str) -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    r = await provider(llama_server).chat(
        ChatRequest((Message.user("What is six times seven? Answer in JSON."),), output_schema=schema,
                    max_tokens=48, temperature=0))
    value = json.loads(r.text)
    jsonschema.validate(value, schema)
    assert isinstance(value["answer"], int)


async def test_forced_tool_call(llama_server: str) -> None:
    r = await provider(llama_server).chat(
        ChatRequest((Message.user("What is the weather in Paris?"),), tools=(WEATHER,), tool_choice="get_weather",
                    max_tokens=48, temperature=0))
    (call,) = r.tool_calls
    assert call.name == "get_weather"
    assert isinstance(call.arguments["city"], str) and call.arguments["city"]
    assert r.finish_reason == "tool_calls"
    assert r.usage.input_tokens > 0


async def test_an_http_error_from_the_real_server_is_classified(llama_server: str) -> None:
    from seamkit.errors import ProviderError

    # the server refuses response_format json_schema (it only knows text/json_object): a real 4xx/5xx
    p = build(OpenAIChatConfig(model="gemma-3-270m", base_url=llama_server, capabilities={"json_schema": True}),
              environ={})
    with pytest.raises(ProviderError) as info:
        await p.chat(ChatRequest((Message.user("hi"),), output_schema={"type": "object"}, max_tokens=8))
    assert info.value.status is not None and info.value.status >= 400
    assert info.value.provider == "openai_chat"


TYPED_AGENT = """\
seamkit: 1
agent:
  name: compatible-typed
  model: {use: openai_chat, model: gemma-3-270m, capabilities: {json_schema: false, json_object_schema: true}}
  prompt: Answer arithmetic questions with a JSON object.
  output:
    json_schema: {type: object, properties: {answer: {type: integer}}, required: [answer]}
  settings: {temperature: 0, max_tokens: 48}
"""


def _seamkit(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "seamkit", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


def test_a_composed_agent_runs_from_the_cli_against_the_server(llama_server: str, tmp_path: Path) -> None:
    env = {**os.environ, "OPENAI_BASE_URL": llama_server}
    env.pop("OPENAI_API_KEY", None)
    (tmp_path / "agent.yaml").write_text(TYPED_AGENT)
    proc = _seamkit(["run", "agent.yaml", "What is six times seven?", "--json"], env, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert events[-1]["kind"] == "run_finished"
    assert isinstance(events[-1]["output"]["answer"], int)
    # the example shipped for OpenAI-compatible servers is valid against the installed plugins
    check = _seamkit(["validate", str(ROOT / "examples" / "openai-compatible.yaml")], env, tmp_path)
    assert check.returncode == 0, check.stderr
