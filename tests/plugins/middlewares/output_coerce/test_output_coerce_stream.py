"""output_coerce while the model streams: partials only when changed, growing, held or live text,
tool-call turns and calls without a schema untouched."""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

from coerce_fakes import GOOD, SCHEMA, grows, partials, request, run, text, turn, warnings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seamkit._accumulate import collect_result
from seamkit.testing import ScriptedTurn
from seamkit.values import ToolSchema, freeze
from seamkit_output_coerce import OutputCoerceMiddleware, partial_parser


async def test_partials_are_yielded_only_when_the_value_changed() -> None:
    deltas, _, _ = await run(OutputCoerceMiddleware(partial_min_growth=0), [turn(GOOD, chunk=1)])
    got = partials(deltas)
    assert len(got) >= 5
    assert all(a != b for a, b in pairwise(got))
    # one character at a time, most deltas leave the value unchanged (inside keys, whitespace...)
    n_text = len(json.dumps(GOOD))
    assert len(got) < n_text
    assert got[-1] == GOOD


async def test_partial_objects_grow_monotonically() -> None:
    deltas, _, _ = await run(OutputCoerceMiddleware(partial_min_growth=0), [turn(GOOD, chunk=3)])
    got = partials(deltas)
    assert got[0] == {}
    for a, b in pairwise(got):
        assert grows(a, b), (a, b)
    assert got[-1] == GOOD


async def test_text_is_held_until_it_validates_then_released_whole() -> None:
    deltas, _, _ = await run(OutputCoerceMiddleware(max_repairs=1), [turn(GOOD)])
    texts = [d.text for d in deltas if d.text]
    assert texts == [json.dumps(GOOD)]
    # the held text comes after every partial, and the stream folds into the model's answer
    first_text = next(i for i, d in enumerate(deltas) if d.text)
    assert all(d.partial_output is None for d in deltas[first_text:])
    result = await collect_result(iter(deltas))
    assert result.text == json.dumps(GOOD) and result.finish_reason == "stop" and not result.warnings


async def test_with_no_repairs_text_streams_through_as_it_arrives() -> None:
    deltas, _, _ = await run(OutputCoerceMiddleware(max_repairs=0, partial_min_growth=0), [turn(GOOD, chunk=4)])
    texts = [d.text for d in deltas if d.text]
    assert len(texts) == -(-len(json.dumps(GOOD)) // 4)
    assert "".join(texts) == json.dumps(GOOD)
    # partials interleave with the text they were parsed from
    kinds = ["t" if d.text else "p" for d in deltas if d.text or d.partial_output is not None]
    assert kinds.index("p") < len(kinds) - 1 - kinds[::-1].index("t")


async def test_invalid_answer_without_repairs_keeps_the_raw_text_and_warns() -> None:
    raw = json.dumps({"name": "x"})
    deltas, model, _ = await run(OutputCoerceMiddleware(max_repairs=0), [turn(raw)])
    assert text(deltas) == raw and model.calls == 1
    (w,) = warnings(deltas)
    assert "'n' is a required property" in w and "raw text is kept" in w


async def test_a_code_fenced_answer_gives_partials_and_validates() -> None:
    fenced = "```json\n" + json.dumps(GOOD) + "\n```"
    deltas, model, _ = await run(OutputCoerceMiddleware(partial_min_growth=0), [turn(fenced, chunk=2)])
    assert partials(deltas)[-1] == GOOD
    assert text(deltas) == fenced and not warnings(deltas) and model.calls == 1


async def test_growth_setting_bounds_the_number_of_parses() -> None:
    big = {"name": "n", "n": 1, "tags": [f"tag number {i}" for i in range(400)]}
    calls = {"n": 0}
    mw = OutputCoerceMiddleware(partial_min_growth=0.1)
    compiled = mw.compiled(request().output_schema)  # type: ignore[arg-type]
    inner = compiled.parse

    def counting(buffer: str) -> Any:
        calls["n"] += 1
        return inner(buffer)

    mw._compiled[request().output_schema] = type(compiled)(compiled.spec, counting)
    size = len(json.dumps(big))
    deltas, _, _ = await run(mw, [turn(big, chunk=4)])
    n_deltas = -(-size // 4)
    assert calls["n"] < n_deltas / 20  # about log(size / 40) / log(1.1) + 10, not one per delta
    assert partials(deltas)[-1] == big  # the complete text is always parsed at the end


async def test_tool_call_turns_pass_through_untouched() -> None:
    tool = ToolSchema("lookup", "find a person", freeze({"type": "object", "properties": {}}), False)
    turn_ = ScriptedTurn(text='{"name": "Ada"', tool_calls=({"name": "lookup", "arguments": {"q": "Ada"}},),
                         chunk_size=3)
    deltas, model, _ = await run(OutputCoerceMiddleware(max_repairs=2), [turn_], request(tools=(tool,)))
    assert model.calls == 1 and not warnings(deltas)
    result = await collect_result(iter(deltas))
    assert result.text == '{"name": "Ada"' and result.tool_calls[0].name == "lookup"
    assert result.finish_reason == "tool_calls"


async def test_calls_without_an_output_schema_are_not_touched() -> None:
    deltas, model, _ = await run(OutputCoerceMiddleware(max_repairs=3), [turn("not json at all", chunk=3)],
                                 request(schema=None))
    assert [d.text for d in deltas if d.text] == ["not", " js", "on ", "at ", "all"]
    assert not partials(deltas) and not warnings(deltas) and model.calls == 1


def test_fallback_parser_is_pydantic_core_partial_json() -> None:
    parse = partial_parser(SCHEMA, use_adapter=False)
    assert parse('{"name": "Ad') == {}
    assert parse('{"name": "Ada", "n": 1') == {"name": "Ada", "n": 1}
    assert parse("") is None and parse("prose") is None and parse('"\\u00') is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.dictionaries(st.text(max_size=5), json_values, max_size=5), chunk=st.integers(1, 7),
       indent=st.sampled_from([None, 1]))
async def test_property_partials_change_grow_and_end_at_the_document(value: dict[str, Any], chunk: int,
                                                                    indent: int | None) -> None:
    doc = json.dumps(value, indent=indent, ensure_ascii=bool(chunk % 2))
    mw = OutputCoerceMiddleware(max_repairs=0, partial_min_growth=0)
    deltas, _, _ = await run(mw, [turn(doc, chunk=chunk)], request({"type": "object"}))
    got = partials(deltas)
    assert got[-1] == value
    for a, b in pairwise(got):
        assert a != b and grows(a, b), (a, b)
    assert text(deltas) == doc and not warnings(deltas)


def test_default_parser_comes_from_seamkit_schemas() -> None:
    parse = partial_parser(SCHEMA)
    assert getattr(parse, "__module__", "").startswith("seamkit")
    assert parse('{"name": "Ad') == {"name": "Ad"}  # an unfinished string as its prefix
    assert parse('{"name": "Ada", "n": 18') == {"name": "Ada"}  # a number that may still grow: left out


async def test_an_unusable_schema_is_reported_and_the_call_passes_through() -> None:
    deltas, model, _ = await run(OutputCoerceMiddleware(), [turn("anything", chunk=4)],
                                 request({"type": "no such type"}))
    assert "output_schema is not usable" in warnings(deltas)[0]
    assert [d.text for d in deltas if d.text] == ["anyt", "hing"] and not partials(deltas) and model.calls == 1


async def test_held_text_keeps_the_other_fields_of_its_delta() -> None:
    from seamkit._middleware import Call, chain
    from seamkit.testing import make_test_ctx
    from seamkit.values import Delta, Usage

    async def terminal(call: Call) -> Any:
        yield Delta(text='{"name": "Ada", ')
        yield Delta(text='"n": 1}', usage=Usage(requests=1, output_tokens=9), finish_reason="stop", model="m1")

    run_chain = chain([OutputCoerceMiddleware(max_repairs=1)], terminal)
    deltas = [d async for d in run_chain(Call("chat", request(), make_test_ctx()))]
    assert [d.text for d in deltas if d.text] == ['{"name": "Ada", "n": 1}']
    result = await collect_result(iter(deltas))
    assert (result.usage.output_tokens, result.finish_reason, result.model) == (9, "stop", "m1")
    assert result.text == '{"name": "Ada", "n": 1}'
