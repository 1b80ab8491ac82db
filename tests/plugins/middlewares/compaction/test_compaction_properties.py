"""Properties (hypothesis) of the compaction middleware over random transcripts with parallel tool
calls, two turns in one run, with every compactor: what reaches the model keeps the compaction
invariants against the full history of its turn, a request within the budget is never touched, and
a summary is reused rather than remade while the history it stands for is unchanged."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest
from compaction_mw_fakes import chat_through
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seamkit._compaction import check_invariants, is_summary, transcript_tokens
from seamkit._tokens import estimate_tokens
from seamkit.testing import ScriptedModel, make_test_ctx
from seamkit.testing._transcripts import transcripts
from seamkit.values import ChatRequest, Message, ToolCall, ToolResult
from seamkit_compaction.config import CompactionConfig
from seamkit_compaction.middleware import Compaction

PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

COMPACTORS: dict[str, dict[str, Any]] = {
    "truncation": {},
    "sliding_window": {},
    "tool_result_clearing": {},
    "summarization": {"model": {"use": "scripted", "turns": ["a short summary"], "repeat": True},
                      "keep_recent_units": 2},
    "importance": {"model": {"use": "scripted", "turns": ['{"keep": [0]}'], "repeat": True},
                   "keep_recent_units": 1},
}


def renamed(m: Message) -> Message:
    """``m`` with its tool-call ids prefixed ``t2_``."""
    blocks = [replace(b, id="t2_" + b.id) if type(b) is ToolCall
              else replace(b, call_id="t2_" + b.call_id) if type(b) is ToolResult else b for b in m.content]
    return Message(m.role, tuple(blocks))


def is_answered(msgs: tuple[Message, ...]) -> bool:
    """Whether every tool call has its result (a history a second turn can be appended to)."""
    calls = {b.id for m in msgs for b in m.tool_calls}
    results = {b.call_id for m in msgs for b in m.tool_results}
    return calls <= results


@pytest.mark.parametrize("name", sorted(COMPACTORS))
@PROPS
@given(data=st.data())
def test_what_reaches_the_model_keeps_the_invariants(name: str, data: st.DataObject) -> None:
    first = data.draw(transcripts(min_units=1))
    more = tuple(m for m in data.draw(transcripts(max_units=4)) if m.role != "system")
    # the second turn appends to an answered history, with tool-call ids of its own
    second = first + (tuple(renamed(m) for m in more) or (Message.user("and then?"),)) if is_answered(first) else first
    budget = data.draw(st.integers(1, estimate_tokens(ChatRequest(second)) + 10))
    mw = Compaction(CompactionConfig.model_validate({"compactor": {"use": name, **COMPACTORS[name]},
                                                     "budget_tokens": budget}))
    main = ScriptedModel(["ok"], repeat=True)
    ctx = make_test_ctx()
    for history in (first, second):
        request = ChatRequest(history)
        result = asyncio.run(chat_through(mw, main, request, ctx))
        sent = main.requests[-1]
        if estimate_tokens(request) <= budget:
            assert sent is request and result.warnings == ()
            continue
        message_budget = budget - (estimate_tokens(request) - transcript_tokens(history))
        problems = check_invariants(history, sent.messages, budget_tokens=message_budget)
        assert problems == [], (problems, result.warnings)
        refused = [w for w in result.warnings if w.startswith("compaction refused")]
        assert not refused, refused  # the registered compactors never make a rewrite that must be refused
    summariser = getattr(mw.compactor, "model", None)
    if name == "summarization" and summariser is not None:
        summaries = [m for r in main.requests for m in r.messages if is_summary(m)]
        assert summariser.calls <= 2 and len(set(summaries)) <= summariser.calls
