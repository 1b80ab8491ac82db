"""The seamkit-evals checks (exact, contains, regex, json_schema, output_equals, tool_called,
max_cost, max_latency, citations), each built through the registry from YAML as a suite writes it."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

import attrs
import pytest
from evals_testlib import FREE, attempt, build, ectx, failed_attempt, located_issues, with_tools
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel
from seamkit._agent.agent import Agent
from seamkit._evals import Attempt, EvalCase, Evaluator, Score, evaluate
from seamkit._grounding import MemoryItem, citation_id
from seamkit._request.builder import RequestBuilder
from seamkit._tools import tool
from seamkit.errors import ConfigError
from seamkit.testing import ScriptedModel
from seamkit.values import Message, Usage
from seamkit_evals.checks import diff, lookup, same, to_plain


class Address(BaseModel):
    city: str
    zip: str | None = None


class Person(BaseModel):
    name: str
    age: int
    address: Address
    tags: list[str] = []


@dataclasses.dataclass
class Point:
    x: int
    y: float


@attrs.define
class Box:
    label: str
    size: int


ALICE = Person(name="Alice", age=41, address=Address(city="Oslo"), tags=["a", "b"])


async def score(yaml_text: str, a: Attempt) -> Score:
    ev = build(yaml_text)
    assert isinstance(ev, Evaluator)
    return await evaluate(ev, a, ectx())


def test_every_evaluator_is_registered_with_its_config() -> None:
    from seamkit._plugins.registry import get_registry

    reg = get_registry()
    names = {"exact", "contains", "regex", "json_schema", "output_equals", "tool_called", "max_cost",
             "max_latency", "citations", "llm_judge"}
    assert names <= set(reg.names("evaluator"))
    for n in names:
        spec = reg.resolve("evaluator", n)
        assert spec.distribution == "seamkit-evals" and spec.config_model() is not None and spec.description


async def test_the_display_name_defaults_to_the_registered_name() -> None:
    assert build("{use: exact}").name == "exact"
    s = await score("{use: exact, name: answer is 4, expected: '4'}", attempt("4"))
    assert s.evaluator == "answer is 4" and s.passed


# -- a failed run passes nothing -------------------------------------------------------------------

FAILED_EVERYWHERE = [
    "{use: exact, expected: x}", "{use: contains, text: x}", "{use: regex, pattern: x}",
    "{use: json_schema, schema: {type: object}}", "{use: output_equals, expected: {a: 1}}",
    "{use: tool_called, tool: t, max_times: 0}", "{use: max_cost, usd: '1'}", "{use: max_latency, seconds: 100}",
    "{use: citations}",
]


@pytest.mark.parametrize("yaml_text", FAILED_EVERYWHERE)
async def test_a_failed_run_fails_every_check_with_its_error(yaml_text: str) -> None:
    s = await score(yaml_text, failed_attempt("ProviderError(timeout): too slow"))
    assert s.status == "fail" and s.reason.startswith("the run failed: ProviderError(timeout): too slow")


# -- exact ----------------------------------------------------------------------------------------


async def test_exact_defaults_to_the_cases_expected_and_strips() -> None:
    assert (await score("{use: exact}", attempt("  Paris\n", expected="Paris"))).passed
    s = await score("{use: exact}", attempt("Paris.", expected="Paris"))
    assert s.status == "fail" and s.value == 0.0 and "expected 'Paris', got 'Paris.'" in s.reason
    assert (await score("{use: exact, strip: false}", attempt(" Paris", expected="Paris"))).status == "fail"


async def test_exact_is_case_sensitive_unless_told_and_folds_unicode() -> None:
    assert (await score("{use: exact, expected: paris}", attempt("Paris"))).status == "fail"
    assert (await score("{use: exact, expected: paris, case_sensitive: false}", attempt("PARIS"))).passed
    # case folding, not lowercasing: ß folds to ss
    assert (await score("{use: exact, expected: STRASSE, case_sensitive: false}", attempt("Straße"))).passed
    # é as one code point equals e + combining accent (NFC)
    assert (await score("{use: exact, expected: \"caf\\u00e9\"}", attempt("cafe\u0301"))).passed


async def test_exact_without_any_expected_value_is_an_error() -> None:
    s = await score("{use: exact}", attempt("x"))
    assert s.status == "error" and "nothing to compare with" in s.reason
    # an explicit `expected: null` is a value to compare with, not a missing one
    s = await score("{use: exact, expected: null}", attempt(ALICE))
    assert s.status == "fail" and "expected null, got" in s.reason


async def test_exact_reads_a_field_of_a_typed_output_or_of_json_text() -> None:
    assert (await score("{use: exact, field: address.city, expected: Oslo}", attempt(ALICE))).passed
    assert (await score("{use: exact, field: tags.1, expected: b}", attempt(ALICE))).passed
    assert (await score("{use: exact, field: age, expected: 41}", attempt(ALICE))).passed
    assert (await score("{use: exact, field: age, expected: '41'}", attempt(ALICE))).passed  # text vs 41 as text
    assert (await score("{use: exact, field: a.b, expected: 2}", attempt('```json\n{"a": {"b": 2}}\n```'))).passed


async def test_a_missing_field_is_a_fail_naming_the_path_not_an_exception() -> None:
    s = await score("{use: exact, field: address.country, expected: 'NO'}", attempt(ALICE))
    assert s.status == "fail" and "'address.country' is missing" in s.reason and "address" in s.reason
    s = await score("{use: exact, field: tags.5, expected: x}", attempt(ALICE))
    assert s.status == "fail" and "'tags.5' is missing" in s.reason and "a list of 2" in s.reason
    s = await score("{use: exact, field: a, expected: x}", attempt("plain words"))
    assert s.status == "fail" and "the answer is text, not JSON" in s.reason
    s = await score("{use: exact, field: zip.code, expected: x}", attempt(ALICE))
    assert s.status == "fail" and "missing" in s.reason


async def test_exact_compares_typed_outputs_as_plain_data() -> None:
    assert (await score("{use: exact, expected: {x: 1, y: 2}}", attempt(Point(1, 2.0)))).passed
    assert (await score("{use: exact, expected: {label: a, size: 3}}", attempt(Box("a", 3)))).passed
    assert (await score("{use: exact, expected: {x: 1, y: 3}}", attempt(Point(1, 2.0)))).status == "fail"


async def test_a_none_output_with_no_text_is_compared_as_empty_text() -> None:
    a = attempt(None, transcript=(Message.user("q"),))
    s = await score("{use: exact, expected: x}", a)
    assert s.status == "fail" and "got ''" in s.reason


# -- contains, regex --------------------------------------------------------------------------------


async def test_contains_all_any_and_case() -> None:
    a = attempt("The capital of France is Paris.")
    assert (await score("{use: contains, text: paris}", a)).passed  # case-insensitive by default
    assert (await score("{use: contains, text: paris, case_sensitive: true}", a)).status == "fail"
    s = await score("{use: contains, text: [Paris, Lyon, France]}", a)
    assert s.status == "fail" and s.value == pytest.approx(2 / 3) and "missing 'Lyon'" in s.reason
    assert (await score("{use: contains, text: [Lyon, Paris], all: false}", a)).passed
    assert (await score("{use: contains, text: [Lyon, Nice], all: false}", a)).status == "fail"
    assert (await score("{use: contains, text: STRASSE}", attempt("an der Straße"))).passed


async def test_contains_defaults_to_the_expected_text_or_list() -> None:
    assert (await score("{use: contains}", attempt("it is 42", expected="42"))).passed
    assert (await score("{use: contains}", attempt("red and blue", expected=["red", "blue"]))).passed
    s = await score("{use: contains}", attempt("x", expected={"a": 1}))
    assert s.status == "error" and "nothing to look for" in s.reason


async def test_contains_a_field_of_the_typed_output() -> None:
    assert (await score("{use: contains, field: address.city, text: osl}", attempt(ALICE))).passed
    assert (await score("{use: contains, text: '\"city\": \"Oslo\"'}", attempt(ALICE))).passed  # JSON text


async def test_regex_searches_with_flags() -> None:
    a = attempt("Total: 42 EUR\nthanks")
    assert (await score("{use: regex, pattern: '\\d+ EUR'}", a)).passed
    assert (await score("{use: regex, pattern: '^thanks$'}", a)).status == "fail"
    assert (await score("{use: regex, pattern: '^thanks$', flags: [m]}", a)).passed
    assert (await score("{use: regex, pattern: 'total.*thanks', flags: [i, s]}", a)).passed
    s = await score("{use: regex, pattern: 'USD'}", a)
    assert s.status == "fail" and "/USD/ does not match" in s.reason
    assert (await score("{use: regex, field: age, pattern: '^4\\d$'}", attempt(ALICE))).passed


# -- json_schema ------------------------------------------------------------------------------------

SCHEMA = ("{type: object, properties: {num: {type: integer}, tags: {type: array, items: {type: string}}}, "
          "required: [num]}")


async def test_json_schema_validates_json_text_and_typed_outputs() -> None:
    assert (await score(f"{{use: json_schema, schema: {SCHEMA}}}", attempt('{"num": 3, "tags": ["a"]}'))).passed
    assert (await score(f"{{use: json_schema, schema: {SCHEMA}}}", attempt('```json\n{"num": 3}\n```'))).passed
    s = await score(f"{{use: json_schema, schema: {SCHEMA}}}", attempt('{"num": "3", "tags": ["a", 2]}'))
    assert s.status == "fail" and "2 schema errors" in s.reason
    assert "$.num: '3' is not of type 'integer'" in s.reason and "$.tags[1]: 2 is not of type 'string'" in s.reason
    s = await score(f"{{use: json_schema, schema: {SCHEMA}}}", attempt("num is 3"))
    assert s.status == "fail" and s.reason.startswith("the answer is not JSON")
    person = "{type: object, required: [name, age], properties: {age: {type: integer, minimum: 50}}}"
    s = await score(f"{{use: json_schema, schema: {person}}}", attempt(ALICE))
    assert s.status == "fail" and "$.age: 41 is less than the minimum of 50" in s.reason
    assert (await score("{use: json_schema, field: address, schema: {required: [city]}}", attempt(ALICE))).passed


# -- output_equals ----------------------------------------------------------------------------------


async def test_output_equals_compares_the_typed_output_field_by_field() -> None:
    expected = {"name": "Alice", "age": 41, "address": {"city": "Oslo", "zip": None}, "tags": ["a", "b"]}
    assert (await score("{use: output_equals}", attempt(ALICE, expected=expected))).passed
    wrong = {**expected, "age": 40, "address": {"city": "Bergen", "zip": None}}
    s = await score("{use: output_equals}", attempt(ALICE, expected=wrong))
    assert s.status == "fail"
    assert "age: expected 40, got 41" in s.reason and "address.city: expected 'Bergen', got 'Oslo'" in s.reason
    s = await score("{use: output_equals, expected: {name: Alice}}", attempt(ALICE))
    assert s.status == "fail" and "age: not expected (got 41)" in s.reason
    s = await score("{use: output_equals, expected: {name: Alice, nick: Al}, fields: [name]}", attempt(ALICE))
    assert s.passed
    s = await score("{use: output_equals, expected: {nick: Al}, fields: [nick]}", attempt(ALICE))
    assert s.status == "fail" and "nick: missing" in s.reason
    s = await score("{use: output_equals, expected: {a: 1}, fields: [b]}", attempt(ALICE))
    assert s.status == "error" and "the expected value has no field 'b'" in s.reason


async def test_output_equals_on_dataclass_attrs_and_mapping_outputs() -> None:
    assert (await score("{use: output_equals, expected: {x: 1, y: 2.5}}", attempt(Point(1, 2.5)))).passed
    assert (await score("{use: output_equals, expected: {label: a, size: 3}}", attempt(Box("a", 3)))).passed
    s = await score("{use: output_equals, expected: {label: a, size: 4}}", attempt(Box("a", 3)))
    assert s.reason == "size: expected 4, got 3"
    assert (await score("{use: output_equals, expected: {k: [1, 2]}}", attempt({"k": (1, 2)}))).passed
    s = await score("{use: output_equals, expected: {k: true}}", attempt({"k": 1}))
    assert s.status == "fail" and "k: expected true, got 1" in s.reason
    s = await score("{use: output_equals, expected: 3}", attempt(None))
    assert s.status == "fail" and "(the value): expected 3, got null" in s.reason


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                    max_leaves=10))
def test_plain_data_equals_itself_and_diff_agrees_with_same(value: Any) -> None:
    assert same(value, value) and diff(value, value) == []
    assert same(to_plain(value), value)
    other = {"wrapped": value}
    assert not same(other, value) and diff(other, value) != []


def test_same_keeps_bools_apart_from_numbers() -> None:
    assert same(1, 1.0) and same(Decimal("1.50"), 1.5) and not same(True, 1) and not same(0, False)
    assert not same({"a": 1}, {"a": 1, "b": None}) and not same([1], (1, 2))


def test_lookup_names_the_part_that_is_missing() -> None:
    assert lookup({"a": [{"b": 1}]}, "a.0.b") == (1, None)
    value, why = lookup({"a": [{"b": 1}]}, "a.0.c")
    assert value is None and why is not None and "a.0 (a mapping with keys b) has no 'c'" in why
    assert lookup(ALICE, "address.city") == ("Oslo", None)
    assert lookup(ALICE, "__class__")[1] is not None  # private attributes are not reachable
    assert lookup(ALICE, "model_dump")[1] is not None and lookup(Point(1, 2), "x") == (1, None)  # fields only


# -- tool_called ------------------------------------------------------------------------------------


async def test_tool_called_counts_calls_with_matching_arguments() -> None:
    a = with_tools(("weather", {"city": "Oslo", "unit": "c"}), ("weather", {"city": "Bergen"}), ("clock", {}))
    assert (await score("{use: tool_called, tool: weather}", a)).passed
    assert (await score("{use: tool_called, tool: weather, arguments: {city: Oslo}}", a)).passed
    s = await score("{use: tool_called, tool: weather, arguments: {city: Oslo}, min_times: 2}", a)
    assert s.status == "fail" and "called 1 time with matching arguments" in s.reason
    assert "city: expected 'Oslo', got 'Bergen'" in s.reason
    assert (await score("{use: tool_called, tool: weather, arguments: {city: {regex: '^(Oslo|Bergen)$'}}, "
                        "min_times: 2, max_times: 2}", a)).passed
    s = await score("{use: tool_called, tool: weather, max_times: 1}", a)
    assert s.status == "fail" and "weather was called 2 times (wanted exactly 1)" in s.reason
    s = await score("{use: tool_called, tool: search}", a)
    assert s.status == "fail" and "tools called: clock, weather" in s.reason


async def test_max_times_zero_means_the_tool_must_not_be_called() -> None:
    a = with_tools(("delete_all", {}))
    s = await score("{use: tool_called, tool: delete_all, max_times: 0}", a)
    assert s.status == "fail" and "wanted exactly 0" in s.reason
    assert (await score("{use: tool_called, tool: delete_all, max_times: 0}", with_tools())).passed


async def test_tool_called_on_a_real_run() -> None:
    @tool(side_effecting=False)
    def lookup_city(city: str, days: int = 1) -> str:
        """Look up the weather."""
        return f"sunny in {city}"

    call = {"name": "lookup_city", "arguments": {"city": "Oslo", "days": 3}}
    model = ScriptedModel([{"tool_calls": [call]}, "Sunny."])
    result = await Agent(model, tools=[lookup_city]).run("weather?")
    a = Attempt(EvalCase("c", "weather?"), 0, result, None, 0.1)
    assert (await score("{use: tool_called, tool: lookup_city, arguments: {days: 3, city: {regex: osl}}}",
                        a)).status == "fail"  # regex is case-sensitive as written
    assert (await score("{use: tool_called, tool: lookup_city, arguments: {days: 3, city: {regex: '(?i)osl'}}}",
                        a)).passed
    assert (await score("{use: tool_called, tool: lookup_city, arguments: {days: {regex: '^3$'}}}", a)).passed


# -- max_cost, max_latency -------------------------------------------------------------------------


def priced(cost: str) -> Usage:
    return Usage(input_tokens=100, output_tokens=20, requests=1, cost=Decimal(cost), cost_source="estimated")


async def test_max_cost_compares_decimals_exactly() -> None:
    assert (await score("{use: max_cost, usd: '0.3'}", attempt("x", usage=priced("0.3")))).passed  # equal passes
    s = await score("{use: max_cost, usd: 0.3}", attempt("x", usage=priced("0.30000001")))
    assert s.status == "fail" and "cost $0.30000001, over the ceiling of $0.3" in s.reason
    # 0.1 + 0.2 is 0.3 exactly as Decimal: no float rounding lets it through or fails it
    assert (await score("{use: max_cost, usd: 0.3}", attempt("x", usage=priced("0.1") + priced("0.2")))).passed


async def test_an_unpriced_run_is_an_error_never_a_pass() -> None:
    s = await score("{use: max_cost, usd: '100'}", attempt("x", usage=Usage(input_tokens=5, requests=1)))
    assert s.status == "error" and "the cost is unknown" in s.reason


async def test_a_local_or_cached_run_costs_zero_and_says_so() -> None:
    s = await score("{use: max_cost, usd: 0}", attempt("x", usage=FREE))
    assert s.passed and "(a local model)" in s.reason
    cached = Usage(input_tokens=5, requests=1, cost=Decimal(0), cost_source="cache")
    assert "(answered from a cache)" in (await score("{use: max_cost, usd: 0}", attempt("x", usage=cached))).reason


async def test_max_latency() -> None:
    assert (await score("{use: max_latency, seconds: 2}", attempt("x", latency=2.0))).passed
    s = await score("{use: max_latency, seconds: 1.5}", attempt("x", latency=2.25))
    assert s.status == "fail" and "took 2.250s, over the ceiling of 1.5s" in s.reason
    s = await score("{use: max_latency, seconds: 100}", failed_attempt())
    assert s.status == "fail" and "the run failed" in s.reason and "after 7.500s" in s.reason


# -- citations -------------------------------------------------------------------------------------

S1, S2 = citation_id("docs/a.md"), citation_id("docs/b.md")


async def test_citations_shown_by_a_tool_result_pass_and_invented_ones_fail() -> None:
    a = with_tools(("search", {"q": "x"}), results=(f"[{S1}] docs/a.md: alpha",), answer=f"Alpha [{S1}].")
    assert (await score("{use: citations}", a)).passed
    b = with_tools(("search", {"q": "x"}), results=(f"[{S1}] docs/a.md: alpha",), answer=f"Alpha [{S1}, s0a0b0c].")
    s = await score("{use: citations}", b)
    assert s.status == "fail" and s.reason.endswith("never shown to the model: s0a0b0c")


async def test_citations_require_and_no_citations() -> None:
    assert (await score("{use: citations}", attempt("no sources"))).passed
    s = await score("{use: citations, require: true}", attempt("no sources"))
    assert s.status == "fail" and "a citation is required" in s.reason


async def test_citations_from_the_grounding_of_a_real_run() -> None:
    class Docs:
        async def retrieve(self, query: str, *, scope: Any, k: int = 5) -> list[MemoryItem]:
            return [MemoryItem("alpha", "docs/a.md")]

    async def run(answer: str) -> Attempt:
        agent = Agent(ScriptedModel([answer]), request_builder=RequestBuilder(grounding=Docs()))
        return Attempt(EvalCase("c", "q"), 0, await agent.run("q"), None, 0.1)

    # the grounding is in the request's prefix, not in the transcript: the check reads the run's citation_ids
    assert (await score("{use: citations, require: true}", await run(f"Alpha [{S1}]."))).passed
    s = await score("{use: citations}", await run(f"Alpha [{S1}] and [{S2}]."))
    assert s.status == "fail" and S2 in s.reason and S1 not in s.reason.split(":")[-1]


# -- config errors, located ---------------------------------------------------------------------------

BAD = """\
evaluators:
  - {use: regex, pattern: "(unclosed"}
  - use: json_schema
    schema: {type: objekt}
  - {use: max_cost, usd: "-0.01"}
  - {use: max_latency, seconds: 0}
  - {use: tool_called, tool: t, min_times: 3, max_times: 1}
  - {use: tool_called, tool: t, arguments: {city: {regex: "[a-"}}}
  - {use: contains, text: []}
  - {use: exact, feild: a}
  - {use: regex, pattern: a, flags: [x]}
  - {use: exact, field: "a..b"}
  - {use: max_cost, usd: lots}
  - {use: exactt}
"""


def test_config_errors_are_reported_at_their_yaml_location() -> None:
    issues = located_issues(BAD)
    by_path = {i.path: i for i in issues}
    regex = by_path["evaluators[0].pattern"]
    assert (regex.file, regex.line) == ("suite.yaml", 2) and "not a valid regular expression" in regex.message
    schema = by_path["evaluators[1].schema"]
    assert schema.line == 4 and "not a valid JSON Schema" in schema.message and "objekt" in schema.message
    assert by_path["evaluators[2].usd"].line == 5 and "cannot be negative" in by_path["evaluators[2].usd"].message
    assert by_path["evaluators[3].seconds"].line == 6
    assert "min_times (3) is above max_times (1)" in by_path["evaluators[4]"].message
    assert "city.regex: not a valid regular expression" in by_path["evaluators[5].arguments"].message
    assert by_path["evaluators[5].arguments"].line == 8
    assert "non-empty text" in by_path["evaluators[6].text"].message
    assert "feild" in by_path["evaluators[7].feild"].message
    assert by_path["evaluators[8].flags[0]"].line == 11
    assert "field path" in by_path["evaluators[9].field"].message
    assert "not a decimal number" in by_path["evaluators[10].usd"].message
    assert "unknown evaluator 'exactt'" in by_path["evaluators[11].use"].message
    assert "did you mean 'exact'" in by_path["evaluators[11].use"].message
    assert len(issues) == 12


def test_valid_evaluators_load_without_issues() -> None:
    good = """\
evaluators:
  - {use: exact, name: exact answer, expected: "4", case_sensitive: false, strip: true}
  - {use: contains, text: [a, b], all: false, case_sensitive: true, field: x.y}
  - {use: regex, pattern: '^\\d+$', flags: [i, m, s]}
  - {use: json_schema, schema: {type: object, required: [a]}, field: out}
  - {use: output_equals, expected: {a: 1}, fields: [a]}
  - {use: tool_called, tool: search, arguments: {q: {regex: "^x"}, n: 3}, min_times: 1, max_times: 2}
  - {use: max_cost, usd: "0.05"}
  - {use: max_latency, seconds: 2.5}
  - {use: citations, require: true}
"""
    assert located_issues(good) == []


def test_the_registry_build_raises_config_errors_with_key_paths() -> None:
    with pytest.raises(ConfigError) as info:
        build("{use: regex, pattern: '['}")
    assert info.value.issues[0].path == "pattern"
    with pytest.raises(ConfigError) as info:
        build("{use: json_schema, schema: {type: 12}}")
    assert info.value.issues[0].path == "schema"


def test_max_cost_reads_the_ceiling_exactly() -> None:
    assert build("{use: max_cost, usd: 0.1}").usd == Decimal("0.1")
    assert build("{use: max_cost, usd: '0.000001'}").usd == Decimal("0.000001")
    assert build("{use: max_cost, usd: 2}").usd == Decimal(2)
    for bad in ("true", "'NaN'", "'Infinity'", "[1]"):
        with pytest.raises(ConfigError):
            build(f"{{use: max_cost, usd: {bad}}}")


@given(st.text(min_size=1, max_size=20).filter(str.strip), st.text(max_size=20), st.text(max_size=20))
def test_contains_finds_any_text_set_apart_in_the_answer(needle: str, before: str, after: str) -> None:
    import asyncio

    a = attempt(f"{before} {needle} {after}")
    for case_sensitive in (True, False):
        check = build(f"{{use: contains, case_sensitive: {str(case_sensitive).lower()}}}")
        check = dataclasses.replace(check, text=(needle,))
        s = asyncio.run(evaluate(check, a, ectx()))
        assert s.passed, (needle, before, after, s.reason)
