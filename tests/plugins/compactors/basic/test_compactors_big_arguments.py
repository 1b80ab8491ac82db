"""The issue's case: a tool call whose arguments hold 324,000 characters (about 81,000 tokens) is
counted, and ``truncation`` shrinks the transcript to fit by dropping that turn whole."""

from __future__ import annotations

import asyncio
import logging

import pytest
from seamkit._compaction import NOTES_KEY, check_invariants, transcript_tokens
from seamkit.testing import make_test_ctx
from seamkit.testing._transcripts import big_tool_call_transcript
from seamkit.values import Message, ToolCall, ToolResult
from seamkit_compactors import SlidingWindowCompactor, ToolResultClearingCompactor, TruncationCompactor

BIG = big_tool_call_transcript(324_000, later_turns=3)


def mentions_big_call(msgs: tuple[Message, ...]) -> bool:
    return any(
        (type(b) is ToolCall and b.id == "call_big") or (type(b) is ToolResult and b.call_id == "call_big")
        for m in msgs
        for b in m.content
    )


def test_the_transcript_is_estimated_at_about_81k_tokens() -> None:
    assert abs(transcript_tokens(BIG) - 81_000) <= 8_100


@pytest.mark.parametrize("budget", [40, 200, 2_000, 60_000])
def test_truncation_shrinks_it_to_fit_by_dropping_the_big_turn_whole(budget: int) -> None:
    after = asyncio.run(TruncationCompactor().compact(BIG, budget_tokens=budget))
    assert transcript_tokens(after) <= budget
    assert after[0] == BIG[0]  # the system message, verbatim
    assert not mentions_big_call(after)  # neither the call nor its result survives alone
    assert after == (BIG[0], *BIG[len(BIG) - (len(after) - 1):])  # the newest turns, unchanged
    assert check_invariants(BIG, after, budget_tokens=budget) == []


def test_a_budget_that_holds_the_big_turn_keeps_it_with_its_result() -> None:
    budget = transcript_tokens(BIG) - transcript_tokens(BIG[1:2])  # everything but the first user message
    after = asyncio.run(TruncationCompactor().compact(BIG, budget_tokens=budget))
    assert after == (BIG[0], *BIG[2:])
    assert asyncio.run(TruncationCompactor().compact(BIG, budget_tokens=transcript_tokens(BIG))) == BIG


def test_when_the_newest_turn_alone_overflows_it_is_kept_and_a_warning_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    msgs = BIG[:4]  # the big call and its result are the newest turn
    ctx = make_test_ctx()
    with caplog.at_level(logging.WARNING, logger="seamkit.compaction"):
        after = asyncio.run(TruncationCompactor().compact(msgs, budget_tokens=1_000, ctx=ctx))
    assert after == (msgs[0], msgs[2], msgs[3])
    assert "does not fit the budget of 1000 tokens" in caplog.text
    (noted,) = ctx.state[NOTES_KEY]
    assert noted.startswith("truncation: the newest turn alone") and "kept anyway" in noted
    assert check_invariants(msgs, after, budget_tokens=1_000) == []


def test_sliding_window_drops_it_and_clearing_cannot_shrink_arguments() -> None:
    after = asyncio.run(SlidingWindowCompactor(2).compact(BIG, budget_tokens=1_000))
    assert after == (BIG[0], *BIG[-2:])
    cleared = asyncio.run(ToolResultClearingCompactor(0).compact(BIG, budget_tokens=1_000))
    assert cleared == BIG  # its only result is shorter than a placeholder; arguments are never edited
