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
    from seamkit.errors import FailureClass, ProviderError

    # the server refuses a response_format type it does not know with a 500 whose body is its request
    # validation error: a request error, not a transient server error
    p = build(OpenAIChatConfig(model="gemma-3-270m", base_url=llama_server), environ={})
    with pytest.raises(ProviderError) as info:
        await p.chat(ChatRequest((Message.user("hi"),), max_tokens=8, extra={"response_format": {"type": "xml"}}))
    err = info.value
    assert (err.status, err.failure_class, err.param) == (500, FailureClass.INVALID_REQUEST, "response_format.type")
    assert err.provider == "openai_chat" and not err.failure_class.transient


async def test_json_schema_output_without_capability_overrides(llama_server: str) -> None:
    # json_schema is refused by this server: the provider falls back to JSON mode with the schema, once
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    p = build(OpenAIChatConfig(model="gemma-3-270m", base_url=llama_server), environ={})
    request = ChatRequest((Message.user("What is six times seven? Answer in JSON."),), output_schema=schema,
                          max_tokens=48, temperature=0)
    first = await p.chat(request)
    jsonschema.validate(json.loads(first.text), schema)
    assert any("refused response_format json_schema (response_format.type)" in w for w in first.warnings)
    assert set(p.refused_modes) == {"json_schema"}
    second = await p.chat(request)
    jsonschema.validate(json.loads(second.text), schema)


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


def test_seamkit_ask_with_a_schema_against_the_server_needs_no_configuration(llama_server: str,
                                                                             tmp_path: Path) -> None:
    # issue 10: `seamkit ask --schema` against `python -m seamkit_llamacpp.server`, nothing but the URL
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    (tmp_path / "answer.json").write_text(json.dumps(
        {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}))
    proc = _seamkit(["ask", "What is six times seven? Answer in JSON.", "--model", "openai_chat:gemma-3-270m",
                     "--schema", "answer.json", "--option", f"base_url={llama_server}", "--temperature", "0",
                     "--max-tokens", "48"], env, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    value = json.loads(proc.stdout)
    assert isinstance(value["answer"], int)
    said = [line for line in proc.stderr.splitlines() if "refused response_format json_schema" in line]
    assert len(said) == 1, proc.stderr
    # --json shows the degradation in the answer, once
    proc = _seamkit(["ask", "What is six times seven? Answer in JSON.", "--model", "openai_chat:gemma-3-270m",
                     "--schema", "answer.json", "--option", f"base_url={llama_server}", "--temperature", "0",
                     "--max-tokens", "48", "--json"], env, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    answer = json.loads(proc.stdout)
    assert answer["outcome"] == "ok" and isinstance(answer["value"]["answer"], int)
    assert len([d for d in answer["degradations"] if "refused response_format json_schema" in d]) == 1
