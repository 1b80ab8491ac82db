"""seamkit-llamacpp against the real bundled Gemma 3 270M model (no mocks of llama.cpp).

One model is loaded for the whole module (the provider caches loaded models per process);
generations are kept short so the file runs in well under a minute on two cores.
"""

from __future__ import annotations

import ast
import asyncio
import json
import operator
import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from seamkit import Agent, tool
from seamkit._ports import LLMPort
from seamkit.errors import FailureClass, ProviderError
from seamkit.values import ChatRequest, Delta, ImageBlock, Message, ToolCall, ToolResult, ToolSchema
from seamkit_llamacpp.config import LlamaCppConfig
from seamkit_llamacpp.provider import LlamaCppProvider

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "quickstart.yaml"

CALC = ToolSchema(
    "calculator",
    "Evaluate an arithmetic expression and return the number.",
    {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]},
    False,
)
WEATHER = ToolSchema(
    "weather",
    "Current weather in a city.",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"],
    },
    False,
)
FEW_SHOT = (
    "You answer arithmetic questions: first call the calculator, then answer with its result.\n"
    "Example:\n"
    "Question: What is 12 times 34?\n"
    'Call: {"name": "calculator", "arguments": {"expression": "12 * 34"}}\n'
    "Tool result (calculator): 408\n"
    'Answer: {"answer": 408}'
)


@pytest.fixture(scope="module")
def model() -> LlamaCppProvider:
    return LlamaCppProvider(LlamaCppConfig(threads=2, max_tokens=32))


async def deltas(model: LlamaCppProvider, request: ChatRequest) -> list[Delta]:
    return [d async for d in model.stream(request)]


def test_factory_builds_an_llm_port_without_loading_the_model(tmp_path: Path) -> None:
    f = tmp_path / "tiny.gguf"
    f.write_bytes(b"GGUF" + bytes(20))  # a header start only: never loaded
    p = LlamaCppProvider(LlamaCppConfig(model_path=str(f)))
    assert isinstance(p, LLMPort)
    assert (p.provider, p.model) == ("llamacpp", "tiny.gguf")
    assert LlamaCppProvider().model == "gemma-3-270m-q4_k_m.gguf"


def test_a_tool_results_images_left_out_are_reported_without_loading_the_model() -> None:
    p = LlamaCppProvider(LlamaCppConfig())
    req = ChatRequest((Message.user("q"), Message("tool", (
        ToolResult("c1", "screenshot", "the page", images=(ImageBlock(url="https://example.com/a.png"),)),
        ToolResult("c2", "calculator", "2"),
    ))))
    _, warnings = p._settings(req)
    assert warnings == [f"1 image from tool call 'c1' (screenshot) not sent: {p.model} does not take images; "
                        "the tool result says so instead"]


async def test_text_streams_in_several_pieces_with_local_usage(model: LlamaCppProvider) -> None:
    req = ChatRequest((Message.user("Write a sentence about the sea."),), max_tokens=8)
    out = await deltas(model, req)
    texts = [d.text for d in out if d.text]
    assert len(texts) >= 3
    last = out[-1]
    assert last.finish_reason == "length"  # the base model rambles past 8 tokens
    assert last.usage is not None and last.model == "gemma-3-270m-q4_k_m.gguf"
    assert last.usage.input_tokens > 5 and last.usage.output_tokens == 8
    assert last.usage.cost == Decimal(0) and last.usage.cost_source == "local"
    assert all(d.finish_reason is None for d in out[:-1])


async def test_output_schema_constrains_json(model: LlamaCppProvider) -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"enum": ["Paris", "London", "Rome"]}, "is_capital": {"type": "boolean"}},
        "required": ["city", "is_capital"],
    }
    req = ChatRequest((Message.user("Which city is the capital of France?"),), output_schema=schema, max_tokens=40)
    out = await deltas(model, req)
    pieces = [d.text for d in out if d.text]
    assert len(pieces) >= 3  # streamed as text deltas
    assert out[-1].finish_reason == "stop"
    jsonschema.validate(json.loads("".join(pieces)), schema)


async def test_forced_tool_choice_yields_a_valid_call_of_that_tool(model: LlamaCppProvider) -> None:
    req = ChatRequest(
        (Message.user("What is the weather in Paris, in celsius?"),), (CALC, WEATHER), "weather", max_tokens=40
    )
    result = await model.chat(req)
    assert result.finish_reason == "tool_calls" and result.text == ""
    (call,) = result.tool_calls
    assert call.name == "weather" and call.id.startswith("call_")
    jsonschema.validate(dict(call.arguments), dict(WEATHER.parameters))


async def test_required_tool_choice_picks_one_offered_tool(model: LlamaCppProvider) -> None:
    req = ChatRequest((Message.user("What is 17 times 23?"),), (CALC, WEATHER), "required", max_tokens=40)
    result = await model.chat(req)
    (call,) = result.tool_calls
    schema = {"calculator": CALC, "weather": WEATHER}[call.name]
    jsonschema.validate(dict(call.arguments), dict(schema.parameters))
    assert result.usage.output_tokens > 0 and result.usage.cost_source == "local"


async def test_auto_mode_without_output_schema_is_a_call_or_plain_text(model: LlamaCppProvider) -> None:
    result = await model.chat(ChatRequest((Message.user("Say hello."),), (CALC,), "auto", max_tokens=12))
    if result.tool_calls:
        jsonschema.validate(dict(result.tool_calls[0].arguments), dict(CALC.parameters))
    else:
        assert result.text and not result.text.lstrip().startswith("{")
        assert result.finish_reason in ("stop", "length")


async def test_auto_mode_does_not_repeat_an_answered_call(model: LlamaCppProvider) -> None:
    output = {"type": "object", "properties": {"answer": {"type": "number"}}, "required": ["answer"]}
    call = ToolCall("c1", "calculator", {"expression": "17 * 23"})
    req = ChatRequest(
        (
            Message.user("What is 17 times 23?"),
            Message("assistant", (call,)),
            Message("tool", (ToolResult("c1", "calculator", "391"),)),
        ),
        (CALC,),
        "auto",
        output,
        max_tokens=24,
    )
    result = await model.chat(req)
    assert call not in result.tool_calls and all(
        (c.name, dict(c.arguments)) != ("calculator", {"expression": "17 * 23"}) for c in result.tool_calls
    )
    if not result.tool_calls:
        jsonschema.validate(json.loads(result.text), output)


async def test_agent_runs_a_real_tool_and_returns_typed_output(model: LlamaCppProvider) -> None:
    seen: list[str] = []
    ops: dict[type, Any] = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
                            ast.Div: operator.truediv}

    def evaluate(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](evaluate(node.left), evaluate(node.right))  # type: ignore[no-any-return]
        raise ValueError("only + - * / on numbers")

    @tool(side_effecting=False)
    def calculator(expression: str) -> float:
        """Evaluate an arithmetic expression and return the number."""
        seen.append(expression)
        return evaluate(ast.parse(expression, mode="eval").body)

    agent = Agent(
        model=model,
        name="calc",
        prompt=FEW_SHOT,
        tools=[calculator],
        output={"type": "object", "properties": {"answer": {"type": "number"}}, "required": ["answer"]},
        tool_choice="required",
        max_steps=4,
        temperature=0,
        seed=42,
        max_tokens=48,
    )
    result = await agent.run("What is 17 times 23?")
    assert result.stop_reason == "completed"
    assert seen == ["17 * 23"]
    assert result.output == {"answer": 391}
    # offered the tools again (reset_tool_choice back to auto), the tiny model repeats its call:
    # a real repeat, discarded with a warning (repeat_tool_calls=false)
    assert any("the model repeated the tool call calculator" in w for w in result.warnings), result.warnings
    assert result.usage.requests == 2 and result.usage.input_tokens > 0
    assert result.usage.cost == Decimal(0) and result.usage.cost_source == "local"


async def test_quickstart_example_answers_with_the_calculator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from seamkit.composition import build_agent, load_composition

    monkeypatch.chdir(tmp_path)  # the embedded default store goes to ./.seamkit/seamkit.db
    agent = build_agent(load_composition(EXAMPLE))
    try:
        result = await agent.run("What is 17 times 23?")
        snap = await agent.checkpointer.latest(result.run_id)
    finally:
        await agent.checkpointer.port.aclose()
    assert (tmp_path / ".seamkit" / "seamkit.db").is_file()
    assert snap is not None and snap.status == "done" and snap.transcript == result.transcript
    calls = [c for m in result.transcript for c in m.tool_calls]
    assert [(c.name, dict(c.arguments)) for c in calls] == [("calculator", {"expression": "17 * 23"})]
    assert [r.content for m in result.transcript for r in m.tool_results] == ["391"]
    assert result.output == {"answer": 391} and result.stop_reason == "completed"
    # the answer turn offers no tools (reset_tool_choice: none): nothing repeated, no warning
    assert result.warnings == (), result.warnings


async def test_a_prompt_longer_than_the_context_is_a_context_length_error(model: LlamaCppProvider) -> None:
    with pytest.raises(ProviderError) as info:
        await model.chat(ChatRequest((Message.user("word " * 3000),)))
    assert info.value.failure_class is FailureClass.CONTEXT_LENGTH
    assert "2048" in str(info.value)


def _workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "seamkit-llamacpp"]


async def _generated_by(model: LlamaCppProvider, stop: Any) -> int:
    """Tokens the interrupted call sampled. Once the stream is closed its worker thread has left
    llama.cpp (so the model may be freed or the process may exit safely)."""
    before = model.tokens_generated
    await stop()
    assert _workers() == []
    follow_up = await model.chat(ChatRequest((Message.user("Hi"),), max_tokens=2))
    return model.tokens_generated - before - follow_up.usage.output_tokens


async def test_closing_the_stream_early_stops_generation(model: LlamaCppProvider) -> None:
    async def stop() -> None:
        stream = model.stream(ChatRequest((Message.user("Tell me a long story."),), max_tokens=300))
        got = 0
        async for d in stream:
            got += bool(d.text)
            if got == 2:
                break
        await stream.aclose()  # type: ignore[attr-defined]

    assert await _generated_by(model, stop) < 30


async def test_cancelling_the_task_stops_generation(model: LlamaCppProvider) -> None:
    async def stop() -> None:
        first = asyncio.Event()

        async def consume() -> None:
            async for d in model.stream(ChatRequest((Message.user("Tell me a long story."),), max_tokens=300)):
                if d.text:
                    first.set()

        task = asyncio.create_task(consume())
        await first.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    assert await _generated_by(model, stop) < 30
