"""seamkit-schema-jsonschema: a raw JSON Schema as the output type, validated with jsonschema,
remote $ref refused; partial parsing over every prefix of documents matching the schema."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seamkit._plugins.registry import Registry
from seamkit._schemas import SchemaAdapter, SchemaFlavour, adapt
from seamkit.errors import OutputValidationError
from seamkit.values import freeze
from seamkit_schema_jsonschema.flavour import JsonSchemaAdapter, JsonSchemaFlavour

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "sources": {"type": "array", "items": {"$ref": "#/$defs/source"}},
        "draft": {"type": "boolean"},
    },
    "required": ["answer", "confidence"],
    "additionalProperties": False,
    "$defs": {
        "source": {
            "type": "object",
            "properties": {"id": {"type": "string", "pattern": "^s[0-9a-f]{6}$"}, "page": {"type": "integer"}},
            "required": ["id"],
        }
    },
}


def test_registered_by_its_distribution(schema_registry: Registry) -> None:
    spec = schema_registry.resolve("schema_adapter", "jsonschema")
    assert spec.distribution == "seamkit-schema-jsonschema"
    flavour = spec.build()
    assert isinstance(flavour, SchemaFlavour)
    assert (flavour.name, flavour.priority) == ("jsonschema", 40)


def test_adapt_picks_jsonschema_for_a_mapping(schema_registry: Registry) -> None:
    adapter = adapt(SCHEMA, registry=schema_registry)
    assert isinstance(adapter, SchemaAdapter)
    assert adapter.name == "jsonschema"
    assert adapter.python_type == SCHEMA
    assert adapt(freeze(SCHEMA), registry=schema_registry).json_schema() == SCHEMA  # frozen schemas too


def test_flavour_supports_mappings_only() -> None:
    flavour = JsonSchemaFlavour()
    assert flavour.supports(SCHEMA)
    assert not flavour.supports(dict)
    with pytest.raises(TypeError, match="JSON Schema mapping"):
        flavour.adapter(list)


def test_json_schema_is_a_fresh_copy() -> None:
    adapter = JsonSchemaAdapter(SCHEMA)
    schema = adapter.json_schema()
    schema["properties"]["answer"]["type"] = "integer"
    assert adapter.json_schema() == SCHEMA


@pytest.mark.parametrize(("schema", "fragment"), [
    ({"$ref": "https://example.com/schema.json"}, "cannot be resolved within the schema"),
    ({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}, "cannot be resolved"),
    ({"type": "nonsense"}, "invalid output JSON Schema"),
    ({"type": "string", "pattern": "("}, "invalid output JSON Schema"),
])
def test_invalid_or_remote_schemas_are_refused(schema: dict[str, Any], fragment: str,
                                               schema_registry: Registry, no_network: None) -> None:
    with pytest.raises(ValueError, match=fragment):
        adapt(schema, registry=schema_registry)


def test_parse_returns_plain_data() -> None:
    adapter = JsonSchemaAdapter(SCHEMA)
    text = '{"answer": "42", "confidence": 0.9, "sources": [{"id": "s0a1b2c", "page": 3}]}'
    assert adapter.parse(text) == json.loads(text)
    # a null for an optional non-nullable property (strict dialects) is dropped
    assert adapter.parse('{"answer": "x", "confidence": 1, "draft": null}') == {"answer": "x", "confidence": 1}


def test_parse_errors_list_every_problem_with_paths() -> None:
    adapter = JsonSchemaAdapter(SCHEMA)
    bad = '{"answer": 42, "confidence": 1.5, "sources": [{"id": "nope"}], "extra": 1}'
    with pytest.raises(OutputValidationError) as info:
        adapter.parse(bad)
    assert info.value.raw == bad
    problems = info.value.problems
    assert "answer: 42 is not of type 'string'" in problems
    assert "confidence: 1.5 is greater than the maximum of 1" in problems
    assert any(p.startswith("sources/0/id: 'nope' does not match") for p in problems)
    assert any(p.startswith("(root): Additional properties are not allowed") for p in problems)


def test_validate_and_serialize() -> None:
    adapter = JsonSchemaAdapter(SCHEMA)
    data = {"answer": "a", "confidence": 0}
    assert adapter.validate(freeze(data)) == data
    assert type(adapter.serialize(freeze(data))) is dict
    with pytest.raises(OutputValidationError, match="'answer' is a required property"):
        adapter.validate({"confidence": 0})


sources = st.fixed_dictionaries({"id": st.from_regex(r"\As[0-9a-f]{6}\Z")},
                                optional={"page": st.integers(min_value=-(10**12), max_value=10**12)})
documents = st.fixed_dictionaries(
    {"answer": st.text(max_size=30), "confidence": st.floats(min_value=0, max_value=1)},
    optional={"sources": st.lists(sources, max_size=3), "draft": st.booleans()},
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=documents, indent=st.sampled_from([None, 2]), ascii_only=st.booleans())
def test_every_prefix_of_documents_matching_the_schema(doc: dict[str, Any], indent: int | None,
                                                       ascii_only: bool,
                                                       check_prefixes: Callable[..., Any]) -> None:
    adapter = JsonSchemaAdapter(SCHEMA)
    text = json.dumps(doc, indent=indent, ensure_ascii=ascii_only)
    check_prefixes(adapter, text, doc)
    assert adapter.parse(text) == doc
