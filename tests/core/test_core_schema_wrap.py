"""``seamkit._schema_wrap``: a root that is not an object schema, sent as an object with one property,
and the reply unwrapped from the stream so that the canonical schema validates it."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from seamkit._accumulate import collect_result
from seamkit._schema_wrap import canonical_path, normalize_root, root_construct, unwrap_deltas, unwrap_json, wrap_root
from seamkit.values import Delta, ToolCallDelta, freeze

OBJ = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


@pytest.mark.parametrize(
    ("root", "construct", "valid"),
    [
        ({"anyOf": [OBJ, {"type": "string"}]}, "anyOf", [{"a": 1}, "s"]),
        ({"oneOf": [OBJ, {"type": "null"}], "discriminator": {"propertyName": "a"}}, "oneOf", [{"a": 1}, None]),
        ({"allOf": [OBJ, {"required": ["a"]}]}, "allOf", [{"a": 2}]),
        ({"type": "array", "items": {"type": "integer"}}, "type 'array'", [[1, 2], []]),
        ({"type": "string", "minLength": 1}, "type 'string'", ["x"]),
        ({"enum": ["a", "b"]}, "a schema without a type", ["a"]),
        ({"type": "object", "properties": {"x": {"type": "string"}}, "anyOf": [{"required": ["x"]}]}, "anyOf",
         [{"x": "1"}]),
    ],
)
def test_a_root_that_is_not_a_plain_object_is_wrapped(root: dict[str, Any], construct: str, valid: list[Any]) -> None:
    wrap = wrap_root(freeze(root))
    assert wrap is not None and wrap.construct == construct and wrap.key == "value"
    assert wrap.schema["type"] == "object" and wrap.schema["required"] == ["value"]
    assert wrap.schema["additionalProperties"] is False
    assert not {"anyOf", "oneOf", "allOf", "$ref"} & set(wrap.schema)
    v = Draft202012Validator(wrap.schema)
    for value in valid:
        assert Draft202012Validator(root).is_valid(value)
        assert v.is_valid({"value": value})
    assert wrap.warning("structured output", "X").startswith(f"structured output: {construct} at the root ($)")


def test_plain_object_roots_and_lossless_rewrites_are_not_wrapped() -> None:
    assert wrap_root(OBJ) is None
    defs = {"$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}}
    by_ref = {"$ref": "#/$defs/Node", "description": "a node", **defs}
    assert wrap_root(by_ref) is None
    assert normalize_root(by_ref) == {"description": "a node", "type": "object",
                                      "properties": {"next": {"$ref": "#/$defs/Node"}}, **defs}
    assert wrap_root({"allOf": [OBJ], "title": "T"}) is None
    # a tool's arguments are an object by protocol: a root without a type is one
    assert normalize_root({}, tool=True) == {"type": "object"} and wrap_root({}, tool=True) is None
    assert root_construct(normalize_root({})) == "a schema without a type"


def test_defs_are_lifted_and_references_into_the_root_are_moved() -> None:
    tree = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"$ref": "#"}}, {"$ref": "#/$defs/Leaf"}],
            "$defs": {"Leaf": {"type": "object", "properties": {"up": {"$ref": "#"}, "$ref": {"const": "#"}}}}}
    wrap = wrap_root(tree)
    assert wrap is not None
    inner = wrap.schema["properties"]["value"]
    assert inner["anyOf"][1]["items"] == {"$ref": "#/properties/value"}
    assert inner["anyOf"][2] == {"$ref": "#/$defs/Leaf"}
    leaf = wrap.schema["$defs"]["Leaf"]["properties"]
    assert leaf["up"] == {"$ref": "#/properties/value"} and leaf["$ref"] == {"const": "#"}  # a property named $ref
    v = Draft202012Validator(wrap.schema)
    for value in ["x", ["a", ["b", []]], {"up": ["c"], "$ref": "#"}]:
        assert Draft202012Validator(tree).is_valid(value)
        assert v.is_valid({"value": value}), value


def test_the_key_is_a_name_the_schema_does_not_use() -> None:
    schema = {"anyOf": [{"type": "object", "properties": {"value": {"type": "string"}, "answer": {"type": "string"}}},
                        {"type": "null"}]}
    wrap = wrap_root(schema)
    assert wrap is not None and wrap.key == "result"
    assert canonical_path("$.properties.result.anyOf[0]", "result") == "$.anyOf[0]"
    assert canonical_path("$.properties.result", "result") == "$"
    assert canonical_path("$.properties.results", "result") == "$.properties.results"
    assert canonical_path("$.$defs.A", "result") == "$.$defs.A"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"value": {"a": 1}}', '{"a": 1}'),
        ('```json\n{"value": [1, "\u00e9"]}\n```', '[1, "\u00e9"]'),
        ('{"value": null}', "null"),
        ('{"a": 1}', None),  # the canonical answer itself: passed on unchanged
        ('{"value": 1, "other": 2}', None),
        ('{"value": NaN}', None),
        ("not json", None),
    ],
)
def test_unwrap_json(text: str, expected: str | None) -> None:
    assert unwrap_json(text, "value") == expected


# --- the stream ----------------------------------------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids, max_size=3),
    max_leaves=10,
)


def _pieces(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points) if text[a:b]]


async def _stream(deltas: list[Delta]) -> AsyncIterator[Delta]:
    for d in deltas:
        yield d


@settings(max_examples=150, deadline=None)
@given(answer=_json, args=st.dictionaries(st.text(max_size=4), _json, max_size=3),
       plain=st.dictionaries(st.text(max_size=4), _json, max_size=3),
       cuts=st.lists(st.integers(0, 10**6), max_size=8), shared_index=st.booleans())
async def test_unwrapping_is_exact_however_the_stream_is_cut(answer: Any, args: dict[str, Any],
                                                             plain: dict[str, Any], cuts: list[int],
                                                             shared_index: bool) -> None:
    text = json.dumps({"value": answer})
    wrapped_args = json.dumps({"value": args})
    plain_args = json.dumps(plain)
    deltas = [Delta(text=p) for p in _pieces(text, cuts)]
    second = 0 if shared_index else 1  # some servers send parallel calls all on index 0
    deltas.append(Delta(tool_call=ToolCallDelta(0, "call_1", "wrapped")))
    deltas += [Delta(tool_call=ToolCallDelta(0, arguments=p)) for p in _pieces(wrapped_args, cuts)]
    deltas.append(Delta(tool_call=ToolCallDelta(second, "call_2", "plain")))
    deltas += [Delta(tool_call=ToolCallDelta(second, arguments=p)) for p in _pieces(plain_args, cuts)]
    deltas.append(Delta(finish_reason="tool_calls"))
    out = [d async for d in unwrap_deltas(_stream(deltas), output_key="value", tool_keys={"wrapped": "value"})]
    assert out[-1].finish_reason == "tool_calls"
    result = await collect_result(_stream(out))
    assert json.loads(result.text) == answer
    calls = {c.name: c for c in result.tool_calls}
    assert calls["wrapped"].id == "call_1" and json.loads(json.dumps(calls["wrapped"].arguments)) == args
    assert calls["plain"].id == "call_2" and json.loads(json.dumps(calls["plain"].arguments)) == plain


async def test_what_is_not_wrapped_passes_unchanged_and_the_inner_stream_is_closed() -> None:
    closed: list[bool] = []

    async def inner() -> AsyncIterator[Delta]:
        try:
            yield Delta(text='{"a": ')
            yield Delta(text="1}", usage=None)
            yield Delta(tool_call=ToolCallDelta(0, "c", "other", '{"x": 1}'))
            yield Delta(finish_reason="stop")
            yield Delta(warning="after")
        finally:
            closed.append(True)

    out = [d async for d in unwrap_deltas(inner(), output_key="value", tool_keys={"t": "value"})]
    assert out == [Delta(tool_call=ToolCallDelta(0, "c", "other", '{"x": 1}')), Delta(text='{"a": 1}'),
                   Delta(finish_reason="stop"), Delta(warning="after")]
    assert closed == [True]
    gen = unwrap_deltas(inner(), output_key="value")
    await gen.__anext__()
    await gen.aclose()
    assert closed == [True, True]
