"""seamkit-schema-dataclass: standard-library dataclasses (pydantic dataclasses go to pydantic),
the adapter contract, and partial parsing over every prefix of generated documents."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
from collections.abc import Callable
from typing import Any

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seamkit._plugins.registry import Registry
from seamkit._schemas import SchemaAdapter, SchemaFlavour, adapt
from seamkit.errors import OutputValidationError
from seamkit_schema_dataclass.flavour import DataclassFlavour, DataclassSchemaAdapter


class Unit(enum.Enum):
    G = "g"
    ML = "ml"


@dataclasses.dataclass
class Ingredient:
    name: str
    amount: float
    unit: Unit


@dataclasses.dataclass
class Recipe:
    title: str
    ingredients: list[Ingredient]
    serves: int = 2
    published: datetime.date | None = None
    notes: list[str] = dataclasses.field(default_factory=list)


@pydantic.dataclasses.dataclass
class PydanticRecipe:
    title: str


def test_registered_by_its_distribution(schema_registry: Registry) -> None:
    spec = schema_registry.resolve("schema_adapter", "dataclass")
    assert spec.distribution == "seamkit-schema-dataclass"
    flavour = spec.build()
    assert isinstance(flavour, SchemaFlavour)
    assert (flavour.name, flavour.priority) == ("dataclass", 30)


def test_adapt_picks_dataclass_but_pydantic_for_a_pydantic_dataclass(schema_registry: Registry) -> None:
    adapter = adapt(Recipe, registry=schema_registry)
    assert isinstance(adapter, SchemaAdapter)
    assert (adapter.name, adapter.python_type) == ("dataclass", Recipe)
    assert adapt(PydanticRecipe, registry=schema_registry).name == "pydantic"


def test_supports_only_dataclass_classes() -> None:
    flavour = DataclassFlavour()
    assert flavour.supports(Recipe)
    assert not flavour.supports(PydanticRecipe)
    assert not flavour.supports(Recipe("t", []))  # an instance
    assert not flavour.supports(list[Recipe])
    assert not flavour.supports(dict)
    with pytest.raises(TypeError, match="dataclass classes"):
        flavour.adapter(int)


def test_json_schema() -> None:
    schema = DataclassSchemaAdapter(Recipe).json_schema()
    assert schema["required"] == ["title", "ingredients"]
    assert schema["properties"]["ingredients"]["items"] == {"$ref": "#/$defs/Ingredient"}
    assert schema["$defs"]["Unit"]["enum"] == ["g", "ml"]


def test_parse_and_errors() -> None:
    adapter = DataclassSchemaAdapter(Recipe)
    recipe = adapter.parse('{"title": "Tea", "ingredients": [{"name": "leaf", "amount": 2, "unit": "g"}], '
                           '"published": "2026-11-30", "serves": null}')
    assert recipe == Recipe("Tea", [Ingredient("leaf", 2.0, Unit.G)], 2, datetime.date(2026, 11, 30))
    bad = '{"title": "Tea", "ingredients": [{"name": "leaf", "amount": "lots", "unit": "kg"}]}'
    with pytest.raises(OutputValidationError) as info:
        adapter.parse(bad)
    assert info.value.raw == bad
    assert any(p.startswith("ingredients/0/amount:") for p in info.value.problems)
    assert any(p.startswith("ingredients/0/unit:") for p in info.value.problems)


def test_validate_serialize_round_trip() -> None:
    adapter = DataclassSchemaAdapter(Recipe)
    recipe = Recipe("Soup", [Ingredient("water", 500.0, Unit.ML)], 4, datetime.date(2026, 1, 1), ["hot"])
    data = adapter.serialize(recipe)
    assert data == {"title": "Soup", "ingredients": [{"name": "water", "amount": 500.0, "unit": "ml"}],
                    "serves": 4, "published": "2026-01-01", "notes": ["hot"]}
    assert adapter.validate(data) == recipe
    with pytest.raises(OutputValidationError, match="title"):
        adapter.validate({"ingredients": []})


ingredients = st.builds(Ingredient, name=st.text(max_size=10),
                        amount=st.floats(allow_nan=False, allow_infinity=False), unit=st.sampled_from(Unit))
recipes = st.builds(Recipe, title=st.text(max_size=20), ingredients=st.lists(ingredients, max_size=3),
                    serves=st.integers(min_value=-5, max_value=10**9), published=st.none() | st.dates(),
                    notes=st.lists(st.text(max_size=6), max_size=3))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(recipe=recipes, indent=st.sampled_from([None, 1]), ascii_only=st.booleans())
def test_every_prefix_of_generated_recipes(recipe: Recipe, indent: int | None, ascii_only: bool,
                                           check_prefixes: Callable[..., Any]) -> None:
    adapter = DataclassSchemaAdapter(Recipe)
    data = adapter.serialize(recipe)
    text = json.dumps(data, indent=indent, ensure_ascii=ascii_only)
    check_prefixes(adapter, text, data)
    assert adapter.parse(text) == recipe
