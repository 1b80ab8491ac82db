"""The structured-output schema compiler (Claude structured outputs, "JSON Schema limitations")."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from seamkit.errors import CapabilityError
from seamkit.values import freeze
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
    with pytest.raises(CapabilityError) as info:
        to_native({"type": "object", **schema}, provider="anthropic", model="claude-sonnet-4-5")
    assert info.value.feature == feature
    assert info.value.provider == "anthropic" and info.value.model == "claude-sonnet-4-5"
    assert feature.split(": ")[0] in str(info.value)


def test_recursive_schemas_are_refused() -> None:
    schema = {"type": "object", "properties": {"node": {"$ref": "#/$defs/node"}},
              "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}}}
    with pytest.raises(CapabilityError, match="recursive") as info:
        to_native(schema)
    assert info.value.feature == "$.$defs.node.properties.next: $ref"


@pytest.mark.parametrize(
    "root", [{"type": "array", "items": {"type": "string"}}, {"properties": {}}, {"type": "string"}]
)
def test_the_root_must_be_an_object(root: dict[str, Any]) -> None:
    for compile_ in (to_native, to_tool_schema):
        with pytest.raises(CapabilityError) as info:
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
    with pytest.raises(CapabilityError) as info:
        to_native(schema)
    assert info.value.feature == f"{path}: {keyword}"
