"""Values (``seamkit.values``) and errors (``seamkit.errors``)."""

from __future__ import annotations

import dataclasses
import json
import pickle
from decimal import Decimal
from typing import Any

import pytest
from seamkit.errors import (
    AmbiguousComponent,
    ComponentNotFound,
    ConfigError,
    ConfigIssue,
    Failure,
    FailureClass,
    OutputValidationError,
    ProviderError,
    SeamkitError,
    ToolArgumentError,
    UnknownToolError,
)
from seamkit.values import (
    ChatRequest,
    FrozenDict,
    FrozenList,
    ImageBlock,
    LLMResult,
    Message,
    TextBlock,
    ToolCall,
    ToolRequest,
    ToolResult,
    ToolSchema,
    Usage,
)

# --- hash on identity fields, compare on everything ----------------------------------------


def test_tool_calls_with_same_id_and_different_arguments() -> None:
    a = ToolCall("c1", "add", {"a": 1})
    b = ToolCall("c1", "add", {"a": 2})
    assert a != b
    assert hash(a) == hash(b)
    assert ToolCall("c1", "add", {"a": 1}) == a


def test_a_set_of_messages_carrying_tool_calls() -> None:
    m1 = Message("assistant", (TextBlock("hi"), ToolCall("c1", "add", {"xs": [1, 2], "o": {"k": "v"}})))
    m1_again = Message("assistant", [TextBlock("hi"), ToolCall("c1", "add", {"xs": [1, 2], "o": {"k": "v"}})])
    m2 = Message("assistant", (ToolCall("c1", "add", {"xs": [3]}),))
    m3 = Message("tool", (ToolResult("c1", "add", "3"),))
    s = {m1, m1_again, m2, m3}
    assert len(s) == 3
    assert m1 in s and m2 in s and m3 in s
    # dict keys too
    assert {m1: 1}[m1_again] == 1


def test_tool_results_hash_on_call_id_and_compare_on_everything() -> None:
    a = ToolResult("c1", "add", "3")
    b = ToolResult("c1", "add", "oops", is_error=True)
    assert a != b and hash(a) == hash(b)


def test_tool_schema_hashes_on_name() -> None:
    a = ToolSchema("t", "one", {"type": "object"}, False)
    b = ToolSchema("t", "two", {"type": "object"}, True)
    assert a != b and hash(a) == hash(b)
    assert len({a, b}) == 2


def test_chat_requests_are_hashable_and_compare_on_every_field() -> None:
    msgs = (Message.user("hi"),)
    a = ChatRequest(msgs, temperature=0.1)
    b = ChatRequest(msgs, temperature=0.2)
    assert a != b and hash(a) == hash(b)
    assert a.replace(temperature=0.2) == b


# --- freezing copies the caller's data ------------------------------------------------------


def test_tool_call_arguments_are_a_frozen_copy() -> None:
    args: dict[str, Any] = {"xs": [1, 2], "o": {"k": "v"}}
    call = ToolCall("c1", "t", args)
    args["xs"].append(3)
    args["o"]["k"] = "changed"
    args["new"] = 1
    assert call.arguments == {"xs": [1, 2], "o": {"k": "v"}}
    assert type(call.arguments) is FrozenDict and type(call.arguments["xs"]) is FrozenList
    with pytest.raises(TypeError):
        call.arguments["xs"].append(4)  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.name = "other"  # type: ignore[misc]


def test_tool_schema_parameters_are_a_frozen_copy() -> None:
    params: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    schema = ToolSchema("t", "d", params, False)
    params["properties"]["a"]["type"] = "string"
    params["required"].append("b")
    assert schema.parameters == {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    with pytest.raises(TypeError):
        schema.parameters["properties"]["a"]["type"] = "x"


def test_chat_request_output_schema_is_a_frozen_copy() -> None:
    out: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "number"}}}
    req = ChatRequest([Message.user("q")], output_schema=out, extra={"top_k": [1]}, metadata={"m": 1})
    out["properties"]["n"]["type"] = "string"
    assert req.output_schema == {"type": "object", "properties": {"n": {"type": "number"}}}
    assert type(req.output_schema) is FrozenDict
    assert type(req.messages) is tuple and type(req.extra["top_k"]) is FrozenList
    with pytest.raises(TypeError):
        req.output_schema["type"] = "array"  # type: ignore[index]


def test_mapping_fields_refuse_non_mappings() -> None:
    with pytest.raises(TypeError, match="expected a mapping"):
        ToolCall("c", "t", [1, 2])  # type: ignore[arg-type]


def test_values_survive_json_and_pickle() -> None:
    call = ToolCall("c1", "t", {"xs": [1, {"y": None}]})
    assert json.loads(json.dumps(dataclasses.asdict(call))) == {
        "id": "c1", "name": "t", "arguments": {"xs": [1, {"y": None}]}, "type": "tool_call", "arguments_error": None,
    }
    msg = Message("assistant", (call,))
    back = pickle.loads(pickle.dumps(msg))
    assert back == msg and type(back.content[0].arguments) is FrozenDict  # type: ignore[union-attr]


# --- Usage ----------------------------------------------------------------------------------


def test_usage_addition_sums_tokens_and_prices() -> None:
    a = Usage(10, 5, 2, 1, 3, 1, Decimal("0.001"), "reported")
    b = Usage(20, 7, 0, 4, 0, 1, Decimal("0.002"), "reported")
    s = a + b
    assert (s.input_tokens, s.output_tokens, s.cache_read_tokens, s.cache_write_tokens, s.reasoning_tokens,
            s.requests) == (30, 12, 2, 5, 3, 2)
    assert s.cost == Decimal("0.003") and s.cost_source == "reported"
    assert s.total_tokens == 42


@pytest.mark.parametrize("unknown_first", [True, False])
def test_usage_cost_is_unknown_when_any_part_is_unknown(unknown_first: bool) -> None:
    priced = Usage(10, 5, requests=1, cost=Decimal("0.5"), cost_source="estimated")
    unpriced = Usage(3, 4, requests=1)
    s = unpriced + priced if unknown_first else priced + unpriced
    assert s.cost is None
    assert s.cost_source == "unpriced"
    assert s.input_tokens == 13 and s.requests == 2


def test_usage_sum_of_many_with_one_unknown_stays_unknown() -> None:
    parts = [Usage(1, 1, requests=1, cost=Decimal("0.1"), cost_source="reported") for _ in range(5)]
    parts.insert(2, Usage(1, 1, requests=1))
    total = Usage()
    for p in parts:
        total = total + p
    assert total.cost is None and total.cost != 0
    assert total.requests == 6


def test_usage_cost_sources_combine() -> None:
    local = Usage(1, 1, requests=1, cost=Decimal(0), cost_source="local")
    reported = Usage(1, 1, requests=1, cost=Decimal("0.2"), cost_source="reported")
    estimated = Usage(1, 1, requests=1, cost=Decimal("0.1"), cost_source="estimated")
    assert (local + local).cost_source == "local"
    assert (local + local).cost == Decimal(0)
    assert (local + reported).cost_source == "reported"
    assert (reported + estimated).cost_source == "estimated"
    assert (local + estimated).cost == Decimal("0.1")


def test_a_cache_hit_adds_nothing_and_keeps_the_other_source() -> None:
    cache = Usage(100, 20, requests=0, cost=Decimal(0), cost_source="cache")
    local = Usage(1, 1, requests=1, cost=Decimal(0), cost_source="local")
    reported = Usage(1, 1, requests=1, cost=Decimal("0.2"), cost_source="reported")
    estimated = Usage(1, 1, requests=1, cost=Decimal("0.1"), cost_source="estimated")
    assert (cache + cache).cost_source == "cache" and (cache + cache).cost == 0
    for other in (local, reported, estimated):
        for total in (cache + other, other + cache):
            assert total.cost_source == other.cost_source and total.cost == other.cost
            assert total.input_tokens == 101 and total.requests == 1


def test_empty_usage_is_the_identity() -> None:
    u = Usage(1, 2, requests=1, cost=Decimal("0.3"), cost_source="reported")
    assert Usage() + u == u
    assert u + Usage() == u


def test_usage_cost_source_invariants() -> None:
    with pytest.raises(ValueError, match="needs a cost"):
        Usage(cost=None, cost_source="reported")
    with pytest.raises(ValueError, match="unpriced"):
        Usage(cost=Decimal("0.1"), cost_source="unpriced")


def test_usage_added_to_something_else_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        Usage() + 1  # type: ignore[operator]


# --- other values ---------------------------------------------------------------------------


def test_message_helpers() -> None:
    call = ToolCall("c", "t")
    m = Message("assistant", (TextBlock("a"), call, TextBlock("b")))
    assert m.text == "ab"
    assert m.tool_calls == (call,)
    assert Message.user("u").role == "user" and Message.system("s").text == "s"
    assert Message.assistant("x").text == "x"
    with pytest.raises(ValueError, match="unknown role"):
        Message("robot", ())  # type: ignore[arg-type]


def test_image_needs_exactly_one_source() -> None:
    ImageBlock(url="https://example.com/a.png")
    ImageBlock(data=b"\x89PNG")
    with pytest.raises(ValueError):
        ImageBlock()
    with pytest.raises(ValueError):
        ImageBlock(url="u", data=b"d")


def test_llm_result_and_tool_request() -> None:
    call = ToolCall("c", "t", {"a": 1})
    r = LLMResult(Message("assistant", (TextBlock("t"), call)))
    assert r.text == "t" and r.tool_calls == (call,)
    assert hash(ToolRequest(call)) == hash(ToolRequest(ToolCall("c", "t", {"a": 2})))


# --- errors ---------------------------------------------------------------------------------


def test_every_error_is_a_seamkit_error() -> None:
    for err in (
        ProviderError("x"), ToolArgumentError("t", ["a: bad"]), UnknownToolError("t", ["u"]),
        OutputValidationError(["p"], "raw"), ConfigError([ConfigIssue("m")]),
        ComponentNotFound("provider", "x", []), AmbiguousComponent("provider", "x", ["a", "b"]),
    ):
        assert isinstance(err, SeamkitError)


def test_failure_class_transient() -> None:
    assert {fc for fc in FailureClass if fc.transient} == {
        FailureClass.RATE_LIMITED, FailureClass.OVERLOADED, FailureClass.SERVER_ERROR, FailureClass.TIMEOUT,
    }
    assert not FailureClass.UNKNOWN.transient


def test_provider_error_str_and_failure_of() -> None:
    err = ProviderError("slow down", FailureClass.RATE_LIMITED, provider="p", status=429, retry_after=2.0)
    assert str(err) == "p: rate_limited: slow down"
    f = Failure.of(err)
    assert (f.type, f.failure_class) == ("ProviderError", FailureClass.RATE_LIMITED)
    assert "slow down" in f.message
    assert Failure.of(ValueError("v")).failure_class is None


def test_config_error_lists_every_issue_with_location() -> None:
    err = ConfigError([
        ConfigIssue("bad value", "agent.max_steps", "a.yaml", 3, 5),
        ConfigIssue("unknown key", "agent.x"),
    ])
    text = str(err)
    assert "2 problems" in text
    assert "a.yaml:3:5: agent.max_steps: bad value" in text
    assert "agent.x: unknown key" in text


def test_unknown_tool_error_names_available_tools() -> None:
    assert "available tools: a, b" in str(UnknownToolError("c", ["b", "a"]))
    assert "none" in str(UnknownToolError("c", []))
