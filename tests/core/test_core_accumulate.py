"""Joining a delta stream into an LLMResult (``seamkit._accumulate``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from seamkit._accumulate import Accumulator, collect_result
from seamkit.values import Delta, FrozenDict, FrozenList, ReasoningBlock, TextBlock, ToolCall, ToolCallDelta, Usage


def fold(deltas: list[Delta]) -> Any:
    acc = Accumulator("p", "m")
    for d in deltas:
        acc.add(d)
    return acc.result()


def test_text_reasoning_usage_and_finish() -> None:
    u = Usage(3, 4, requests=1, cost=Decimal("0.01"), cost_source="reported")
    r = fold([
        Delta(reasoning="think "), Delta(reasoning="more", reasoning_signature="sig"),
        Delta(text="Hel"), Delta(text="lo"), Delta(usage=Usage(1, 1, requests=1)), Delta(usage=u),
        Delta(finish_reason="length", model="m-2024", warning="seed ignored"),
    ])
    assert r.message.content == (ReasoningBlock("think more", "sig", "p", "m-2024"), TextBlock("Hello"))
    assert r.usage == u  # the last usage wins
    assert (r.finish_reason, r.model, r.warnings) == ("length", "m-2024", ("seed ignored",))


def test_defaults_without_usage_or_finish_reason() -> None:
    r = fold([Delta(text="x")])
    assert r.finish_reason == "stop" and r.usage == Usage(requests=1)
    r = fold([Delta(tool_call=ToolCallDelta(0, "c", "t", "{}"))])
    assert r.finish_reason == "tool_calls"


def test_tool_call_fragments_are_joined_per_call() -> None:
    r = fold([
        Delta(tool_call=ToolCallDelta(0, "a", "add", '{"a"')),
        Delta(tool_call=ToolCallDelta(1, "b", "mul", '{"x": ')),
        Delta(tool_call=ToolCallDelta(0, None, None, ": 1, ")),
        Delta(tool_call=ToolCallDelta(1, None, None, "[1, 2]}")),
        Delta(tool_call=ToolCallDelta(0, None, None, '"b": 2}')),
        Delta(finish_reason="tool_calls"),
    ])
    assert r.tool_calls == (ToolCall("a", "add", {"a": 1, "b": 2}), ToolCall("b", "mul", {"x": [1, 2]}))


def test_parallel_calls_on_index_zero_with_different_ids_stay_apart() -> None:
    r = fold([
        Delta(tool_call=ToolCallDelta(0, "a", "add", '{"a": 1}')),
        Delta(tool_call=ToolCallDelta(0, "b", "add", '{"a": ')),
        Delta(tool_call=ToolCallDelta(0, None, None, "2}")),
    ])
    assert r.tool_calls == (ToolCall("a", "add", {"a": 1}), ToolCall("b", "add", {"a": 2}))


def test_late_id_and_name_fill_in() -> None:
    r = fold([
        Delta(tool_call=ToolCallDelta(0, None, None, '{"q":')),
        Delta(tool_call=ToolCallDelta(0, "late", "search", ' "x"}')),
    ])
    assert r.tool_calls == (ToolCall("late", "search", {"q": "x"}),)


def test_missing_and_duplicate_ids_get_unique_synthetic_ids() -> None:
    r = fold([
        Delta(tool_call=ToolCallDelta(0, None, "a", "{}")),
        Delta(tool_call=ToolCallDelta(1, None, "b", "{}")),
        Delta(tool_call=ToolCallDelta(2, "same", "c", "{}")),
        Delta(tool_call=ToolCallDelta(3, "same", "d", "{}")),
    ])
    ids = [c.id for c in r.tool_calls]
    assert len(set(ids)) == 4 and all(ids)
    assert ids[2] == "same"
    assert [c.name for c in r.tool_calls] == ["a", "b", "c", "d"]
    assert [c.arguments for c in r.tool_calls] == [{}] * 4


def test_empty_arguments_are_an_empty_object() -> None:
    r = fold([Delta(tool_call=ToolCallDelta(0, "c", "now", "")), Delta(tool_call=ToolCallDelta(0, None, None, " "))])
    assert r.tool_calls[0].arguments == {}


@pytest.mark.parametrize(("raw", "why"), [
    ('{"a": ', "not valid JSON"), ("[1, 2]", "not a JSON object but an array"), ("null", "not a JSON object but null"),
    ('"s"', "not a JSON object but a string"), ("{'a': 1}", "not valid JSON"), ('{"a": NaN}', "not usable JSON"),
])
def test_unusable_arguments_mark_the_call_instead_of_failing(raw: str, why: str) -> None:
    r = fold([Delta(tool_call=ToolCallDelta(0, "c", "t", raw)), Delta(tool_call=ToolCallDelta(1, "d", "u", "{}"))])
    bad, good = r.tool_calls
    assert (bad.id, bad.name, bad.arguments) == ("c", "t", {}) and why in (bad.arguments_error or "")
    assert good.arguments_error is None and good.arguments == {}


async def test_collect_result_accepts_async_and_sync_iterables() -> None:
    deltas = [Delta(text="a"), Delta(text="b"), Delta(finish_reason="stop")]

    async def agen() -> AsyncIterator[Delta]:
        for d in deltas:
            yield d

    assert (await collect_result(agen(), provider="p")).text == "ab"
    assert (await collect_result(iter(deltas))).text == "ab"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10) | st.floats(allow_nan=False, allow_infinity=False),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
    max_leaves=10,
)
arguments = st.dictionaries(st.text(max_size=8), json_values, max_size=5)


def split_at(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(c, len(text)) for c in cuts})
    pieces, last = [], 0
    for p in points:
        pieces.append(text[last:p])
        last = p
    pieces.append(text[last:])
    return pieces


@given(arguments, st.lists(st.integers(0, 400), max_size=20), arguments, st.lists(st.integers(0, 400), max_size=20))
def test_any_fragmentation_gives_the_same_calls(
    args1: dict[str, Any], cuts1: list[int], args2: dict[str, Any], cuts2: list[int]
) -> None:
    raw1, raw2 = json.dumps(args1), json.dumps(args2, indent=1)
    pieces1, pieces2 = split_at(raw1, cuts1), split_at(raw2, cuts2)
    deltas = [Delta(tool_call=ToolCallDelta(0, "c1", "one", pieces1[0])),
              Delta(tool_call=ToolCallDelta(1, "c2", "two", pieces2[0]))]
    # interleave the remaining fragments of both calls
    rest1 = [Delta(tool_call=ToolCallDelta(0, None, None, p)) for p in pieces1[1:]]
    rest2 = [Delta(tool_call=ToolCallDelta(1, None, None, p)) for p in pieces2[1:]]
    while rest1 or rest2:
        if rest1:
            deltas.append(rest1.pop(0))
        if rest2:
            deltas.append(rest2.pop(0))
    r = fold(deltas)
    assert r.tool_calls == (ToolCall("c1", "one", args1), ToolCall("c2", "two", args2))
    whole = fold([Delta(tool_call=ToolCallDelta(0, "c1", "one", raw1)),
                  Delta(tool_call=ToolCallDelta(1, "c2", "two", raw2))])
    assert whole.tool_calls == r.tool_calls
    for call in r.tool_calls:
        assert_deeply_frozen(call.arguments)
        hash(call.arguments)


def assert_deeply_frozen(value: Any) -> None:
    if isinstance(value, dict):
        assert type(value) is FrozenDict
        for v in value.values():
            assert_deeply_frozen(v)
    elif isinstance(value, list):
        assert type(value) is FrozenList
        for v in value:
            assert_deeply_frozen(v)


def test_ids_repeated_on_every_fragment_continue_the_call() -> None:
    r = fold([
        Delta(tool_call=ToolCallDelta(0, "c", "t", '{"a"')),
        Delta(tool_call=ToolCallDelta(0, "c", None, ": 1}")),
    ])
    assert r.tool_calls == (ToolCall("c", "t", {"a": 1}),)


async def test_raw_usage_of_the_last_delta_reaches_the_result() -> None:
    from seamkit._accumulate import collect_result
    from seamkit.values import Delta, Usage

    deltas = [
        Delta(text="a", raw_usage={"prompt_tokens": 1}),
        Delta(finish_reason="stop", usage=Usage(input_tokens=3, requests=1), raw_usage={"prompt_tokens": 3}),
    ]
    result = await collect_result(deltas)
    assert result.raw_usage == {"prompt_tokens": 3}
    assert (await collect_result([Delta(text="x")])).raw_usage is None
