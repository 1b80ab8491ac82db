"""The cache key: stable across equal requests (whatever the order dicts were built in), different
when any keyed field differs, blind to metadata."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seamkit.values import ChatRequest, ImageBlock, Message, ReasoningBlock, TextBlock, ToolCall, ToolResult, ToolSchema
from seamkit_memoize.key import UnkeyableRequest, request_key

json_scalars = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=8)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)
dicts = st.dictionaries(st.text(max_size=6), json_values, max_size=4)


def _reordered(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: _reordered(d[k]) for k in reversed(list(d))}
    if isinstance(d, list):
        return [_reordered(x) for x in d]
    return d


def _request(args: dict[str, Any], extra: dict[str, Any], schema: dict[str, Any]) -> ChatRequest:
    return ChatRequest(
        messages=(Message.system("be brief"), Message.user("hi"),
                  Message("assistant", (ReasoningBlock("r", "s"), ToolCall("c1", "calc", args))),
                  Message("tool", (ToolResult("c1", "calc", "4"),)),
                  Message("user", (TextBlock("look"), ImageBlock(data=b"\x89PNG..")))),
        tools=(ToolSchema("calc", "adds", schema, False),),
        extra=extra,
        output_schema=schema,
    )


@settings(max_examples=60, deadline=None)
@given(args=dicts, extra=dicts, schema=dicts)
def test_equal_requests_have_one_key_whatever_the_dict_order(args: Any, extra: Any, schema: Any) -> None:
    a = _request(args, extra, schema)
    b = _request(_reordered(args), _reordered(extra), _reordered(schema))
    assert a == b
    assert request_key("p", "m", a) == request_key("p", "m", b)
    assert len(request_key("p", "m", a)) == 64
    # metadata is never part of the key
    assert request_key("p", "m", a.replace(metadata={"run": "x"})) == request_key("p", "m", a)


BASE = _request({"x": 1}, {"k": "v"}, {"type": "object"})
CHANGES: dict[str, Any] = {
    "messages": (*BASE.messages[:-1], Message.user("other")),
    "image bytes": (*BASE.messages[:-1], Message("user", (TextBlock("look"), ImageBlock(data=b"\x89PNG.!")))),
    "tool call args": (*BASE.messages[:2], Message("assistant", (ToolCall("c1", "calc", {"x": 2}),)),
                       *BASE.messages[3:]),
    "reasoning signature": (*BASE.messages[:2], Message("assistant", (ReasoningBlock("r", "t"),
                                                                      ToolCall("c1", "calc", {"x": 1}))),
                            *BASE.messages[3:]),
    "tools": (ToolSchema("calc", "adds two", {"type": "object"}, False),),
    "tool_choice": "required",
    "output_schema": {"type": "array"},
    "temperature": 0.5,
    "max_tokens": 10,
    "seed": 7,
    "stop": ("END",),
    "extra": {"k": "w"},
}


@pytest.mark.parametrize("field", sorted(CHANGES))
def test_any_keyed_field_changes_the_key(field: str) -> None:
    name = "messages" if field in ("image bytes", "tool call args", "reasoning signature") else field
    changed = BASE.replace(**{name: CHANGES[field]})
    assert request_key("p", "m", changed) != request_key("p", "m", BASE)


@given(x=st.sampled_from([None, 0, 1, 0.5]))
def test_provider_model_and_settings_are_keyed(x: Any) -> None:
    k = request_key("p", "m", BASE)
    assert request_key("q", "m", BASE) != k and request_key("p", "n", BASE) != k
    assert (request_key("p", "m", BASE.replace(temperature=x)) == k) == (x is None)


def test_an_object_in_extra_is_unkeyable() -> None:
    with pytest.raises(UnkeyableRequest):
        request_key("p", "m", BASE.replace(extra={"o": object()}))
