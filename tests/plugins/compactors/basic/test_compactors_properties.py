"""Every basic compactor keeps the compaction invariants at every budget (hypothesis), plus what
each one promises on top."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seamkit._compaction import CompactorPort, check_invariants, split_leading_system, transcript_tokens, turn_units
from seamkit.testing._transcripts import report_text, transcripts
from seamkit.values import Message, ToolResult
from seamkit_compactors import (
    SlidingWindowCompactor,
    ToolResultClearingCompactor,
    TruncationCompactor,
    cleared_placeholder,
    is_cleared,
)

PROPS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

COMPACTORS: list[CompactorPort] = [
    SlidingWindowCompactor(1),
    SlidingWindowCompactor(3),
    TruncationCompactor(),
    ToolResultClearingCompactor(0),
    ToolResultClearingCompactor(2),
]


def compact(c: CompactorPort, msgs: Sequence[Message], budget: int) -> tuple[Message, ...]:
    return asyncio.run(c.compact(msgs, budget_tokens=budget))


Case = tuple[tuple[Message, ...], int]


@st.composite
def case(draw: st.DrawFn) -> Case:
    """A transcript and a budget: anywhere from below zero to above its size, often exactly at a
    boundary where some suffix of units (plus the system message) just fits."""
    msgs = draw(transcripts())
    total = transcript_tokens(msgs)
    system, rest = split_leading_system(msgs)
    base = transcript_tokens([system]) if system else 0
    edges, acc = [], base
    for u in reversed(turn_units(rest)):
        acc += transcript_tokens(u)
        edges += [acc - 1, acc]
    budget = draw(st.one_of(st.integers(-5, total + 5), st.sampled_from([base, total, *edges])))
    return msgs, budget


@pytest.mark.parametrize("compactor", COMPACTORS, ids=repr)
@PROPS
@given(case())
def test_invariants_hold_at_every_budget(compactor: CompactorPort, c: Case) -> None:
    msgs, budget = c
    after = compact(compactor, msgs, budget)
    assert type(after) is tuple
    assert check_invariants(msgs, after, budget_tokens=budget) == []


@PROPS
@given(case())
def test_truncation_keeps_the_longest_suffix_that_fits(c: Case) -> None:
    msgs, budget = c
    after = compact(TruncationCompactor(), msgs, budget)
    system, rest = split_leading_system(msgs)
    head = (system,) if system else ()
    units = turn_units(rest)
    assert after[: len(head)] == head
    tail = after[len(head):]
    kept = turn_units(tail)
    assert kept == units[len(units) - len(kept):]  # a suffix of whole units, nothing rewritten
    if transcript_tokens(after) > budget:  # over budget only when the newest unit alone overflows
        assert len(kept) <= 1 and (not units or transcript_tokens(head + units[-1]) > budget)
    elif len(kept) < len(units):  # and the next older unit would not have fitted
        assert transcript_tokens(after) + transcript_tokens(units[len(units) - len(kept) - 1]) > budget


@pytest.mark.parametrize("keep", [1, 2, 5])
@PROPS
@given(case())
def test_sliding_window_keeps_the_n_newest_turns_when_over_budget(keep: int, c: Case) -> None:
    msgs, budget = c
    after = compact(SlidingWindowCompactor(keep), msgs, budget)
    system, rest = split_leading_system(msgs)
    units = turn_units(rest)
    if transcript_tokens(msgs) <= budget or len(units) <= keep:
        assert after == msgs
    else:
        assert after == ((system,) if system else ()) + tuple(m for u in units[-keep:] for m in u)


def results_of(msgs: Sequence[Message]) -> list[ToolResult]:
    return [b for m in msgs for b in m.content if type(b) is ToolResult]


@pytest.mark.parametrize("keep", [0, 1, 3])
@PROPS
@given(case())
def test_tool_result_clearing_only_clears_old_results_oldest_first(keep: int, c: Case) -> None:
    msgs, budget = c
    after = compact(ToolResultClearingCompactor(keep), msgs, budget)
    assert len(after) == len(msgs)
    assert [(m.role, len(m.content)) for m in after] == [(m.role, len(m.content)) for m in msgs]
    old, new = results_of(msgs), results_of(after)
    changed = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
    for i in changed:
        assert new[i] == ToolResult(old[i].call_id, old[i].name, cleared_placeholder(old[i].content), old[i].is_error)
        assert is_cleared(new[i]) and i < len(old) - keep
    for a, b in zip(msgs, after, strict=True):  # nothing but tool results is touched
        assert [x for x in a.content if type(x) is not ToolResult] == [
            x for x in b.content if type(x) is not ToolResult
        ]
    if transcript_tokens(after) > budget:  # did not fit: every clearable result that could shrink was cleared
        for i in range(len(old) - keep):
            assert is_cleared(new[i]) or len(cleared_placeholder(old[i].content)) >= len(old[i].content)
    elif changed:  # fitted: it stopped at the first clearing that made it fit
        last = old[changed[-1]]
        restored = tuple(
            Message(m.role, tuple(last if type(b) is ToolResult and b.call_id == last.call_id else b
                                  for b in m.content))
            for m in after
        )
        assert transcript_tokens(restored) > budget


def test_clearing_placeholder_keeps_ids_and_reads_well() -> None:
    big = ToolResult("call_7", "read_file", report_text(12_345), is_error=True)
    msgs = (Message.user("read it"), Message("assistant", ()), Message("tool", (big,)), Message.user("and?"))
    after = compact(ToolResultClearingCompactor(0), msgs, 50)
    (cleared,) = after[2].content
    assert cleared == ToolResult("call_7", "read_file", "[tool result cleared: 12,345 characters]", True)
    assert compact(ToolResultClearingCompactor(0), after, 10) == after  # already cleared: left alone
    assert compact(ToolResultClearingCompactor(1), msgs, 50) == msgs  # the one result is recent


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="keep_turns"):
        SlidingWindowCompactor(0)
    with pytest.raises(ValueError, match="keep_recent"):
        ToolResultClearingCompactor(-1)
