"""The strict-mode compiler (``seamkit_openai.schema``): examples, refusals, and a property test:
every document valid under the canonical schema, with its absent optional properties written as
``null``, is valid under the strict schema, and ``drop_optional_nulls`` gives the document back."""

from __future__ import annotations

import copy
import string
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from seamkit.errors import UnsupportedFeature
from seamkit.values import freeze
from seamkit_openai.schema import compile_strict, drop_optional_nulls, plan_schema, schema_name, to_strict


def obj(props: dict[str, Any], required: list[str] | None = None, **kw: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"type": "object", "properties": props, **kw}
    if required is not None:
        s["required"] = required
    return s


def test_optional_properties_become_required_and_nullable() -> None:
    s = obj({"a": {"type": "string"}, "b": {"type": "integer"}, "c": {"enum": ["x", "y"]},
             "d": {"type": ["string", "number"]}}, ["a"])
    assert to_strict(s) == {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "b": {"type": ["integer", "null"]},
            "c": {"type": ["string", "null"], "enum": ["x", "y", None]},
            "d": {"type": ["string", "number", "null"]},
        },
        "required": ["a", "b", "c", "d"],
        "additionalProperties": False,
    }


def test_defs_and_refs_stay_valid_nested_and_recursive() -> None:
    s = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}, "extra": {"$ref": "#/$defs/Node", "description": "d"}},
        "required": ["root"],
        "$defs": {"Node": obj({"name": {"type": "string"},
                               "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}, ["name"])},
    }
    out = to_strict(s)
    assert out["properties"]["root"] == {"$ref": "#/$defs/Node"}
    assert out["properties"]["extra"] == {"description": "d", "anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}
    node = out["$defs"]["Node"]
    assert node["required"] == ["name", "children"] and node["additionalProperties"] is False
    assert node["properties"]["children"]["type"] == ["array", "null"]
    Draft202012Validator.check_schema(out)
    v = Draft202012Validator(out)
    assert v.is_valid({"root": {"name": "a", "children": [{"name": "b", "children": None}]}, "extra": None})
    assert not v.is_valid({"root": {"name": "a"}, "extra": None})  # children now required


def test_const_oneof_allof_and_relaxed_keywords() -> None:
    s = obj({
        "kind": {"const": "circle"},
        "shape": {"oneOf": [obj({"r": {"type": "number"}}, ["r"]), obj({"w": {"type": "number"}}, ["w"])]},
        "tag": {"allOf": [{"$ref": "#/$defs/Tag"}], "description": "a tag"},
        "name": {"type": "string", "minLength": 1, "maxLength": 9, "format": "email", "pattern": "^a"},
        "when": {"type": "string", "format": "uri"},
        "items": {"type": "array", "items": {"type": "integer", "minimum": 0}, "uniqueItems": True, "maxItems": 3},
    }, ["kind", "shape", "tag", "name", "when", "items"], **{"$defs": {"Tag": {"type": "string"}}, "title": "Shape!"})
    res = compile_strict(s)
    p = res.schema["properties"]
    assert p["kind"] == {"type": "string", "enum": ["circle"]}
    assert list(p["shape"]) == ["anyOf"] and len(p["shape"]["anyOf"]) == 2
    assert p["tag"] == {"description": "a tag", "$ref": "#/$defs/Tag"}
    assert p["name"] == {"type": "string", "pattern": "^a", "format": "email"}
    assert p["when"] == {"type": "string"}
    assert p["items"] == {"type": "array", "items": {"type": "integer", "minimum": 0}, "maxItems": 3}
    assert res.schema["title"] == "Shape!"
    assert sorted(r.split(" dropped")[0] for r in res.relaxed) == [
        "$.properties.items: uniqueItems", "$.properties.name: maxLength", "$.properties.name: minLength",
        "$.properties.shape: oneOf", "$.properties.when: format 'uri'"]
    assert res.optional_made_nullable == 0
    assert schema_name(s) == "Shape"


@pytest.mark.parametrize(
    ("schema", "feature"),
    [
        (obj({"m": {"type": "object", "patternProperties": {"^x": {"type": "string"}}}}),
         "$.properties.m: patternProperties"),
        (obj({"a": {"type": "string"}}, **{"if": {}, "then": {}}), "$: if"),
        (obj({"a": {"type": "string"}}, dependentRequired={"a": ["b"]}), "$: dependentRequired"),
        ({"type": "array", "items": {"type": "string"}}, "$: a root that is not an object"),
        ({"anyOf": [obj({}), obj({})], "type": "object"}, "$: a root that is not an object"),
        (obj({"m": {"type": "object", "additionalProperties": {"type": "string"}}}),
         "$.properties.m: additionalProperties"),
        (obj({"a": {"type": "string"}}, additionalProperties=True), "$: additionalProperties"),
        (obj({"m": {"type": "object"}}), "$.properties.m: an object without properties"),
        (obj({"x": {}}), "$.properties.x: a schema without a type"),
        (obj({"x": True}), "$.properties.x: the schema true (any value)"),
        (obj({"l": {"type": "array"}}), "$.properties.l: array without items"),
        (obj({"r": {"$ref": "#/$defs/Missing"}}), "$.properties.r: $ref"),
        (obj({"r": {"$ref": "https://example.com/s.json"}}), "$.properties.r: $ref"),
        (obj({"r": {"$ref": "#/$defs/A", "minLength": 1}}, **{"$defs": {"A": {"type": "string"}}}),
         "$.properties.r: $ref"),
        (obj({"n": {"not": {"type": "string"}}}), "$.properties.n: not"),
        (obj({"a": {"allOf": [{"type": "string"}, {"maxLength": 2}]}}), "$.properties.a: allOf"),
        (obj({"t": {"type": "array", "prefixItems": [{"type": "string"}]}}), "$.properties.t: prefixItems"),
        (obj({"t": {"type": "array", "items": {"type": "string"}, "contains": {"const": "a"}}}),
         "$.properties.t: contains"),
        (obj({"a": {"type": "date"}}), "$.properties.a: type"),
        (obj({"a": {"type": "string"}}, required=["b"]), "$: required"),
    ],
)
def test_unsupported_constructs_are_refused_with_their_path(schema: dict[str, Any], feature: str) -> None:
    with pytest.raises(UnsupportedFeature) as info:
        to_strict(schema, provider="openai_chat", model="gpt-4o")
    assert info.value.feature == feature
    assert feature.split(": ", 1)[0] in str(info.value) and str(info.value).startswith("openai_chat:gpt-4o: ")


def test_limits() -> None:
    many = obj({f"p{i}": {"type": "string"} for i in range(5001)})
    with pytest.raises(UnsupportedFeature, match="5000"):
        to_strict(many)
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(11):
        deep = obj({"x": deep}, ["x"])
    with pytest.raises(UnsupportedFeature, match="nesting"):
        to_strict(deep)
    with pytest.raises(UnsupportedFeature, match="1000 enum"):
        to_strict(obj({"e": {"enum": list(range(1001))}}))


def test_input_is_not_mutated_and_frozen_input_works() -> None:
    s = obj({"a": {"type": "string"}, "b": obj({"c": {"type": "integer"}})}, ["a"])
    before = copy.deepcopy(s)
    assert to_strict(freeze(s)) == to_strict(s)
    assert s == before


def test_schema_name() -> None:
    assert schema_name({"title": "My Answer (v2)"}) == "My_Answer_v2"
    assert schema_name({"title": "!!!"}) == "output"
    assert schema_name({}) == "output"
    assert schema_name({"title": "x" * 100}) == "x" * 64


def test_drop_optional_nulls() -> None:
    s = obj({"a": {"type": "string"}, "b": {"type": ["string", "null"]}, "c": {"$ref": "#/$defs/C"},
             "l": {"type": "array", "items": {"$ref": "#/$defs/C"}}},
            ["a"], **{"$defs": {"C": obj({"x": {"type": "integer"}})}})
    v = {"a": None, "b": None, "c": None, "l": [{"x": None}, {"x": 1}]}
    assert drop_optional_nulls(v, s) == {"a": None, "b": None, "l": [{}, {"x": 1}]}


def test_drop_optional_nulls_follows_a_union_to_any_value_not_only_an_object() -> None:
    """Regression (property test counterexample): under ``anyOf: [array of objects, string]`` strict
    mode makes ``[{}]`` come back as ``[{"a": null}]``; the null must go, or a valid answer fails the
    canonical schema. The branch is the one the value's shape fits, at any depth."""
    item_a = obj({"a": {"type": "string"}}, [])
    item_b = obj({"b": {"type": "integer"}}, [])
    s = obj({"v": {"anyOf": [{"type": "array", "items": item_a}, {"type": "string"}]},
             "w": {"anyOf": [{"type": "array", "items": item_a}, {"type": "array", "items": item_b}]},
             "n": {"anyOf": [{"type": "integer"}, {"anyOf": [{"type": "string"}, {"type": "array", "items": item_b}]}]},
             "t": {"oneOf": [obj({"k": {"const": "a"}, "x": {"type": "string"}}, ["k"]),
                             obj({"k": {"const": "b"}, "x": {"type": "string"}}, ["k"])]}},
            ["v", "w", "n", "t"])
    strict = to_strict(s)
    reply = {"v": [{"a": None}], "w": [{"b": None}, {"b": 2}], "n": [{"b": None}], "t": {"k": "b", "x": None}}
    assert Draft202012Validator(strict).is_valid(reply)
    back = drop_optional_nulls(reply, s)
    assert back == {"v": [{}], "w": [{}, {"b": 2}], "n": [{}], "t": {"k": "b"}}
    assert Draft202012Validator(s).is_valid(back)
    assert drop_optional_nulls({"v": "s", "w": [], "n": 3, "t": {"k": "a"}}, s) == {
        "v": "s", "w": [], "n": 3, "t": {"k": "a"}}


# --- property test ----------------------------------------------------------------------------

NAMES = st.text(string.ascii_lowercase, min_size=1, max_size=5)


@st.composite
def leaf(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    kind = draw(st.sampled_from(["string", "integer", "number", "boolean", "enum", "const", "short"]))
    if kind == "string":
        return {"type": "string"}, draw(st.text(max_size=5))
    if kind == "short":
        return {"type": "string", "minLength": 1, "maxLength": 4}, draw(st.text(min_size=1, max_size=4))
    if kind == "integer":
        return {"type": "integer", "minimum": 0}, draw(st.integers(0, 10**6))
    if kind == "number":
        return {"type": "number"}, draw(st.floats(allow_nan=False, allow_infinity=False))
    if kind == "boolean":
        return {"type": "boolean"}, draw(st.booleans())
    values = draw(st.lists(st.text(string.ascii_letters, max_size=4), min_size=1, max_size=4, unique=True))
    if kind == "const":
        return {"const": values[0]}, values[0]
    return {"enum": values}, draw(st.sampled_from(values))


@st.composite
def node(draw: st.DrawFn, depth: int) -> tuple[dict[str, Any], Any]:
    if depth <= 0:
        return draw(leaf())
    kind = draw(st.sampled_from(["leaf", "object", "array", "anyof"]))
    if kind == "leaf":
        return draw(leaf())
    if kind == "array":
        return draw(array_node(depth - 1))
    if kind == "anyof":
        a, va = draw(leaf())
        b, vb = draw(st.one_of(object_node(depth - 1), array_node(depth - 1)))
        return {"anyOf": [a, b]}, draw(st.sampled_from([va, vb]))
    return draw(object_node(depth - 1))


@st.composite
def array_node(draw: st.DrawFn, depth: int) -> tuple[dict[str, Any], Any]:
    items, _ = draw(node(max(depth, 0)))
    values = draw(st.lists(_sample(items), max_size=2))
    return {"type": "array", "items": items}, values


@st.composite
def object_node(draw: st.DrawFn, depth: int) -> tuple[dict[str, Any], Any]:
    names = draw(st.lists(NAMES, min_size=0, max_size=4, unique=True))
    props: dict[str, Any] = {}
    value: dict[str, Any] = {}
    required = []
    for name in names:
        sub, v = draw(node(max(depth, 0)))
        props[name] = sub
        if draw(st.booleans()):
            required.append(name)
            value[name] = v
        elif draw(st.booleans()):
            value[name] = v
    schema: dict[str, Any] = {"type": "object", "properties": props, "required": required}
    if not props:
        schema["additionalProperties"] = False
    return schema, value


def _sample(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Valid documents for an already drawn schema (array items)."""
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "anyOf" in schema:
        return st.one_of([_sample(b) for b in schema["anyOf"]])
    t = schema.get("type")
    if t == "string":
        return st.text(min_size=schema.get("minLength", 0), max_size=schema.get("maxLength", 5))
    if t == "integer":
        return st.integers(0, 1000)
    if t == "number":
        return st.floats(allow_nan=False, allow_infinity=False)
    if t == "boolean":
        return st.booleans()
    if t == "array":
        return st.lists(_sample(schema["items"]), max_size=2)
    props = schema.get("properties", {})
    req = set(schema.get("required", ()))
    return st.fixed_dictionaries({k: _sample(v) for k, v in props.items() if k in req},
                                 optional={k: _sample(v) for k, v in props.items() if k not in req})


def fill_nulls(value: Any, schema: dict[str, Any]) -> Any:
    """What strict mode makes of an absent optional property: an explicit null."""
    if isinstance(value, dict) and "properties" in schema:
        out = {}
        for k, sub in schema["properties"].items():
            out[k] = fill_nulls(value[k], sub) if k in value else None
        return out
    if "anyOf" in schema:  # any value, not only an object: an array of objects hides nulls too
        for b in schema["anyOf"]:
            if Draft202012Validator(b).is_valid(value):
                return fill_nulls(value, b)
    if isinstance(value, list) and "items" in schema:
        return [fill_nulls(v, schema["items"]) for v in value]
    return value


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(object_node(3))
def test_valid_documents_are_accepted_by_the_strict_schema(pair: tuple[dict[str, Any], Any]) -> None:
    schema, value = pair
    assert Draft202012Validator(schema).is_valid(value), "the generator made an invalid document"
    compiled = compile_strict(schema)
    strict = compiled.schema
    Draft202012Validator.check_schema(strict)

    def walk(s: Any) -> None:
        if isinstance(s, dict):
            if "properties" in s:
                assert s["additionalProperties"] is False
                assert s["required"] == list(s["properties"])
            for v in s.values():
                walk(v)
        elif isinstance(s, list):
            for v in s:
                walk(v)

    walk(strict)
    filled = fill_nulls(value, schema)
    errors = [e.message for e in Draft202012Validator(strict).iter_errors(filled)]
    assert not errors, (strict, filled, errors)
    back = drop_optional_nulls(filled, schema)
    assert Draft202012Validator(schema).is_valid(back)
    assert back == value


# --- degrade, never refuse (issue 10, item 6) ----------------------------------------------------


@st.composite
def hostile(draw: st.DrawFn, depth: int) -> tuple[Any, Any]:
    """(schema, a valid document) including constructs strict mode cannot express."""
    kind = draw(st.sampled_from(["plain", "object", "map", "typed_map", "pattern", "not", "tuple", "untyped",
                                 "oneof", "array"]))
    if kind == "plain" or depth <= 0:
        return draw(node(1))
    if kind == "object":
        names = draw(st.lists(NAMES, max_size=3, unique=True))
        pairs = {n: draw(hostile(depth - 1)) for n in names}
        required = [n for n in names if draw(st.booleans())]
        value = {n: v for n, (_, v) in pairs.items() if n in required or draw(st.booleans())}
        return {"type": "object", "properties": {n: s for n, (s, _) in pairs.items()}, "required": required}, value
    if kind == "map":
        return {"type": "object", "additionalProperties": True}, draw(st.dictionaries(NAMES, st.integers(), max_size=2))
    if kind == "typed_map":
        sub, v = draw(hostile(depth - 1))
        return {"type": "object", "additionalProperties": sub}, {k: v for k in draw(st.lists(NAMES, max_size=2))}
    if kind == "pattern":
        return ({"type": "object", "patternProperties": {"^p": {"type": "string"}}},
                {f"p{k}": "s" for k in draw(st.lists(NAMES, max_size=2))})
    if kind == "not":
        return {"type": "string", "not": {"const": "forbidden"}}, draw(st.text(string.ascii_lowercase, max_size=4))
    if kind == "tuple":
        return {"type": "array", "prefixItems": [{"type": "integer"}]}, [draw(st.integers())]
    if kind == "untyped":
        return {}, draw(st.one_of(st.integers(), st.text(max_size=3), st.none()))
    if kind == "oneof":
        (a, va), (b, vb) = draw(hostile(depth - 1)), draw(hostile(depth - 1))
        return {"anyOf": [a, b]}, draw(st.sampled_from([va, vb]))
    sub, v = draw(hostile(depth - 1))
    return {"type": "array", "items": sub}, [v] * draw(st.integers(0, 2))


@st.composite
def deep(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    """Nesting beyond strict mode's 10 levels."""
    schema: dict[str, Any] = {"type": "string"}
    value: Any = draw(st.text(max_size=3))
    for _ in range(draw(st.integers(9, 13))):
        schema, value = obj({"x": schema}, ["x"]), {"x": value}
    return schema, value


def _obeys_the_dialect(sent: dict[str, Any], strict: bool) -> None:
    assert sent["type"] == "object" and not {"anyOf", "oneOf", "allOf", "$ref"} & set(sent)  # an object root
    Draft202012Validator.check_schema(sent)
    if strict:
        assert compile_strict(sent).schema == sent  # already in the strict dialect

        def walk(s: Any) -> None:
            if isinstance(s, dict):
                if "properties" in s:
                    assert s["additionalProperties"] is False and s["required"] == list(s["properties"])
                for v in s.values():
                    walk(v)
            elif isinstance(s, list):
                for v in s:
                    walk(v)

        walk(sent)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pair=st.one_of(hostile(3), deep(), object_node(2)), tool=st.booleans())
@example(pair=({"anyOf": [{"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}},
                                                     "required": []}},
                          {"type": "string"}]}, [{}]), tool=False)
def test_any_schema_is_compiled_or_degraded_never_refused(pair: tuple[Any, Any], tool: bool) -> None:
    schema, value = pair
    assert Draft202012Validator(schema).is_valid(value), "the generator made an invalid document"
    if tool and not isinstance(value, dict):
        return  # a tool's arguments are a JSON object
    plan = plan_schema(freeze(schema), strict=True, tool=tool, provider="openai", model="gpt-4.1")
    _obeys_the_dialect(plan.schema, plan.strict)
    canonical = schema if plan.wrap_key is None else {"type": "object", "properties": {plan.wrap_key: schema},
                                                      "required": [plan.wrap_key]}
    sent = value if plan.wrap_key is None else {plan.wrap_key: value}
    if plan.strict:
        sent = fill_nulls(sent, canonical)
    errors = [e.message for e in Draft202012Validator(plan.schema).iter_errors(sent)]
    assert not errors, (plan.schema, sent, errors)
    if plan.strict:  # the nulls strict mode wrote come out again, giving back the document
        assert drop_optional_nulls(sent, canonical) == (value if plan.wrap_key is None else {plan.wrap_key: value})
    if not plan.strict:  # one warning names the construct and its canonical path
        (warning,) = plan.warnings
        assert "cannot be expressed in OpenAI strict mode" in warning and "strict: false" in warning
    if plan.wrap_key is not None:
        assert "at the root ($)" in plan.warnings[0]


@pytest.mark.parametrize(
    ("schema", "path"),
    [
        (obj({"m": {"type": "object", "patternProperties": {"^x": {"type": "string"}}}}),
         "patternProperties at $.properties.m"),
        (obj({"m": {"type": "object", "additionalProperties": True}}), "additionalProperties at $.properties.m"),
        (obj({"x": {}}), "a schema without a type at $.properties.x"),
        ({"anyOf": [obj({"m": {"type": "object"}}), {"type": "string"}]},
         "an object without properties at $.anyOf[0].properties.m"),
    ],
)
def test_the_one_warning_names_the_construct_at_its_canonical_path(schema: dict[str, Any], path: str) -> None:
    plan = plan_schema(schema, strict=True)
    assert not plan.strict and plan.wrap_key == ("value" if "anyOf" in schema else None)
    (warning,) = plan.warnings
    assert path in warning and "strict: false" in warning
