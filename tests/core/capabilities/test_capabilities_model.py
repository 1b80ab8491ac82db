"""The capability model: fact types, capability construction, facts and result values."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from seamkit.capabilities import (
    Capability,
    Completed,
    Evidence,
    Fact,
    FactType,
    Failed,
    Guidance,
    NeedsConfirmation,
    NeedsDependency,
    NeedsInput,
    fact_type,
)


async def _execute(ctx: Any, input: Any) -> Completed:
    return Completed()


def _cap(**kw: Any) -> Capability:
    args: dict[str, Any] = {"id": "lookup", "version": 1, "description": "d", "execute": _execute,
                            "input": {"type": "object"}}
    args.update(kw)
    return Capability(**args)


# fact types -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "name", "version"),
    [("order.id@2", "order.id", 2), ("order.id", "order.id", 1), ("a@1", "a", 1), ("x_1.y@10", "x_1.y", 10),
     ("order@01", "order", 1)],
)
def test_fact_type_parses_name_and_version(spec: str, name: str, version: int) -> None:
    assert fact_type(spec) == FactType(name, version)


@pytest.mark.parametrize(
    "spec",
    ["", "@1", "Order@1", "order id@1", "1order@1", "order@", "order@x", "order@1.0", "order@-1", "order@1@2",
     "_order@1", "order@1\n", "order\n", "order@\u0661", " order@1", "order-id@1"],
)
def test_fact_type_rejects_other_shapes(spec: str) -> None:
    with pytest.raises(ValueError):
        fact_type(spec)


@pytest.mark.parametrize("spec", ["order@0", "order@00"])
def test_fact_type_rejects_version_below_one(spec: str) -> None:
    with pytest.raises(ValueError):
        fact_type(spec)


@pytest.mark.parametrize("spec", [None, 1, b"order@1", ["order@1"]])
def test_fact_type_rejects_non_strings(spec: Any) -> None:
    with pytest.raises(ValueError):
        fact_type(spec)


def test_fact_type_passes_a_fact_type_through() -> None:
    ft = FactType("order.id", 3)
    assert fact_type(ft) is ft


@pytest.mark.parametrize(("name", "version"), [("Bad name", 1), ("order", 0), ("order", -1), ("order", True),
                                               ("order", 1.0), ("order", "1"), ("", 1)])
def test_fact_type_built_directly_holds_the_same_invariants(name: Any, version: Any) -> None:
    with pytest.raises(ValueError):
        FactType(name, version)


@given(st.from_regex(r"[a-z][a-z0-9_.]{0,12}", fullmatch=True), st.integers(min_value=1, max_value=10**6))
def test_fact_type_round_trips_through_its_text(name: str, version: int) -> None:
    ft = FactType(name, version)
    assert fact_type(str(ft)) == ft


# capabilities ---------------------------------------------------------------------------------


def test_capability_normalises_fact_types() -> None:
    cap = _cap(requires=["order.id@2", FactType("user")], provides=("receipt",), invalidates=["cart@3"])
    assert cap.requires == (FactType("order.id", 2), FactType("user", 1))
    assert cap.provides == (FactType("receipt", 1),)
    assert cap.invalidates == (FactType("cart", 3),)
    assert cap.ref == "lookup@1"


@pytest.mark.parametrize("field", ["requires", "provides", "invalidates"])
def test_capability_rejects_a_malformed_fact_type(field: str) -> None:
    with pytest.raises(ValueError):
        _cap(**{field: ["Order"]})


@pytest.mark.parametrize("field", ["requires", "provides", "invalidates"])
def test_capability_rejects_a_bare_string_for_a_fact_list(field: str) -> None:
    # iterating "order" would declare the facts o, r, d, e, r
    with pytest.raises(TypeError):
        _cap(**{field: "order"})


@pytest.mark.parametrize("effect", ["delete", "", "READ", None])
def test_capability_rejects_an_unknown_effect(effect: Any) -> None:
    with pytest.raises(ValueError):
        _cap(effect=effect)


@pytest.mark.parametrize("confirmation", ["yes", "", "Required", None])
def test_capability_rejects_an_unknown_confirmation(confirmation: Any) -> None:
    with pytest.raises(ValueError):
        _cap(confirmation=confirmation)


@pytest.mark.parametrize("execute", [None, "module:func", 3])
def test_capability_rejects_a_non_callable_execute(execute: Any) -> None:
    with pytest.raises(TypeError):
        _cap(execute=execute)


@pytest.mark.parametrize("effect", ["none", "read", "write"])
@pytest.mark.parametrize("confirmation", ["none", "required", "capability"])
def test_capability_accepts_every_effect_and_confirmation(effect: str, confirmation: str) -> None:
    cap = _cap(effect=effect, confirmation=confirmation)
    assert (cap.effect, cap.confirmation) == (effect, confirmation)


def test_capability_is_frozen_with_its_schema_mapping() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    cap = _cap(input=schema)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cap.id = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        cap.input["properties"]["q"] = {"type": "integer"}
    schema["properties"]["q"] = {"type": "integer"}  # the caller's dict is not the declaration
    assert cap.input["properties"]["q"] == {"type": "string"}


def test_guidance_rejects_a_bare_string_for_examples() -> None:
    assert Guidance(examples=["find order 12"]).examples == ("find order 12",)
    with pytest.raises(TypeError):
        Guidance(examples="find order 12")


# facts ----------------------------------------------------------------------------------------


def test_fact_freezes_its_value_and_normalises_types() -> None:
    value = {"items": [{"sku": "A1", "qty": 2}], "tags": ["x"]}
    fact = Fact("order@2", value, evidence=["ev1"], depends_on=["user.id"])
    assert fact.type == FactType("order", 2)
    assert fact.depends_on == (FactType("user.id", 1),)
    assert fact.evidence == ("ev1",)
    with pytest.raises(TypeError):
        fact.value["items"][0]["qty"] = 3
    with pytest.raises(TypeError):
        fact.value["tags"].append("y")
    with pytest.raises(dataclasses.FrozenInstanceError):
        fact.value = {}  # type: ignore[misc]
    value["items"][0]["qty"] = 5  # the caller's object is not the fact
    assert fact.value["items"][0]["qty"] == 2
    assert json.loads(json.dumps(fact.value)) == {"items": [{"sku": "A1", "qty": 2}], "tags": ["x"]}
    assert pickle.loads(pickle.dumps(fact)) == fact
    assert copy.deepcopy(fact) == fact
    assert hash(fact) == hash(Fact("order@2", {"items": [{"sku": "A1", "qty": 2}], "tags": ["x"]},
                                   evidence=["ev1"], depends_on=["user.id"]))


def test_fact_rejects_malformed_types_and_bare_strings() -> None:
    with pytest.raises(ValueError):
        Fact("Order", 1)
    with pytest.raises(ValueError):
        Fact("order", 1, depends_on=["user@0"])
    with pytest.raises(TypeError):
        Fact("order", 1, depends_on="user.id")
    with pytest.raises(TypeError):
        Fact("order", 1, evidence="ev1")


# results --------------------------------------------------------------------------------------


def test_result_values_carry_their_status() -> None:
    results = [Completed(), NeedsInput("which order?"), NeedsDependency("order.id@1", "find_order"),
               NeedsConfirmation("refund 20 EUR"), Failed("NOT_FOUND", "no such order")]
    assert [r.status for r in results] == ["completed", "needs_input", "needs_dependency", "needs_confirmation",
                                           "failed"]


def test_completed_freezes_artifacts() -> None:
    ev = Evidence("orders/12")
    result = Completed(output={"id": 12}, facts=[Fact("order.id", 12, evidence=[ev.id])],
                       evidence=[ev], artifacts={"receipt": {"n": [1]}})
    assert isinstance(result.facts, tuple) and isinstance(result.evidence, tuple)
    with pytest.raises(TypeError):
        result.artifacts["receipt"]["n"].append(2)
    assert json.loads(json.dumps(result.artifacts)) == {"receipt": {"n": [1]}}


def test_needs_dependency_normalises_its_requirement_and_freezes_input() -> None:
    result = NeedsDependency("order.id@2", "find_order", {"q": ["a"]}, state={"step": 1})
    assert result.requirement == FactType("order.id", 2)
    with pytest.raises(TypeError):
        result.input["q"].append("b")
    with pytest.raises(ValueError):
        NeedsDependency("Order", "find_order")


def test_needs_input_fields_are_a_tuple() -> None:
    assert NeedsInput("which?", ["order_id", "email"]).fields == ("order_id", "email")
    with pytest.raises(TypeError):
        NeedsInput("which?", "order_id")


def test_evidence_ids_are_the_citation_ids_answers_cite() -> None:
    from seamkit._grounding import find_citations

    ev = Evidence("orders/12", "order 12: 3 items")
    assert ev.id == Evidence("orders/12").id and ev.id != Evidence("orders/13").id
    assert find_citations(f"The order has 3 items [{ev.id}].") == [ev.id]


def test_a_continuation_state_the_checkpoint_cannot_store_is_refused_when_made() -> None:
    from seamkit.errors import CodecError

    assert NeedsDependency("order.id@1", "find_order", state={"step": 2, "seen": ["a"]}).state["step"] == 2
    with pytest.raises(CodecError):
        NeedsDependency("order.id@1", "find_order", state={"callback": print})
