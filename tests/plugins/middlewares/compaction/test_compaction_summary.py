"""The compaction middleware keeps summarization's summary per run: the next turn reuses it for
the span it covers, and only what is new is summarised."""

from __future__ import annotations

from typing import Any

from compaction_mw_fakes import SYSTEM, chat_through, filler, transcript, unit
from seamkit import Agent, tool
from seamkit._compaction import check_invariants, is_summary, summary_message
from seamkit.testing import ScriptedModel, make_test_ctx
from seamkit.values import ChatRequest, Message
from seamkit_compaction.config import CompactionConfig
from seamkit_compaction.middleware import Compaction, StoredSummary
from seamkit_compactors_llm.config import SummarizationConfig
from seamkit_compactors_llm.summarization import SummarizationCompactor


def summariser() -> ScriptedModel:
    count = [0]

    def answer(request: ChatRequest) -> str:
        count[0] += 1
        return f"SUMMARY-{count[0]}"

    return ScriptedModel([answer], repeat=True)


def compaction(model: ScriptedModel, *, budget: int = 400, keep: int = 2, **cfg: Any) -> Compaction:
    comp = SummarizationCompactor(
        SummarizationConfig.model_validate({"model": "scripted", "keep_recent_units": keep}), model=model)
    return Compaction(CompactionConfig.model_validate({"compactor": "summarization", "budget_tokens": budget, **cfg}),
                      compactor=comp)


async def test_the_summary_is_reused_and_only_the_new_span_summarised() -> None:
    sm = summariser()
    mw = compaction(sm)
    main = ScriptedModel(["ok"], repeat=True)
    ctx = make_test_ctx(run_id="run_a")
    history = (SYSTEM, *transcript(6))  # units 0..5, about 700 tokens

    # turn 1: over the budget: units 0-3 are summarised, 4-5 kept
    r1 = await chat_through(mw, main, ChatRequest(history), ctx)
    s1 = summary_message("SUMMARY-1")
    kept = transcript(2, start=4)
    assert main.requests[-1].messages == (SYSTEM, s1, *kept) and sm.calls == 1
    assert mw.summary("run_a") == StoredSummary(transcript(4), s1)
    assert r1.warnings[0].startswith("compacted 6 messages (") and r1.warnings[0].endswith("with summarization")

    # turn 2: a small unit more: the stored summary stands for units 0-3 and it fits: no call
    history += unit(6, size=5)
    r2 = await chat_through(mw, main, ChatRequest(history), ctx)
    assert main.requests[-1].messages == (SYSTEM, s1, *kept, *unit(6, size=5)) and sm.calls == 1
    assert r2.warnings[0].startswith("compacted 6 messages (")
    assert r2.warnings[0].endswith("with summarization; reused the summary of 6 earlier messages")

    # turn 3: two big units more: over again; the summariser sees SUMMARY-1 and units 4-6 only
    history += transcript(2, start=7)
    await chat_through(mw, main, ChatRequest(history), ctx)
    assert sm.calls == 2
    prompt = sm.requests[-1].messages[1].text
    assert "SUMMARY-1" in prompt and "unit 4" in prompt and "unit 0" not in prompt and "unit 7" not in prompt
    s2 = summary_message("SUMMARY-2")
    assert main.requests[-1].messages == (SYSTEM, s2, *transcript(2, start=7))
    stored = mw.summary("run_a")
    assert stored is not None and stored.summary == s2
    assert stored.span == (*transcript(6), *unit(6, size=5))  # the original messages, not SUMMARY-1

    # turn 4: reused again
    history += unit(9, size=5)
    await chat_through(mw, main, ChatRequest(history), ctx)
    assert sm.calls == 2 and main.requests[-1].messages[:2] == (SYSTEM, s2)
    # every request sent keeps the invariants against the history of its turn
    assert len(history) == 16
    turns = [history[:10], history[:11], history[:14], history]
    assert [check_invariants(h, r.messages, budget_tokens=0) for h, r in zip(turns, main.requests, strict=True)] \
        == [[]] * 4


async def test_summaries_are_kept_per_run() -> None:
    sm = summariser()
    mw = compaction(sm)
    main = ScriptedModel(["ok"], repeat=True)
    history = (SYSTEM, *transcript(6))
    await chat_through(mw, main, ChatRequest(history), make_test_ctx(run_id="run_a"))
    await chat_through(mw, main, ChatRequest(history), make_test_ctx(run_id="run_b"))
    assert sm.calls == 2  # another run summarises its own history
    await chat_through(mw, main, ChatRequest(history), make_test_ctx(run_id="run_a"))
    assert sm.calls == 2


async def test_a_changed_history_is_not_matched() -> None:
    sm = summariser()
    mw = compaction(sm)
    main = ScriptedModel(["ok"], repeat=True)
    ctx = make_test_ctx()
    history = (SYSTEM, *transcript(6))
    await chat_through(mw, main, ChatRequest(history), ctx)
    edited = (SYSTEM, Message.user("a different start " + filler(100)), *history[2:])
    await chat_through(mw, main, ChatRequest(edited), ctx)
    assert sm.calls == 2 and "a different start" in sm.requests[-1].messages[1].text


async def test_least_recently_used_runs_are_forgotten() -> None:
    sm = summariser()
    mw = compaction(sm, max_tracked_runs=1)
    main = ScriptedModel(["ok"], repeat=True)
    history = (SYSTEM, *transcript(6))
    await chat_through(mw, main, ChatRequest(history), make_test_ctx(run_id="run_a"))
    await chat_through(mw, main, ChatRequest(history), make_test_ctx(run_id="run_b"))
    assert mw.summary("run_a") is None and mw.summary("run_b") is not None


async def test_a_non_summarising_compactor_stores_nothing() -> None:
    mw = Compaction(CompactionConfig.model_validate({"compactor": "truncation", "budget_tokens": 300}))
    await chat_through(mw, ScriptedModel(["ok"]), ChatRequest((SYSTEM, *transcript(6))), make_test_ctx())
    assert mw.summary("run_test") is None


@tool(side_effecting=False)
def lookup(q: str) -> str:
    """Look a topic up."""
    return f"found {q}: " + filler(40, "fact")


async def test_an_agent_run_calls_the_summariser_once_over_two_turns() -> None:
    sm = summariser()
    mw = compaction(sm, budget=400, keep=1)
    main = ScriptedModel([
        {"tool_calls": [{"name": "lookup", "arguments": {"q": "alpha"}}]},
        {"tool_calls": [{"name": "lookup", "arguments": {"q": "beta"}}]},
        "done",
    ])
    agent = Agent(main, prompt="You are terse.", tools=[lookup], middlewares=[mw])
    result = await agent.run("Research this: " + filler(300, "context"))
    assert result.output == "done" and sm.calls == 1
    first, second, third = main.requests
    assert len(first.messages) == 2  # within the budget: untouched
    assert is_summary(second.messages[1]) and is_summary(third.messages[1])
    assert second.messages[1] == third.messages[1] == summary_message("SUMMARY-1")
    assert "context context" in sm.requests[0].messages[1].text  # the task was what got summarised
    assert any(w.endswith("reused the summary of 1 earlier messages") for w in result.warnings), result.warnings
