"""seamkit._compaction: units, token totals and the invariant checker every compactor is tested with."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seamkit._compaction import (
    NOTES_KEY,
    SUMMARY_MARKER,
    CompactorPort,
    check_invariants,
    is_summary,
    note,
    split_leading_system,
    summary_message,
    transcript_tokens,
    turn_units,
    unit_signature,
)
from seamkit._tokens import estimate_message_tokens
from seamkit.testing import make_test_ctx
from seamkit.testing._transcripts import big_tool_call_transcript, report_text, transcripts
from seamkit.values import Message, TextBlock, ToolCall, ToolResult

PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SYSTEM = Message.system("Be terse.")


def call_turn(*ids: str) -> Message:
    return Message("assistant", tuple(ToolCall(i, "search", {"q": i}) for i in ids))


def result(call_id: str, content: str = "ok") -> ToolResult:
    return ToolResult(call_id, "search", content)


def tool_msg(*results: ToolResult) -> Message:
    return Message("tool", results)


# --- turn_units -------------------------------------------------------------------------------


def test_parallel_results_in_separate_messages_form_one_unit() -> None:
    msgs = [SYSTEM, Message.user("go"), call_turn("a", "b", "c"),
            tool_msg(result("b")), tool_msg(result("a")), tool_msg(result("c")), Message.assistant("done")]
    assert [len(u) for u in turn_units(msgs)] == [1, 1, 4, 1]
    assert turn_units(msgs)[2] == tuple(msgs[2:6])


def test_results_together_or_split_join_the_unit_and_stop_when_all_answered() -> None:
    together = [call_turn("a", "b"), tool_msg(result("a"), result("b")), tool_msg(result("x"))]
    assert [len(u) for u in turn_units(together)] == [2, 1]
    split = [call_turn("a", "b", "c"), tool_msg(result("c")), tool_msg(result("a"), result("b")), Message.user("hi")]
    assert [len(u) for u in turn_units(split)] == [3, 1]


def test_unanswered_calls_orphan_results_and_interruptions_are_their_own_units() -> None:
    pending = [Message.user("go"), call_turn("a", "b")]
    assert [len(u) for u in turn_units(pending)] == [1, 1]
    orphan = [tool_msg(result("zz")), Message.assistant("hm")]
    assert [len(u) for u in turn_units(orphan)] == [1, 1]
    interrupted = [call_turn("a", "b"), tool_msg(result("a")), Message.user("stop"), tool_msg(result("b"))]
    assert [len(u) for u in turn_units(interrupted)] == [2, 1, 1]
    assert turn_units([]) == []


@PROPS
@given(transcripts())
def test_units_partition_the_transcript_and_hold_every_result_of_their_calls(msgs: tuple[Message, ...]) -> None:
    units = turn_units(msgs)
    assert tuple(m for u in units for m in u) == msgs
    for u in units:
        calls = {b.id for b in u[0].content if type(b) is ToolCall}
        answered = {b.call_id for m in u[1:] for b in m.content if type(b) is ToolResult}
        everywhere = {b.call_id for m in msgs for b in m.content if type(b) is ToolResult}
        assert answered <= calls
        assert calls & everywhere == answered  # no result of these calls lives outside the unit


# --- tokens ---------------------------------------------------------------------------------


def test_transcript_tokens_sums_message_estimates() -> None:
    msgs = big_tool_call_transcript()
    assert transcript_tokens(msgs) == sum(estimate_message_tokens(m) for m in msgs)
    assert transcript_tokens([]) == 0


def test_324k_character_tool_arguments_estimate_at_about_81k_tokens() -> None:
    msgs = big_tool_call_transcript(324_000)
    call = msgs[2]
    assert len(call.tool_calls[0].arguments["content"]) == 324_000
    assert [len(report_text(n)) for n in (0, 1, 319, 320, 5_000)] == [0, 1, 319, 320, 5_000]
    assert abs(estimate_message_tokens(call) - 81_000) <= 8_100
    assert abs(transcript_tokens(msgs) - 81_000) <= 8_100


# --- summaries and helpers ------------------------------------------------------------------


def test_summary_messages_are_marked_and_recognised() -> None:
    s = summary_message("we searched twice")
    assert s.role == "user" and s.text == f"{SUMMARY_MARKER}\nwe searched twice" and is_summary(s)
    assert summary_message("x", role="system").role == "system"
    assert not is_summary(Message.user("we searched twice")) and not is_summary(Message("user", ()))
    with pytest.raises(ValueError, match="role"):
        summary_message("x", role="tool")


def test_split_leading_system_and_signatures() -> None:
    assert split_leading_system([SYSTEM, Message.user("a")]) == (SYSTEM, (Message.user("a"),))
    assert split_leading_system([Message.user("a"), SYSTEM]) == (None, (Message.user("a"), SYSTEM))
    unit = (call_turn("a"), tool_msg(result("a", "long text")))
    cleared = (unit[0], tool_msg(result("a", "[cleared]")))
    assert unit_signature(unit) == unit_signature(cleared) == (
        ("assistant", (("call", "a", "search"),)), ("tool", (("result", "a", "search"),)))


def test_a_compactor_object_satisfies_the_port() -> None:
    class Keep:
        name = "keep"

        async def compact(self, messages, *, budget_tokens, ctx=None):  # type: ignore[no-untyped-def]
            return tuple(messages)

    assert isinstance(Keep(), CompactorPort)
    assert not isinstance(object(), CompactorPort)


# --- check_invariants -----------------------------------------------------------------------

BEFORE = (
    SYSTEM,
    Message.user("find x and y" * 20),
    call_turn("a", "b"),
    tool_msg(result("a", "A" * 400)),
    tool_msg(result("b", "B" * 400)),
    Message.assistant("x is A, y is B"),
    Message.user("thanks"),
)
SMALL = 60  # far under transcript_tokens(BEFORE)


def test_whole_units_dropped_from_the_front_pass() -> None:
    assert transcript_tokens(BEFORE) > SMALL
    assert check_invariants(BEFORE, BEFORE, budget_tokens=SMALL) == []
    assert check_invariants(BEFORE, (SYSTEM, *BEFORE[5:]), budget_tokens=SMALL) == []
    assert check_invariants(BEFORE, (SYSTEM, *BEFORE[2:5], BEFORE[6]), budget_tokens=SMALL) == []
    assert check_invariants((), (), budget_tokens=0) == []


def test_summaries_and_cleared_results_keeping_ids_pass() -> None:
    cleared = tool_msg(result("a", "[tool result cleared: 400 characters]"))
    after = (SYSTEM, summary_message("asked for x and y"), BEFORE[2], cleared, *BEFORE[4:])
    assert check_invariants(BEFORE, after, budget_tokens=SMALL) == []


@pytest.mark.parametrize(("after", "fragment"), [
    ((), "empty"),
    ((SYSTEM,), "only the system message"),
    (BEFORE[1:], "system message was not kept"),
    ((Message.system("Be verbose."), *BEFORE[1:]), "system message was not kept"),
    ((SYSTEM, *BEFORE[2:4], *BEFORE[5:]), "not a whole unit"),  # result b cut away from its call
    ((SYSTEM, *BEFORE[3:]), "not a whole unit"),  # results without their call
    ((SYSTEM, BEFORE[6], BEFORE[5]), "out of order"),
    ((SYSTEM, BEFORE[5], BEFORE[5]), "out of order or repeated"),
    ((SYSTEM, Message.user("thanks!")), "not a whole unit"),  # a text unit rewritten
    ((SYSTEM, call_turn("a", "c"), *BEFORE[3:5]), "not a whole unit"),  # ids changed
])
def test_broken_rewrites_are_reported(after: tuple[Message, ...], fragment: str) -> None:
    problems = check_invariants(BEFORE, after, budget_tokens=SMALL)
    assert problems and any(fragment in p for p in problems), problems


def test_a_transcript_within_budget_must_come_back_unchanged() -> None:
    budget = transcript_tokens(BEFORE)
    assert check_invariants(BEFORE, BEFORE, budget_tokens=budget) == []
    problems = check_invariants(BEFORE, (SYSTEM, *BEFORE[5:]), budget_tokens=budget)
    assert any("within the budget" in p for p in problems)
    assert check_invariants((), (Message.user("x"),), budget_tokens=10) == ["an empty transcript came back non-empty"]


@PROPS
@given(transcripts(min_units=1), st.data())
def test_dropping_any_prefix_of_units_passes_and_cutting_a_unit_fails(
    msgs: tuple[Message, ...], data: st.DataObject
) -> None:
    system, rest = split_leading_system(msgs)
    head = (system,) if system else ()
    units = turn_units(rest)
    if not units:
        return
    k = data.draw(st.integers(0, len(units) - 1))
    kept = head + tuple(m for u in units[k:] for m in u)
    assert check_invariants(msgs, kept, budget_tokens=-1) == []
    multi = [i for i, u in enumerate(units) if len(u) > 1]
    if multi:
        i = data.draw(st.sampled_from(multi))
        j = data.draw(st.integers(1, len(units[i]) - 1))
        cut = head + tuple(m for n, u in enumerate(units) for m in (u[:j] + u[j + 1:] if n == i else u))
        assert check_invariants(msgs, cut, budget_tokens=-1) != []


@PROPS
@given(transcripts(min_units=1))
def test_rewriting_a_text_message_is_caught(msgs: tuple[Message, ...]) -> None:
    texts = [i for i, m in enumerate(msgs) if m.role in ("user", "assistant") and not m.tool_calls and i > 0]
    if not texts:
        return
    i = texts[-1]
    changed = list(msgs)
    changed[i] = replace(msgs[i], content=(TextBlock(msgs[i].text + " (edited)"),))
    assert check_invariants(msgs, tuple(changed), budget_tokens=-1) != []


def test_note_logs_and_records_on_the_context(caplog: pytest.LogCaptureFixture) -> None:
    ctx = make_test_ctx()
    with caplog.at_level(logging.WARNING, logger="seamkit.compaction"):
        note(None, "first")
        note(ctx, "second")
        note(ctx, "third")
    assert [r.getMessage() for r in caplog.records] == ["first", "second", "third"]
    assert ctx.state[NOTES_KEY] == ["second", "third"]
