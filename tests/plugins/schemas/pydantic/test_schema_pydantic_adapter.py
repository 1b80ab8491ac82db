"""seamkit-schema-pydantic: registration, adapt() selection, the adapter contract, and partial
parsing over every prefix of generated typed documents."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
from collections.abc import Callable
from typing import Any, Literal
from typing import TypedDict as TypingTypedDict

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seamkit._plugins.registry import Registry
from seamkit._schemas import SchemaAdapter, SchemaFlavour, UnsupportedSchemaType, adapt
from seamkit.errors import OutputValidationError
from seamkit_schema_pydantic.flavour import PydanticFlavour, PydanticSchemaAdapter
from typing_extensions import TypedDict


class Priority(enum.Enum):
    LOW = "low"
    HIGH = "high"


class Step(pydantic.BaseModel):
    title: str
    minutes: int = pydantic.Field(ge=0)
    done: bool = False


class Plan(pydantic.BaseModel):
    name: str
    priority: Priority
    steps: list[Step]
    due: datetime.date | None = None
    note: str | None = None
    score: float = 0.0
    tags: dict[str, int] = {}


@pydantic.dataclasses.dataclass
class PydanticPoint:
    x: int
    y: int


@dataclasses.dataclass
class PlainPoint:
    x: int


class Movie(TypedDict):
    title: str
    year: int


class OldMovie(TypingTypedDict):
    title: str


class StructLike:
    __struct_fields__ = ("a",)


def test_registered_by_its_distribution(schema_registry: Registry) -> None:
    spec = schema_registry.resolve("schema_adapter", "pydantic")
    assert spec.distribution == "seamkit-schema-pydantic"
    flavour = spec.build()
    assert isinstance(flavour, SchemaFlavour)
    assert (flavour.name, flavour.priority) == ("pydantic", 10)


@pytest.mark.parametrize("tp", [Plan, PydanticPoint, Movie, list[Step], Step | None, Literal["a", "b"], Priority])
def test_adapt_picks_pydantic(schema_registry: Registry, tp: Any) -> None:
    adapter = adapt(tp, registry=schema_registry)
    assert isinstance(adapter, SchemaAdapter)
    assert adapter.name == "pydantic"
    assert adapter.python_type is tp


def test_pydantic_dataclass_is_pydantic_plain_dataclass_is_not() -> None:
    flavour = PydanticFlavour()
    assert flavour.supports(PydanticPoint)
    assert not flavour.supports(PlainPoint)
    assert not flavour.supports({"type": "object"})
    assert not flavour.supports(StructLike)
    assert not flavour.supports(None)


def test_unsupported_type_is_named(schema_registry: Registry) -> None:
    with pytest.raises(UnsupportedSchemaType, match=r"StructLike \(a msgspec Struct.*installed: .*pydantic"):
        adapt(StructLike, registry=schema_registry)


def test_typing_typeddict_refusal_says_why(schema_registry: Registry) -> None:
    # pydantic refuses typing.TypedDict before Python 3.12; the error passes its reason on
    import sys

    if sys.version_info >= (3, 12):
        assert adapt(OldMovie, registry=schema_registry).name == "pydantic"
        return
    with pytest.raises(UnsupportedSchemaType, match=r"OldMovie.*pydantic: .*typing_extensions.TypedDict"):
        adapt(OldMovie, registry=schema_registry)


def test_json_schema_is_pydantics_and_a_fresh_copy() -> None:
    adapter = PydanticSchemaAdapter(Plan)
    schema = adapter.json_schema()
    assert schema == pydantic.TypeAdapter(Plan).json_schema()
    assert schema["required"] == ["name", "priority", "steps"]
    schema["mutated"] = True
    assert "mutated" not in adapter.json_schema()


def test_parse_validates_into_the_model() -> None:
    adapter = PydanticSchemaAdapter(Plan)
    text = ('```json\n{"name": "p", "priority": "high", "steps": [{"title": "a", "minutes": 5}], '
            '"due": "2026-12-01"}\n```')
    plan = adapter.parse(text)
    assert isinstance(plan, Plan)
    assert plan.priority is Priority.HIGH
    assert plan.due == datetime.date(2026, 12, 1)
    assert plan.steps == [Step(title="a", minutes=5)]
    assert adapter.parse(text.encode()) == plan


def test_parse_drops_nulls_standing_for_absent_optionals() -> None:
    # strict structured-output dialects write "score": null for an optional non-nullable field
    adapter = PydanticSchemaAdapter(Plan)
    plan = adapter.parse('{"name": "p", "priority": "low", "steps": [], "score": null, "note": null}')
    assert plan.score == 0.0 and plan.note is None


def test_parse_errors_list_paths_and_keep_raw_text() -> None:
    adapter = PydanticSchemaAdapter(Plan)
    bad = '{"name": "p", "priority": "urgent", "steps": [{"title": "a", "minutes": -1}]}'
    with pytest.raises(OutputValidationError) as info:
        adapter.parse(bad)
    assert info.value.raw == bad
    problems = "\n".join(info.value.problems)
    assert "priority: Input should be 'low' or 'high'" in problems
    assert "steps/0/minutes: Input should be greater than or equal to 0" in problems
    with pytest.raises(OutputValidationError, match="not valid JSON"):
        adapter.parse('{"name": "p"')


def test_validate_and_serialize_round_trip() -> None:
    adapter = PydanticSchemaAdapter(Plan)
    plan = Plan(name="p", priority=Priority.LOW, steps=[Step(title="s", minutes=1, done=True)],
                due=datetime.date(2026, 1, 2), tags={"a": 1})
    data = adapter.serialize(plan)
    assert data["due"] == "2026-01-02" and data["priority"] == "low"
    json.dumps(data)  # JSON-compatible
    assert adapter.validate(data) == plan
    with pytest.raises(OutputValidationError, match="steps"):
        adapter.validate({"name": "p", "priority": "low", "steps": "none"})


def test_partial_parse_streams_plain_data() -> None:
    adapter = PydanticSchemaAdapter(Plan)
    assert adapter.partial_parse("") is None
    assert adapter.partial_parse('{"name": "Wee') == {"name": "Wee"}
    assert adapter.partial_parse('{"name": "Week", "priority": "hi') == {"name": "Week", "priority": "hi"}
    assert adapter.partial_parse('{"name": "W", "steps": [{"title": "a", "minutes": 1') == {
        "name": "W", "steps": [{"title": "a"}]}
    assert adapter.partial_parse("not json at all") is None


steps = st.builds(Step, title=st.text(max_size=12), minutes=st.integers(min_value=0, max_value=10**6),
                  done=st.booleans())
plans = st.builds(
    Plan,
    name=st.text(max_size=16),
    priority=st.sampled_from(Priority),
    steps=st.lists(steps, max_size=3),
    due=st.none() | st.dates(),
    note=st.none() | st.text(max_size=10),
    score=st.floats(allow_nan=False, allow_infinity=False),
    tags=st.dictionaries(st.text(max_size=4), st.integers(), max_size=3),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=plans, indent=st.sampled_from([None, 2]))
def test_every_prefix_of_generated_plans(plan: Plan, indent: int | None,
                                         check_prefixes: Callable[..., None]) -> None:
    adapter = PydanticSchemaAdapter(Plan)
    data = adapter.serialize(plan)
    text = json.dumps(data, indent=indent)
    check_prefixes(adapter, text, data)
    assert adapter.parse(text) == plan
    assert adapter.serialize(adapter.parse(plan.model_dump_json())) == data
