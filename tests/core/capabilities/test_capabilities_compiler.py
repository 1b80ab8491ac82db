"""The capability compiler: every code with a minimal failing agent, all problems at once, and the
compiled agent (order, providers, input schemas, fingerprint, immutability)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pydantic
import pytest
from seamkit.capabilities import CODES, Capability, CompiledAgent, CompileError, Completed, compile_agent
from seamkit.capabilities._compiler import Problem

OBJ = {"type": "object", "properties": {"q": {"type": "string"}}}


async def _execute(ctx: Any, input: Any) -> Completed:
    return Completed()


async def _other_execute(ctx: Any, input: Any) -> Completed:
    return Completed(output=1)


def cap(id: str, *, requires: tuple[str, ...] = (), provides: tuple[str, ...] = (), **kw: Any) -> Capability:
    args: dict[str, Any] = {"id": id, "version": 1, "description": f"{id} things", "execute": _execute,
                            "input": OBJ, "requires": requires, "provides": provides}
    args.update(kw)
    return Capability(**args)


def problems(caps: list[Capability], **kw: Any) -> list[tuple[str, tuple[str, ...]]]:
    with pytest.raises(CompileError) as info:
        compile_agent(caps, **kw)
    assert info.value.codes == tuple(p.code for p in info.value.problems)
    return [(p.code, p.ids) for p in info.value.problems]


# one code at a time ---------------------------------------------------------------------------


def test_duplicate_capability() -> None:
    assert problems([cap("a"), cap("b"), cap("a", version=2)]) == [("DUPLICATE_CAPABILITY", ("a@1", "a@2"))]


def test_duplicates_are_all_checked_whatever_the_registration_order() -> None:
    # keeping only the first of an id made the second one's problems depend on registration order
    write = cap("a", version=2, effect="write")
    for caps in ([cap("a"), write], [write, cap("a")]):
        assert problems(caps) == [("DUPLICATE_CAPABILITY", ("a@1", "a@2")),
                                  ("WRITE_CONFIRMATION_REQUIRED", ("a@2",))]


@pytest.mark.parametrize("bad", ["Search", "1search", "search orders", "search\n", "", "_search", "søk"])
def test_invalid_capability_id(bad: str) -> None:
    assert problems([cap(bad), cap("ok")]) == [("INVALID_CAPABILITY_ID", (f"{bad}@1",))]


def test_valid_capability_ids() -> None:
    assert compile_agent([cap("a"), cap("orders.search-v2_x")]).order == ("a", "orders.search-v2_x")


def test_a_non_string_id_is_reported_not_a_crash() -> None:
    assert problems([cap(5), cap("a")]) == [("INVALID_CAPABILITY_ID", ("5@1",))]  # type: ignore[arg-type]


@pytest.mark.parametrize("version", [0, -1, "1", True, 1.0, None])
def test_invalid_capability_version(version: Any) -> None:
    assert problems([cap("a", version=version)]) == [("INVALID_CAPABILITY_VERSION", (f"a@{version}",))]


@pytest.mark.parametrize("version", [0, -1, "1", True, 1.0])
def test_invalid_agent_version(version: Any) -> None:
    assert problems([cap("a")], version=version) == [("INVALID_AGENT_VERSION", (repr(version),))]


class NotAdaptable:
    pass


@pytest.mark.parametrize(
    "input",
    [None, {"type": "string"}, {"type": "array", "items": {"type": "integer"}}, int, list[int], NotAdaptable,
     {"type": "object", "properties": 3}],
    ids=["none", "string-schema", "array-schema", "int", "list-int", "no-flavour", "invalid-schema"],
)
def test_model_schema_required(input: Any) -> None:
    assert problems([cap("a", input=input), cap("b")]) == [("MODEL_SCHEMA_REQUIRED", ("a@1",))]


@pytest.mark.parametrize("output", [NotAdaptable, {"type": "strin"}])
def test_invalid_output_schema(output: Any) -> None:
    assert problems([cap("a", output=output)]) == [("INVALID_OUTPUT_SCHEMA", ("a@1",))]


def test_write_confirmation_required() -> None:
    caps = [cap("w", effect="write"), cap("r", effect="read"), cap("x", effect="write", confirmation="required"),
            cap("y", effect="write", confirmation="capability")]
    assert problems(caps) == [("WRITE_CONFIRMATION_REQUIRED", ("w@1",))]


def test_missing_fact_provider() -> None:
    caps = [cap("a", requires=("order.id@1", "user@1")), cap("b", provides=("user@1",))]
    assert problems(caps) == [("MISSING_FACT_PROVIDER", ("a@1", "order.id@1"))]


def test_fact_version_mismatch() -> None:
    caps = [cap("a", requires=("order.id@2",)), cap("b", provides=("order.id@1",)),
            cap("c", provides=("order.id@3",))]
    assert problems(caps) == [("FACT_VERSION_MISMATCH", ("a@1", "order.id@2", "b@1", "c@1"))]


def test_ambiguous_fact_provider_lists_both_providers() -> None:
    caps = [cap("b", provides=("order.id@1",)), cap("a", provides=("order.id@1",)),
            cap("c", requires=("order.id@1",))]
    assert problems(caps) == [("AMBIGUOUS_FACT_PROVIDER", ("order.id@1", "a@1", "b@1"))]


def test_dependency_cycle_lists_its_members() -> None:
    caps = [cap("a", requires=("x@1",), provides=("y@1",)), cap("b", requires=("y@1",), provides=("z@1",)),
            cap("c", requires=("z@1",), provides=("x@1",)), cap("d", requires=("x@1",))]
    assert problems(caps) == [("CAPABILITY_DEPENDENCY_CYCLE", ("a@1", "b@1", "c@1"))]


def test_a_capability_requiring_what_it_provides_is_a_cycle_of_one() -> None:
    assert problems([cap("a", requires=("x@1",), provides=("x@1",)), cap("b")]) == [
        ("CAPABILITY_DEPENDENCY_CYCLE", ("a@1",))]


def test_separate_cycles_are_reported_separately() -> None:
    caps = [cap("a", requires=("x@1",), provides=("y@1",)), cap("b", requires=("y@1",), provides=("x@1",)),
            cap("c", requires=("p@1",), provides=("q@1",)), cap("d", requires=("q@1",), provides=("p@1",)),
            cap("e", requires=("s@1",), provides=("s@1",))]
    assert problems(caps) == [("CAPABILITY_DEPENDENCY_CYCLE", ("a@1", "b@1")),
                              ("CAPABILITY_DEPENDENCY_CYCLE", ("c@1", "d@1")),
                              ("CAPABILITY_DEPENDENCY_CYCLE", ("e@1",))]


def test_a_cycle_through_the_second_provider_of_an_ambiguous_fact_is_reported() -> None:
    # a and b both provide x; c needs x and provides y; b needs y: b -> c -> b whichever provider wins
    caps = [cap("a", provides=("x@1",)), cap("b", requires=("y@1",), provides=("x@1",)),
            cap("c", requires=("x@1",), provides=("y@1",))]
    assert problems(caps) == [("AMBIGUOUS_FACT_PROVIDER", ("x@1", "a@1", "b@1")),
                              ("CAPABILITY_DEPENDENCY_CYCLE", ("b@1", "c@1"))]


def test_every_code_is_tested_here() -> None:
    tested = {"DUPLICATE_CAPABILITY", "INVALID_CAPABILITY_ID", "INVALID_CAPABILITY_VERSION", "INVALID_AGENT_VERSION",
              "MODEL_SCHEMA_REQUIRED", "INVALID_OUTPUT_SCHEMA", "WRITE_CONFIRMATION_REQUIRED", "MISSING_FACT_PROVIDER",
              "FACT_VERSION_MISMATCH", "AMBIGUOUS_FACT_PROVIDER", "CAPABILITY_DEPENDENCY_CYCLE"}
    assert set(CODES) == tested


# all at once ----------------------------------------------------------------------------------


def test_every_problem_is_reported_at_once() -> None:
    caps = [
        cap("dup"), cap("dup", version=2),
        cap("Bad"),
        cap("v0", version=0),
        cap("noinput", input=None),
        cap("badout", output=NotAdaptable),
        cap("w", effect="write"),
        cap("needs", requires=("missing@1",)),
        cap("old", requires=("order@2",)), cap("order1", provides=("order@1",)),
        cap("amb1", provides=("amb@1",)), cap("amb2", provides=("amb@1",)),
        cap("self", requires=("loop@1",), provides=("loop@1",)),
    ]
    assert problems(caps, version=0) == [
        ("AMBIGUOUS_FACT_PROVIDER", ("amb@1", "amb1@1", "amb2@1")),
        ("CAPABILITY_DEPENDENCY_CYCLE", ("self@1",)),
        ("DUPLICATE_CAPABILITY", ("dup@1", "dup@2")),
        ("FACT_VERSION_MISMATCH", ("old@1", "order@2", "order1@1")),
        ("INVALID_AGENT_VERSION", ("0",)),
        ("INVALID_CAPABILITY_ID", ("Bad@1",)),
        ("INVALID_CAPABILITY_VERSION", ("v0@0",)),
        ("INVALID_OUTPUT_SCHEMA", ("badout@1",)),
        ("MISSING_FACT_PROVIDER", ("needs@1", "missing@1")),
        ("MODEL_SCHEMA_REQUIRED", ("noinput@1",)),
        ("WRITE_CONFIRMATION_REQUIRED", ("w@1",)),
    ]


def test_compile_error_is_a_seamkit_error_with_problems() -> None:
    from seamkit.errors import SeamkitError

    with pytest.raises(SeamkitError) as info:
        compile_agent([cap("w", effect="write")])
    assert isinstance(info.value, CompileError)
    assert all(isinstance(p, Problem) for p in info.value.problems)


def test_a_non_capability_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        compile_agent([cap("a"), {"id": "b"}])  # type: ignore[list-item]


# a valid agent --------------------------------------------------------------------------------


class OrderQuery(pydantic.BaseModel):
    order_id: int
    note: str = ""


@dataclasses.dataclass
class RefundInput:
    order_id: int
    amount_cents: int


class Node(pydantic.BaseModel):
    name: str
    children: list[Node] = []


def _desk() -> list[Capability]:
    return [
        cap("submit", requires=("order@1", "user@1"), provides=("receipt@1",), effect="write",
            confirmation="required", input=RefundInput),
        cap("find_order", requires=("user@1",), provides=("order@1",), effect="read", input=OrderQuery),
        cap("whoami", provides=("user@1",), effect="read"),
        cap("help"),
        cap("audit", requires=("user@1",)),
    ]


def test_order_puts_providers_before_consumers_ties_by_id() -> None:
    agent = compile_agent(_desk())
    assert agent.order == ("help", "whoami", "audit", "find_order", "submit")
    assert [c.id for c in agent.capabilities] == list(agent.order)
    assert agent.get("submit") is not None and agent.get("submit").effect == "write"  # type: ignore[union-attr]
    assert agent.get("nope") is None


def test_providers_map_each_fact_type_to_its_provider() -> None:
    assert dict(compile_agent(_desk()).providers) == {"user@1": "whoami", "order@1": "find_order",
                                                      "receipt@1": "submit"}


def test_input_schemas_are_what_the_model_sees() -> None:
    agent = compile_agent([*_desk(), cap("tree", input=Node)])
    schemas = agent.input_schemas
    assert set(schemas) == {"submit", "find_order", "whoami", "help", "audit", "tree"}
    assert schemas["find_order"] == OrderQuery.model_json_schema()
    assert schemas["find_order"]["required"] == ["order_id"]
    assert schemas["submit"]["type"] == "object"
    assert set(schemas["submit"]["properties"]) == {"order_id", "amount_cents"}
    assert schemas["submit"]["required"] == ["order_id", "amount_cents"]
    assert schemas["help"] == OBJ
    # a recursive pydantic model's schema is a root $ref to an object: the model sees an object
    assert schemas["tree"]["$ref"] == "#/$defs/Node"


def test_fingerprint_is_a_sha256_and_stable() -> None:
    a, b = compile_agent(_desk()), compile_agent(_desk())
    assert a.fingerprint == b.fingerprint
    assert len(a.fingerprint) == 64 and int(a.fingerprint, 16) >= 0


def _replace(caps: list[Capability], id: str, **changes: Any) -> list[Capability]:
    return [dataclasses.replace(c, **changes) if c.id == id else c for c in caps]


@pytest.mark.parametrize(
    "changes",
    [{"description": "find an order by id"}, {"requires": ()}, {"effect": "none"}, {"input": OBJ},
     {"version": 2}, {"provides": ("order@1", "extra@1")}, {"invalidates": ("user@1",)},
     {"output": {"type": "object"}}, {"confirmation": "required"}],
    ids=lambda c: next(iter(c)),
)
def test_fingerprint_changes_with_the_declaration(changes: dict[str, Any]) -> None:
    before = compile_agent(_desk()).fingerprint
    assert compile_agent(_replace(_desk(), "find_order", **changes)).fingerprint != before


def test_fingerprint_changes_with_the_input_schema_and_agent_version() -> None:
    class OrderQuery(pydantic.BaseModel):  # same name, one more field
        order_id: int
        note: str = ""
        urgent: bool = False

    before = compile_agent(_desk()).fingerprint
    assert compile_agent(_replace(_desk(), "find_order", input=OrderQuery)).fingerprint != before
    assert compile_agent(_desk(), version=2).fingerprint != before


def test_fingerprint_ignores_execute_and_registration_order() -> None:
    before = compile_agent(_desk())
    after = compile_agent(list(reversed(_replace(_desk(), "find_order", execute=_other_execute))))
    assert after.fingerprint == before.fingerprint
    assert after.order == before.order


def test_compiled_agent_is_immutable() -> None:
    agent = compile_agent(_desk())
    assert isinstance(agent, CompiledAgent)
    with pytest.raises(dataclasses.FrozenInstanceError):
        agent.fingerprint = "x"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        agent.capabilities = ()  # type: ignore[misc]
    assert isinstance(agent.capabilities, tuple)
    with pytest.raises(TypeError):
        agent.providers["user@1"] = "other"
    with pytest.raises(TypeError):
        agent.input_schemas["find_order"]["properties"]["order_id"] = {}
    with pytest.raises(TypeError):
        agent.input_schemas["find_order"]["required"].append("note")
    with pytest.raises(dataclasses.FrozenInstanceError):
        agent.capabilities[0].id = "x"  # type: ignore[misc]


def test_an_empty_agent_compiles() -> None:
    agent = compile_agent([])
    assert agent.order == () and dict(agent.providers) == {} and agent.version == 1
