"""The structured-output schema compiler (Claude structured outputs, "JSON Schema limitations")."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from seamkit.errors import UnsupportedFeature
from seamkit.values import ChatRequest, Message, ToolSchema, freeze
from seamkit_anthropic.capabilities import capabilities_for
from seamkit_anthropic.config import AnthropicConfig
from seamkit_anthropic.request import build_body
from seamkit_anthropic.schema import to_native, to_tool_schema


def test_supported_constructs_are_kept_and_objects_closed() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Answer",
        "type": "object",
        "description": "the answer",
        "properties": {
            "when": {"type": "string", "format": "date-time"},
            "kind": {"enum": ["a", "b", None]},
            "fixed": {"const": 3},
            "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}, "minItems": 1},
            "pt": {"$ref": "#/$defs/point"},
            "either": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "both": {"allOf": [{"type": "object", "properties": {"x": {"type": "number"}}}]},
        },
        "required": ["when", "kind"],
        "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}, "examples": [{"x": 1}]}},
    }
    out = to_native(freeze(schema))
    assert "$schema" not in out and "title" not in out
    assert out["additionalProperties"] is False
    assert out["$defs"]["point"] == {"type": "object", "properties": {"x": {"type": "number"}},
                                     "additionalProperties": False}
    assert out["properties"]["both"]["allOf"][0]["additionalProperties"] is False
    assert out["properties"]["tags"] == schema["properties"]["tags"]
    assert out["properties"]["either"] == schema["properties"]["either"]
    assert out["required"] == ["when", "kind"]
    Draft202012Validator.check_schema(out)


@pytest.mark.parametrize(
    ("schema", "feature"),
    [
        ({"properties": {"s": {"type": "string", "minLength": 1}}}, "$.properties.s: minLength"),
        ({"properties": {"s": {"type": "string", "maxLength": 9}}}, "$.properties.s: maxLength"),
        ({"properties": {"n": {"type": "number", "maximum": 9}}}, "$.properties.n: maximum"),
        ({"properties": {"n": {"type": "number", "exclusiveMinimum": 0}}}, "$.properties.n: exclusiveMinimum"),
        ({"properties": {"n": {"type": "integer", "multipleOf": 2}}}, "$.properties.n: multipleOf"),
        ({"properties": {"a": {"type": "array", "maxItems": 3}}}, "$.properties.a: maxItems"),
        ({"properties": {"a": {"type": "array", "uniqueItems": True}}}, "$.properties.a: uniqueItems"),
        ({"properties": {"a": {"type": "array", "minItems": 2}}}, "$.properties.a: minItems"),
        ({"properties": {"a": {"type": "array", "prefixItems": [{"type": "string"}]}}}, "$.properties.a: prefixItems"),
        ({"properties": {"a": {"type": "array", "items": [{"type": "string"}]}}}, "$.properties.a: items"),
        ({"properties": {"u": {"oneOf": [{"type": "string"}]}}}, "$.properties.u: oneOf"),
        ({"properties": {"u": {"not": {"type": "string"}}}}, "$.properties.u: not"),
        ({"if": {"type": "object"}, "then": {}}, "$: if"),
        ({"patternProperties": {"^x": {"type": "string"}}}, "$: patternProperties"),
        ({"dependentRequired": {"a": ["b"]}}, "$: dependentRequired"),
        ({"additionalProperties": True}, "$: additionalProperties"),
        ({"additionalProperties": {"type": "string"}}, "$: additionalProperties"),
        ({"properties": {"e": {"enum": [{"a": 1}]}}}, "$.properties.e: enum"),
        ({"properties": {"c": {"const": [1]}}}, "$.properties.c: const"),
        ({"properties": {"f": {"type": "string", "format": "ipv5"}}}, "$.properties.f: format"),
        ({"properties": {"r": {"$ref": "https://example.com/s.json"}}}, "$.properties.r: $ref"),
        ({"properties": {"r": {"$ref": "#/$defs/missing"}}}, "$.properties.r: $ref"),
        ({"properties": {"r": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$defs": {"a": {"type": "string"}}},
         "$.properties.r: allOf"),
        ({"properties": {"b": True}}, "$.properties.b: boolean schema true"),
        ({"properties": {"t": {"type": "decimal"}}}, "$.properties.t: type"),
    ],
)
def test_unsupported_constructs_are_named_with_their_path(schema: dict[str, Any], feature: str) -> None:
    with pytest.raises(UnsupportedFeature) as info:
        to_native({"type": "object", **schema}, provider="anthropic", model="claude-sonnet-4-5")
    assert info.value.feature == feature
    assert info.value.provider == "anthropic" and info.value.model == "claude-sonnet-4-5"
    assert feature.split(": ")[0] in str(info.value)


def test_recursive_schemas_are_refused() -> None:
    schema = {"type": "object", "properties": {"node": {"$ref": "#/$defs/node"}},
              "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}}}
    with pytest.raises(UnsupportedFeature, match="recursive") as info:
        to_native(schema)
    assert info.value.feature == "$.$defs.node.properties.next: $ref"


@pytest.mark.parametrize(
    "root", [{"type": "array", "items": {"type": "string"}}, {"properties": {}}, {"type": "string"}]
)
def test_the_root_must_be_an_object(root: dict[str, Any]) -> None:
    for compile_ in (to_native, to_tool_schema):
        with pytest.raises(UnsupportedFeature) as info:
            compile_(root)
        assert info.value.feature == "$: root type"


def test_tool_schema_keeps_what_a_tool_input_schema_accepts() -> None:
    schema = {"$schema": "x", "type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}
    assert to_tool_schema(freeze(schema)) == {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}


# --- properties ------------------------------------------------------------------------------

_names = st.text(alphabet="abcdefghij_", min_size=1, max_size=6)
_json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=5))


@st.composite
def _leaf(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    kind = draw(st.sampled_from(["string", "integer", "number", "boolean", "null", "enum", "const", "date"]))
    if kind == "string":
        return {"type": "string", "description": draw(st.text(max_size=5))}, draw(st.text(max_size=8))
    if kind == "integer":
        return {"type": "integer"}, draw(st.integers())
    if kind == "number":
        return {"type": "number"}, draw(st.floats(allow_nan=False, allow_infinity=False))
    if kind == "boolean":
        return {"type": "boolean"}, draw(st.booleans())
    if kind == "null":
        return {"type": "null"}, None
    if kind == "enum":
        values = draw(st.lists(_json_scalars, min_size=1, max_size=4, unique_by=lambda v: (type(v), v)))
        return {"enum": values}, draw(st.sampled_from(values))
    if kind == "const":
        value = draw(_json_scalars)
        return {"const": value}, value
    return {"type": "string", "format": "date"}, "2026-11-30"


def _extend(children: st.SearchStrategy[tuple[dict[str, Any], Any]]) -> st.SearchStrategy[tuple[dict[str, Any], Any]]:
    @st.composite
    def obj(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
        props = draw(st.dictionaries(_names, children, max_size=4))
        required = [k for k in props if draw(st.booleans())]
        instance = {k: v[1] for k, v in props.items() if k in required or draw(st.booleans())}
        return {"type": "object", "properties": {k: v[0] for k, v in props.items()}, "required": required}, instance

    @st.composite
    def arr(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
        item_schema, item = draw(children)
        n = draw(st.integers(0, 3))
        min_items = draw(st.sampled_from([None, 0, 1]))
        if min_items == 1:
            n = max(n, 1)
        schema: dict[str, Any] = {"type": "array", "items": item_schema}
        if min_items is not None:
            schema["minItems"] = min_items
        return schema, [item] * n

    @st.composite
    def any_of(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
        (a, inst), (b, _) = draw(children), draw(children)
        return {"anyOf": [a, b]}, inst

    return st.one_of(obj(), arr(), any_of())


_pairs = st.recursive(_leaf(), _extend, max_leaves=12)


@st.composite
def _root(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    props = draw(st.dictionaries(_names, _pairs, min_size=1, max_size=4))
    schema = {"type": "object", "properties": {k: v[0] for k, v in props.items()}, "required": sorted(props)}
    return schema, {k: v[1] for k, v in props.items()}


@settings(max_examples=150, deadline=None)
@given(_root())
def test_compiled_schemas_accept_what_the_canonical_schema_accepts(pair: tuple[dict[str, Any], Any]) -> None:
    schema, instance = pair
    Draft202012Validator(schema).validate(instance)  # the generator's own invariant
    compiled = to_native(freeze(schema))
    Draft202012Validator.check_schema(compiled)
    Draft202012Validator(compiled).validate(instance)
    assert to_native(compiled) == compiled  # compiling is idempotent


_UNSUPPORTED = ["minimum", "maxLength", "oneOf", "not", "patternProperties", "uniqueItems", "if", "contains"]


@settings(max_examples=100, deadline=None)
@given(_root(), st.sampled_from(_UNSUPPORTED), st.data())
def test_an_unsupported_keyword_anywhere_is_refused_with_its_path(
    pair: tuple[dict[str, Any], Any], keyword: str, data: st.DataObject
) -> None:
    schema, _ = pair
    spots: list[tuple[str, dict[str, Any]]] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            spots.append((path, node))
            for k, sub in node.get("properties", {}).items():
                walk(sub, f"{path}.properties.{k}" if k.isidentifier() else f"{path}.properties[{k!r}]")
            if "items" in node:
                walk(node["items"], f"{path}.items")
            for i, sub in enumerate(node.get("anyOf", [])):
                walk(sub, f"{path}.anyOf[{i}]")

    walk(schema, "$")
    path, node = data.draw(st.sampled_from(spots))
    node[keyword] = {} if keyword in ("not", "if", "contains", "patternProperties") else 1
    with pytest.raises(UnsupportedFeature) as info:
        to_native(schema)
    assert info.value.feature == f"{path}: {keyword}"


# --- degrade, never refuse (issue 10, item 6) -------------------------------------------------------


def _extend_hostile(children: st.SearchStrategy[tuple[Any, Any]]) -> st.SearchStrategy[tuple[Any, Any]]:
    """Constructs the native dialect cannot express, next to the ones it can."""

    @st.composite
    def hostile(draw: st.DrawFn) -> tuple[Any, Any]:
        kind = draw(st.sampled_from(["map", "typed_map", "bounded", "oneof", "not", "pattern", "untyped"]))
        if kind == "map":
            return {"type": "object", "additionalProperties": True}, draw(st.dictionaries(_names, _json_scalars,
                                                                                           max_size=2))
        if kind == "typed_map":
            sub, v = draw(children)
            return {"type": "object", "additionalProperties": sub}, {k: v for k in draw(st.lists(_names, max_size=2))}
        if kind == "bounded":
            n = draw(st.integers(0, 100))
            return {"type": "integer", "minimum": 0, "maximum": 100, "multipleOf": 1}, n
        if kind == "oneof":
            a, va = draw(children)
            return {"oneOf": [a, {"not": a}]}, va  # exactly one branch holds for any value
        if kind == "not":
            return {"type": "string", "not": {"const": "forbidden"}}, draw(st.text("abc", max_size=3))
        if kind == "pattern":
            return {"type": "object", "patternProperties": {"^p": {"type": "integer"}}}, {"p1": 1}
        return {}, draw(_json_scalars)

    return st.one_of(_extend(children), hostile())


_hostile_pairs = st.recursive(_leaf(), _extend_hostile, max_leaves=10)


@st.composite
def _any_root(draw: st.DrawFn) -> tuple[Any, Any]:
    """An object root (``_root``-like but hostile inside), a union root, a list or a scalar root."""
    kind = draw(st.sampled_from(["object", "union", "array", "scalar", "recursive"]))
    if kind == "object":
        props = draw(st.dictionaries(_names, _hostile_pairs, min_size=1, max_size=3))
        return ({"type": "object", "properties": {k: v[0] for k, v in props.items()}, "required": sorted(props)},
                {k: v[1] for k, v in props.items()})
    if kind == "union":
        (a, va), (b, vb) = draw(_hostile_pairs), draw(_hostile_pairs)
        return {"anyOf": [a, b]}, draw(st.sampled_from([va, vb]))
    if kind == "array":
        sub, v = draw(_hostile_pairs)
        return {"type": "array", "items": sub}, [v]
    if kind == "recursive":
        node = {"type": "object", "properties": {"name": {"type": "string"}, "kids": {
            "type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["name"]}
        return {"$ref": "#/$defs/node", "$defs": {"node": node}}, {"name": "a", "kids": [{"name": "b"}]}
    return draw(_leaf())


def _closed(schema: Any) -> None:
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            assert schema.get("additionalProperties") is False
        for v in schema.values():
            _closed(v)
    elif isinstance(schema, list):
        for v in schema:
            _closed(v)


@settings(max_examples=150, deadline=None)
@given(pair=_any_root(), model=st.sampled_from(["claude-sonnet-4-5", "claude-opus-4-1"]), thinking=st.booleans(),
       with_tool=st.booleans())
def test_any_output_schema_is_sent_in_a_form_the_api_accepts(pair: tuple[Any, Any], model: str, thinking: bool,
                                                             with_tool: bool) -> None:
    """Compiled or degraded, never refused: native ``output_config.format`` in the native dialect, else
    the forced tool (an object root, no top-level combinator), else the schema in the system prompt;
    what the canonical schema accepts, wrapped where the root was, is accepted by what is sent."""
    schema, value = pair
    assert Draft202012Validator(schema).is_valid(value), "the generator made an invalid document"
    cfg = AnthropicConfig(model=model, api_key="sk-ant-x", max_tokens=4096,
                          thinking={"type": "enabled", "budget_tokens": 1024} if thinking else None)
    tools = (ToolSchema("t", "A tool.", {"anyOf": [schema, {"type": "object"}]}, False),) if with_tool else ()
    prepared = build_body(ChatRequest((Message.user("hi"),), tools=tools, output_schema=schema), cfg,
                          capabilities_for(model), model=model)
    body = prepared.body
    sent_value = value if prepared.output_wrap is None else {prepared.output_wrap: value}
    for tool in body.get("tools", ()):
        root = tool["input_schema"]
        assert root["type"] == "object" and not {"anyOf", "oneOf", "allOf"} & set(root)
        Draft202012Validator.check_schema(root)
    if "output_config" in body:
        sent = body["output_config"]["format"]["schema"]
        assert sent["type"] == "object" and to_native(sent) == sent  # the native dialect, objects closed
        _closed(sent)
    elif prepared.output_tool is not None:
        (sent,) = [t["input_schema"] for t in body["tools"] if t["name"] == prepared.output_tool]
    else:
        assert thinking  # forced tool use is impossible only with extended thinking
        assert json.dumps(schema, separators=(",", ":"), ensure_ascii=False) in body["system"][-1]["text"]
        sent, sent_value = schema, value
    assert not list(Draft202012Validator(sent).iter_errors(sent_value)), (sent, sent_value)
    assert set(prepared.tool_wraps) == ({"t"} if with_tool else set())  # a root anyOf: wrapped
    schema_warnings = [w for w in prepared.warnings if w.startswith("structured output")]
    assert len(schema_warnings) <= 1
