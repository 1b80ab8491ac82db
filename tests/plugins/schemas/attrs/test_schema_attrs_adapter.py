"""seamkit-schema-attrs: JSON Schema from attrs.fields, jsonschema validation, cattrs structuring;
partial parsing over every prefix of generated documents."""

from __future__ import annotations

import datetime
import enum
import json
from collections.abc import Callable
from typing import Any

import attrs
import jsonschema
import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seamkit._plugins.registry import Registry
from seamkit._schemas import SchemaAdapter, SchemaFlavour, adapt
from seamkit.errors import OutputValidationError
from seamkit_schema_attrs.flavour import AttrsFlavour, AttrsSchemaAdapter, attrs_json_schema, contains_attrs


class Kind(enum.Enum):
    BUG = "bug"
    FEATURE = "feature"


@attrs.define
class Person:
    name: str
    email: str | None = None


@attrs.define
class Ticket:
    """A ticket in the tracker."""

    title: str = attrs.field(metadata={"description": "one line"})
    kind: Kind
    points: int = attrs.field(validator=attrs.validators.ge(0))
    assignee: Person | None = None
    watchers: list[Person] = attrs.Factory(list)
    due: datetime.date | None = None
    labels: dict[str, float] = attrs.Factory(dict)
    pair: tuple[int, str] = (0, "")


@attrs.frozen
class Node:
    value: int
    children: list[Node] = attrs.Factory(list)


@attrs.define
class Cat:
    meows: int


@attrs.define
class Dog:
    barks: bool


@attrs.define
class Pet:
    animal: Cat | Dog


@attrs.define
class Broken:
    thing: NoSuchType  # type: ignore[name-defined]  # noqa: F821


def test_pydantic_cannot_describe_attrs_classes() -> None:
    # why this flavour builds the schema itself instead of using pydantic's TypeAdapter
    with pytest.raises(pydantic.PydanticSchemaGenerationError):
        pydantic.TypeAdapter(Person)


def test_registered_by_its_distribution(schema_registry: Registry) -> None:
    spec = schema_registry.resolve("schema_adapter", "attrs")
    assert spec.distribution == "seamkit-schema-attrs"
    flavour = spec.build()
    assert isinstance(flavour, SchemaFlavour)
    assert (flavour.name, flavour.priority) == ("attrs", 20)


@pytest.mark.parametrize("tp", [Ticket, list[Person], Person | None, dict[str, Node]])
def test_adapt_picks_attrs(tp: Any, schema_registry: Registry) -> None:
    adapter = adapt(tp, registry=schema_registry)
    assert isinstance(adapter, SchemaAdapter)
    assert (adapter.name, adapter.python_type) == ("attrs", tp)


def test_contains_attrs() -> None:
    assert contains_attrs(Person) and contains_attrs(list[tuple[int, Person]])
    assert not contains_attrs(int) and not contains_attrs(list[int]) and not contains_attrs({"type": "object"})
    assert not AttrsFlavour().supports(dict[str, int])
    with pytest.raises(TypeError, match="attrs classes"):
        AttrsFlavour().adapter(int)


def test_json_schema_from_fields() -> None:
    schema = attrs_json_schema(Ticket)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["title"] == "Ticket"
    assert schema["description"] == "A ticket in the tracker."
    assert schema["required"] == ["title", "kind", "points"]
    props = schema["properties"]
    assert props["title"] == {"type": "string", "description": "one line"}
    assert props["kind"] == {"enum": ["bug", "feature"], "title": "Kind", "type": "string"}  # pydantic's
    assert props["assignee"] == {"anyOf": [{"$ref": "#/$defs/Person"}, {"type": "null"}], "default": None}
    assert props["watchers"] == {"type": "array", "items": {"$ref": "#/$defs/Person"}}
    assert props["due"]["anyOf"][0] == {"type": "string", "format": "date"}
    assert props["labels"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert props["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
    assert schema["$defs"]["Person"]["required"] == ["name"]


def test_self_referential_class_keeps_its_ref() -> None:
    schema = attrs_json_schema(Node)
    assert schema["$ref"] == "#/$defs/Node"
    assert schema["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    adapter = AttrsSchemaAdapter(Node)
    tree = adapter.parse('{"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}')
    assert tree == Node(1, [Node(2, [Node(3)])])


def test_unresolvable_annotation_is_a_clear_type_error() -> None:
    with pytest.raises(TypeError, match="cannot resolve the annotations of attrs class Broken"):
        AttrsSchemaAdapter(Broken)


def test_parse_builds_instances() -> None:
    adapter = AttrsSchemaAdapter(Ticket)
    ticket = adapter.parse('{"title": "t", "kind": "bug", "points": 3, "assignee": {"name": "Ada"}, '
                           '"watchers": [{"name": "B", "email": "b@x"}], "due": "2026-12-24", '
                           '"labels": {"p": 0.5}, "pair": [1, "x"]}')
    assert ticket == Ticket("t", Kind.BUG, 3, Person("Ada"), [Person("B", "b@x")], datetime.date(2026, 12, 24),
                            {"p": 0.5}, (1, "x"))
    # null standing for an absent optional non-nullable field is dropped: labels keeps its default
    assert adapter.parse('{"title": "t", "kind": "feature", "points": 0, "labels": null}').labels == {}


def test_union_of_attrs_classes() -> None:
    adapter = AttrsSchemaAdapter(Pet)
    assert adapter.parse('{"animal": {"meows": 3}}') == Pet(Cat(3))
    assert adapter.parse('{"animal": {"barks": true}}') == Pet(Dog(True))
    with pytest.raises(OutputValidationError, match="animal"):
        adapter.parse('{"animal": {"quacks": 1}}')


def test_json_types_are_strict() -> None:
    # cattrs alone would turn 5.7 into 5 and 12 into "12"; the schema refuses both
    adapter = AttrsSchemaAdapter(Ticket)
    bad = '{"title": 12, "kind": "bug", "points": 5.7}'
    with pytest.raises(OutputValidationError) as info:
        adapter.parse(bad)
    assert info.value.raw == bad
    assert "points: 5.7 is not of type 'integer'" in info.value.problems
    assert "title: 12 is not of type 'string'" in info.value.problems


def test_attrs_validators_run() -> None:
    adapter = AttrsSchemaAdapter(Ticket)
    with pytest.raises(OutputValidationError) as info:
        adapter.parse('{"title": "t", "kind": "bug", "points": -1}')
    assert info.value.problems == ("(root): ValueError: 'points' must be >= 0: -1",)


def test_validate_and_serialize_round_trip() -> None:
    adapter = AttrsSchemaAdapter(list[Person])
    people = [Person("a"), Person("b", "b@x")]
    data = adapter.serialize(people)
    assert data == [{"name": "a", "email": None}, {"name": "b", "email": "b@x"}]
    assert adapter.validate(data) == people
    ticket = Ticket("t", Kind.FEATURE, 1)
    assert AttrsSchemaAdapter(Ticket).validate(ticket) is ticket
    with pytest.raises(OutputValidationError, match=r"\(root\): 3 is not of type 'array'"):
        adapter.validate(3)


people = st.builds(Person, name=st.text(max_size=8), email=st.none() | st.emails())
tickets = st.builds(
    Ticket,
    title=st.text(max_size=20),
    kind=st.sampled_from(Kind),
    points=st.integers(min_value=0, max_value=10**15),
    assignee=st.none() | people,
    watchers=st.lists(people, max_size=3),
    due=st.none() | st.dates(),
    labels=st.dictionaries(st.text(max_size=4), st.floats(allow_nan=False, allow_infinity=False), max_size=3),
    pair=st.tuples(st.integers(), st.text(max_size=4)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ticket=tickets, indent=st.sampled_from([None, 2]), ascii_only=st.booleans())
def test_every_prefix_of_generated_tickets(ticket: Ticket, indent: int | None, ascii_only: bool,
                                           check_prefixes: Callable[..., Any]) -> None:
    adapter = AttrsSchemaAdapter(Ticket)
    data = adapter.serialize(ticket)
    text = json.dumps(data, indent=indent, ensure_ascii=ascii_only)
    check_prefixes(adapter, text, data)
    assert adapter.parse(text) == ticket
