"""The ``importance`` compactor: invariants at every budget and every answer (hypothesis), the
schema-checked selection, and the fallback on invalid answers."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llm_compactor_fakes import RecordingMiddleware, budgets, filler
from seamkit._compaction import CompactorPort, check_invariants, split_leading_system, transcript_tokens, turn_units
from seamkit._plugins.registry import get_registry
from seamkit.errors import ConfigError
from seamkit.testing import ScriptedModel, make_test_ctx
from seamkit.testing._transcripts import transcripts
from seamkit.values import ChatRequest, Message, ToolCall, ToolResult, freeze
from seamkit_compactors_llm.config import ImportanceConfig
from seamkit_compactors_llm.importance import ImportanceCompactor, parse_selection, selection_schema

PROPS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def compactor(answer: Any, **cfg: Any) -> tuple[ImportanceCompactor, ScriptedModel]:
    model = ScriptedModel([answer], repeat=True)
    c = ImportanceCompactor(ImportanceConfig.model_validate({"model": "scripted", **cfg}), model=model)
    return c, model


def numbered(n: int, size: int = 50) -> tuple[Message, ...]:
    """A system message then ``n`` units: user texts and tool units alternating (unit i mentions i)."""
    msgs: list[Message] = [Message.system("You are terse.")]
    for i in range(n):
        if i % 2:
            msgs.append(Message("assistant", (ToolCall(f"c{i}", "search", freeze({"q": f"topic {i}"})),)))
            msgs.append(Message("tool", (ToolResult(f"c{i}", "search", f"unit {i} " + filler(size)),)))
        else:
            msgs.append(Message.user(f"unit {i} " + filler(size)))
    return tuple(msgs)


def test_it_is_a_compactor_port() -> None:
    c, _ = compactor("{}")
    assert isinstance(c, CompactorPort) and c.name == "importance"


@st.composite
def answers(draw: st.DrawFn, n: int) -> str:
    kind = draw(st.sampled_from(["valid", "valid", "out_of_range", "repeat", "garbage", "wrong_key", "fenced"]))
    if kind in ("valid", "fenced"):
        keep = draw(st.lists(st.integers(0, max(0, n - 1)), unique=True, max_size=n)) if n else []
        text = json.dumps({"keep": keep})
        return f"```json\n{text}\n```" if kind == "fenced" else text
    if kind == "out_of_range":
        return json.dumps({"keep": [n + draw(st.integers(0, 5))]})
    if kind == "repeat":
        return json.dumps({"keep": [0, 0]})
    if kind == "wrong_key":
        return json.dumps({"kept": [0]})
    return draw(st.text(max_size=20))


@pytest.mark.parametrize("keep", [1, 3])
@PROPS
@given(data=st.data())
def test_invariants_hold_at_every_budget_and_answer(keep: int, data: st.DataObject) -> None:
    msgs = data.draw(transcripts())
    budget = data.draw(budgets(msgs))

    def answer(request: ChatRequest) -> str:
        n = request.output_schema["properties"]["keep"]["items"]["maximum"] + 1  # type: ignore[index]
        return data.draw(answers(n))

    c, model = compactor(answer, keep_recent_units=keep)
    after = asyncio.run(c.compact(msgs, budget_tokens=budget))
    assert type(after) is tuple
    assert check_invariants(msgs, after, budget_tokens=budget) == []
    system, rest = split_leading_system(msgs)
    head = (system,) if system else ()
    units = turn_units(rest)
    if transcript_tokens(msgs) <= budget or len(units) <= keep:
        assert after == msgs and model.calls == 0
        return
    recent = [m for u in units[-keep:] for m in u]
    assert list(after[len(after) - len(recent):]) == recent  # the newest units always survive
    assert after[:len(head)] == head
    if transcript_tokens(head) + sum(transcript_tokens(u) for u in units[-keep:]) <= budget:
        assert transcript_tokens(after) <= budget  # whatever the answer, the result fits when it can


async def test_the_chosen_units_are_kept_in_their_original_order() -> None:
    msgs = numbered(8)
    c, model = compactor('{"keep": [5, 0, 2]}', keep_recent_units=2)
    after = await c.compact(msgs, budget_tokens=transcript_tokens(msgs) - 1)
    units = turn_units(msgs[1:])
    assert after == (msgs[0], *units[0], *units[2], *units[5], *units[6], *units[7])
    (req,) = model.requests
    assert req.output_schema is not None and list(req.output_schema["required"]) == ["keep"]
    prompt = req.messages[1].text
    assert "[0] (" in prompt and "[5] (" in prompt and "[6] (" not in prompt  # kept units are not offered
    assert "unit 7" not in prompt and "You are terse." not in prompt


async def test_choices_past_the_allowance_are_skipped_in_the_models_order() -> None:
    msgs = numbered(6)
    units = turn_units(msgs[1:])
    fixed = transcript_tokens(msgs[:1]) + transcript_tokens(units[-1])
    assert transcript_tokens(units[2]) < transcript_tokens(units[1])
    budget = fixed + transcript_tokens(units[3]) + transcript_tokens(units[2]) + 1  # room for 3 and 2, not 1
    ctx = make_test_ctx()
    c, _ = compactor('{"keep": [3, 1, 2]}', keep_recent_units=1)
    after = await c.compact(msgs, budget_tokens=budget, ctx=ctx)
    assert after == (msgs[0], *units[2], *units[3], *units[5])  # 1 does not fit; 2 still does
    assert "dropped [1]" in ctx.state["seamkit.compaction.notes"][0]


@pytest.mark.parametrize("answer,fragment", [
    ("I would keep the first two", "not JSON"),
    ('{"keep": [99]}', "99 is greater than the maximum of 5"),
    ('{"keep": [1, 1]}', "non-unique"),
    ('{"kept": [1]}', "'keep' is a required property"),
    ('{"keep": "1"}', "is not of type 'array'"),
])
async def test_invalid_answers_fall_back_to_the_newest_units_with_a_warning(answer: str, fragment: str) -> None:
    msgs = numbered(8)
    units = turn_units(msgs[1:])
    budget = transcript_tokens(msgs[:1]) + sum(transcript_tokens(u) for u in units[-4:])  # room for 4 units
    ctx = make_test_ctx()
    c, _ = compactor(answer, keep_recent_units=2)
    after = await c.compact(msgs, budget_tokens=budget, ctx=ctx)
    assert after == (msgs[0], *(m for u in units[-4:] for m in u))
    (warning,) = ctx.state["seamkit.compaction.notes"]
    assert warning.startswith("importance: invalid answer from the model") and fragment in warning, warning
    assert "kept the 2 newest older units" in warning


async def test_no_allowance_drops_every_older_unit_without_a_call() -> None:
    msgs = numbered(6)
    c, model = compactor('{"keep": [0]}', keep_recent_units=2)
    after = await c.compact(msgs, budget_tokens=5)
    units = turn_units(msgs[1:])
    assert after == (msgs[0], *units[4], *units[5]) and model.calls == 0


async def test_the_call_goes_through_an_invoker() -> None:
    mw = RecordingMiddleware()
    model = ScriptedModel(['{"keep": []}'], repeat=True)
    c = ImportanceCompactor(ImportanceConfig.model_validate({"model": "scripted"}), model=model, middlewares=[mw])
    msgs = numbered(8)
    await c.compact(msgs, budget_tokens=transcript_tokens(msgs) - 1, ctx=make_test_ctx(run_id="run_imp"))
    assert mw.calls == [({"purpose": "importance"}, "run_imp")]


@given(st.text(max_size=40), st.integers(0, 6))
def test_parse_selection_only_ever_raises_value_error(text: str, n: int) -> None:
    try:
        keep = parse_selection(text, n)
    except ValueError:
        return
    assert len(set(keep)) == len(keep) and all(0 <= i < n for i in keep)


def test_selection_schema_shape() -> None:
    assert selection_schema(3)["properties"]["keep"]["items"] == {"type": "integer", "minimum": 0, "maximum": 2}
    assert parse_selection('```\n{"keep": [2, 0]}\n```', 3) == [2, 0]


def test_built_from_the_registry_and_bad_model_located() -> None:
    c = get_registry().build("compactor", "importance", {"model": {"use": "scripted", "turns": ["{}"]}})
    assert isinstance(c, ImportanceCompactor)
    with pytest.raises(ConfigError) as info:
        get_registry().build("compactor", "importance", {"model": {"use": "scripted", "turns": []}})
    (issue,) = info.value.issues
    assert issue.path == "model.turns" and "at least 1" in issue.message
