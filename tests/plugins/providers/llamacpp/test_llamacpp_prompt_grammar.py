"""Pure parts of seamkit-llamacpp: the Gemma prompt format and the decoding plans (no model)."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st
from seamkit.values import ChatRequest, ImageBlock, Message, TextBlock, ToolCall, ToolResult, ToolSchema
from seamkit_llamacpp.grammar import plan, read_tool_call, to_gbnf, tool_call_schema
from seamkit_llamacpp.prompt import END, START, as_text, render, tool_call_json

CALC = ToolSchema(
    "calculator",
    "Evaluate arithmetic.",
    {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]},
    False,
)
CLOCK = ToolSchema("clock", "The time.", {"type": "object", "properties": {}}, False)
OUT = {"type": "object", "properties": {"answer": {"type": "number"}}, "required": ["answer"]}


def test_system_text_and_instructions_open_the_first_user_turn() -> None:
    req = ChatRequest(
        (Message.system("Be brief."), Message.user("What is 2+2?")), (CALC,), "required", OUT
    )
    text = as_text(render(req))
    assert text.startswith(f"{START}user\nBe brief.\n\nYou can use these tools:\n- calculator: Evaluate arithmetic.")
    assert "Call one of these tools now." in text
    assert 'JSON Schema: {"type":"object","properties":{"answer"' in text
    assert text.endswith(f"What is 2+2?{END}\n{START}model\n")
    assert text.count(START) == 2


def test_tool_calls_and_results_render_as_text_turns() -> None:
    req = ChatRequest(
        (
            Message.user("q"),
            Message("assistant", (TextBlock("Let me compute."), ToolCall("c1", "calculator", {"expression": "1+1"}))),
            Message("tool", (ToolResult("c1", "calculator", "2"), ToolResult("c2", "clock", "boom", is_error=True))),
            Message.user("and then?"),
        )
    )
    text = as_text(render(req))
    assert (
        f'{START}model\nLet me compute.\n{{"name": "calculator", "arguments": {{"expression": "1+1"}}}}{END}\n'
        in text
    )
    # the tool turn and the following user message merge into one user turn
    assert f"{START}user\nTool result (calculator): 2\n\nTool error (clock): boom\n\nand then?{END}\n" in text
    assert "You can use these tools" not in text  # no tools offered in this request


def test_a_tool_results_images_are_named_in_its_text() -> None:
    shot = ImageBlock("image/png", data=bytes(2048))
    req = ChatRequest((
        Message.user("q"),
        Message("assistant", (ToolCall("c1", "screenshot", {}), ToolCall("c2", "screenshot", {}))),
        Message("tool", (ToolResult("c1", "screenshot", "the page", images=(shot,)),
                         ToolResult("c2", "screenshot", "", is_error=True, images=(shot, ImageBlock(url="u"))))),
    ))
    assert (
        f"{START}user\nTool result (screenshot): the page\n\n"
        "[1 image left out (image/png, 2,048 bytes): this model does not take images]\n\n"
        "Tool error (screenshot): "
        f"[2 images left out (image/png, 2,048 bytes; image/png, by URL): this model does not take images]{END}\n"
    ) in as_text(render(req))


def test_a_tool_result_without_images_is_unchanged() -> None:
    req = ChatRequest((Message.user("q"), Message("tool", (ToolResult("c1", "calculator", "2"),))))
    assert f"{START}user\nq\n\nTool result (calculator): 2{END}\n" in as_text(render(req))


def test_a_conversation_not_starting_with_user_gets_a_preamble_turn() -> None:
    req = ChatRequest((Message.system("S"), Message.assistant("hello"), Message("user", (ImageBlock(url="u"),))))
    text = as_text(render(req))
    assert text == f"{START}user\nS{END}\n{START}model\nhello{END}\n{START}user\n[image omitted]{END}\n{START}model\n"


@given(st.text())
def test_message_content_never_becomes_a_control_token(content: str) -> None:
    segments = render(ChatRequest((Message.system(content), Message.user(content), Message.assistant(content))))
    specials = [s.text for s in segments if s.special]
    assert set(specials) <= {START, END}
    assert len(specials) == 5  # user and model turns (start + end), then the open model turn
    plain = "".join(s.text for s in segments if not s.special)
    assert plain.count(content) >= 2


def test_plans_by_tool_choice_and_output_schema() -> None:
    assert plan((), "auto", None).mode == "text"
    assert plan((CALC,), "none", None).mode == "text"
    assert plan((CALC,), "none", OUT).mode == "json"
    forced = plan((CALC, CLOCK), "clock", None)
    assert forced.mode == "tool" and forced.tools == ("clock",)
    assert plan((CALC, CLOCK), "required", None).tools == ("calculator", "clock")
    assert plan((CALC,), "auto", OUT).mode == "auto_json"
    assert plan((CALC,), "auto", None).mode == "auto_text"
    with pytest.raises(ValueError, match="names no offered tool"):
        plan((CALC,), "nope", None)


def test_tool_call_schema_accepts_calls_and_rejects_others() -> None:
    schema = tool_call_schema((CALC, CLOCK), OUT)
    jsonschema.validate({"name": "calculator", "arguments": {"expression": "1"}}, schema)
    jsonschema.validate({"name": "clock", "arguments": {}}, schema)
    jsonschema.validate({"answer": 3}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"name": "calculator", "arguments": {}}, schema)


def test_defs_are_hoisted_and_renamed_on_collision() -> None:
    a = ToolSchema("a", "", {"$defs": {"P": {"type": "integer"}}, "type": "object",
                             "properties": {"x": {"$ref": "#/$defs/P"}}, "required": ["x"]}, False)
    b = ToolSchema("b", "", {"$defs": {"P": {"type": "string"}}, "type": "object",
                             "properties": {"y": {"$ref": "#/$defs/P"}}, "required": ["y"]}, False)
    schema = tool_call_schema((a, b))
    assert schema["$defs"] == {"P": {"type": "integer"}, "b__P": {"type": "string"}}
    jsonschema.validate({"name": "a", "arguments": {"x": 1}}, schema)
    jsonschema.validate({"name": "b", "arguments": {"y": "s"}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"name": "b", "arguments": {"y": 1}}, schema)
    assert "root ::=" in (to_gbnf(plan((a, b), "required", None)) or "")


def test_auto_text_grammar_allows_a_call_or_free_text() -> None:
    gbnf = to_gbnf(plan((CALC,), "auto", None))
    assert gbnf is not None
    assert "root ::= tool-call | free-text" in gbnf
    assert "tool-call ::=" in gbnf
    assert to_gbnf(plan((CALC,), "none", None)) is None


@given(st.text())
def test_read_tool_call_never_raises(text: str) -> None:
    assert read_tool_call(text, ("calculator",)) is None or text.lstrip().startswith("{")


@given(st.sampled_from(["calculator", "clock"]), st.dictionaries(st.text(), st.integers() | st.text()))
def test_read_tool_call_round_trips(name: str, arguments: dict[str, object]) -> None:
    assert read_tool_call(tool_call_json(name, arguments), ("calculator", "clock")) == (name, arguments)
    assert read_tool_call(tool_call_json(name, arguments), ("other",)) is None
    assert read_tool_call(json.dumps({"name": name, "arguments": arguments, "x": 1}), (name,)) is None
