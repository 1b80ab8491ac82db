"""The ``summarization`` compactor: invariants at every budget (hypothesis), what the summariser
sees, the call going through an Invoker (middlewares, tracer, usage), and its fallbacks."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llm_compactor_fakes import RecordingMiddleware, RecordingTracer, budgets, filler
from seamkit._compaction import (
    CompactorPort,
    check_invariants,
    is_summary,
    split_leading_system,
    summary_message,
    transcript_tokens,
    turn_units,
)
from seamkit._plugins.registry import get_registry
from seamkit.errors import ConfigError, FailureClass, ProviderError
from seamkit.testing import ScriptedModel, ScriptedTurn, make_test_ctx
from seamkit.testing._transcripts import transcripts
from seamkit.values import ChatRequest, Message, ReasoningBlock, TextBlock, ToolCall, ToolResult, Usage, freeze
from seamkit_compactors_llm.config import SummarizationConfig
from seamkit_compactors_llm.summarization import SummarizationCompactor

PROPS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CFG = {"model": {"use": "scripted", "turns": ["unused"]}}


def summariser(text: str = "the user asked for notes; search found 3 files") -> ScriptedModel:
    return ScriptedModel([text], repeat=True)


def compactor(model: ScriptedModel, **cfg: object) -> SummarizationCompactor:
    return SummarizationCompactor(SummarizationConfig.model_validate({**CFG, **cfg}), model=model)


def conversation(n_pairs: int = 6, size: int = 100) -> tuple[Message, ...]:
    msgs = [Message.system("You are terse.")]
    for i in range(n_pairs):
        msgs.append(Message.user(f"question {i} " + filler(size)))
        msgs.append(Message("assistant", (ToolCall(f"c{i}a", "search", freeze({"q": str(i)})),
                                          ToolCall(f"c{i}b", "read_file", freeze({"path": f"/f{i}"})))))
        msgs.append(Message("tool", (ToolResult(f"c{i}b", "read_file", filler(size, "result")),)))
        msgs.append(Message("tool", (ToolResult(f"c{i}a", "search", f"hit {i}"),)))
        msgs.append(Message.assistant(f"answer {i}"))
    return tuple(msgs)


def test_it_is_a_compactor_port() -> None:
    c = compactor(summariser())
    assert isinstance(c, CompactorPort) and c.name == "summarization" and c.summarizes


@pytest.mark.parametrize("keep", [1, 2, 4])
@PROPS
@given(data=st.data())
def test_invariants_hold_at_every_budget(keep: int, data: st.DataObject) -> None:
    msgs = data.draw(transcripts())
    budget = data.draw(budgets(msgs))
    model = summariser()
    after = asyncio.run(compactor(model, keep_recent_units=keep).compact(msgs, budget_tokens=budget))
    assert type(after) is tuple
    assert check_invariants(msgs, after, budget_tokens=budget) == []
    system, rest = split_leading_system(msgs)
    units = turn_units(rest)
    if transcript_tokens(msgs) <= budget or len(units) <= keep:
        assert after == msgs and model.calls == 0
        return
    # the newest `keep` units are kept verbatim after exactly one summary; the system message first
    assert model.calls == 1
    head = (system,) if system else ()
    recent = tuple(m for u in units[-keep:] for m in u)
    summarised = (*head, summary_message("the user asked for notes; search found 3 files"), *recent)
    # a summary that would not shrink the transcript is refused (the transcript comes back unchanged)
    assert after == (summarised if transcript_tokens(summarised) < transcript_tokens(msgs) else msgs)


async def test_the_summariser_sees_the_older_units_only() -> None:
    msgs = conversation()
    model = summariser()
    after = await compactor(model, keep_recent_units=2).compact(msgs, budget_tokens=800)
    (req,) = model.requests
    prompt = req.messages[1].text
    assert req.messages[0].role == "system" and "concise summary" in req.messages[0].text
    assert req.max_tokens == 512 and req.temperature == 0.0 and not req.tools
    assert "question 0" in prompt and "hit 5" not in prompt  # the last pair's units are kept
    assert "assistant called tool search (id c0a)" in prompt and "tool read_file result (id c0b)" in prompt
    assert "You are terse." not in prompt  # the system message is never summarised
    assert after[0] == msgs[0] and is_summary(after[1]) and after[2:] == msgs[-4:]  # a tool unit + the answer
    assert check_invariants(msgs, after, budget_tokens=800) == []


async def test_long_blocks_are_clipped_and_reasoning_left_out() -> None:
    msgs = (Message.user("x" * 50_000 + filler(100)),
            Message("assistant", (ReasoningBlock("secret chain of thought"), TextBlock("ok"))),
            Message.user("next"))
    model = summariser()
    await compactor(model, keep_recent_units=1, max_block_chars=1000).compact(msgs, budget_tokens=10)
    prompt = model.requests[0].messages[1].text
    assert "characters left out ...]" in prompt and len(prompt) < 2_000
    assert "secret chain of thought" not in prompt and "assistant: ok" in prompt


async def test_the_call_goes_through_an_invoker_with_the_runs_context() -> None:
    tracer = RecordingTracer()
    ctx = make_test_ctx(run_id="run_sum", services={"tracer": tracer})
    mw = RecordingMiddleware()
    usage = Usage(input_tokens=900, output_tokens=40, requests=1, cost=Decimal("0.002"), cost_source="reported")
    model = ScriptedModel([ScriptedTurn(text="short summary", usage=usage)], repeat=True)
    c = SummarizationCompactor(SummarizationConfig.model_validate(CFG), model=model, middlewares=[mw])
    msgs = conversation()
    await c.compact(msgs, budget_tokens=500, ctx=ctx)
    await c.compact(msgs, budget_tokens=500, ctx=ctx)
    assert mw.calls == [({"purpose": "summarization"}, "run_sum")] * 2
    assert [(n, a["provider"], e) for n, a, e in tracer.spans] == [("compaction.summarization", "scripted", None)] * 2
    assert ctx.state["seamkit.compaction.usage"] == usage + usage


async def test_a_failing_summariser_propagates_and_the_span_records_it() -> None:
    tracer = RecordingTracer()
    ctx = make_test_ctx(services={"tracer": tracer})
    err = ProviderError("down", FailureClass.OVERLOADED, provider="scripted")
    with pytest.raises(ProviderError):
        await compactor(ScriptedModel([err])).compact(conversation(), budget_tokens=100, ctx=ctx)
    assert tracer.spans[0][2] is err


async def test_an_empty_summary_leaves_the_transcript_unchanged_with_a_note() -> None:
    ctx = make_test_ctx()
    msgs = conversation()
    after = await compactor(summariser("   ")).compact(msgs, budget_tokens=100, ctx=ctx)
    assert after == msgs
    assert "empty summary" in ctx.state["seamkit.compaction.notes"][0]


async def test_nothing_older_than_the_kept_units_means_no_call() -> None:
    ctx = make_test_ctx()
    msgs = (Message.system("s"), Message.user(filler(400)), Message.assistant(filler(400)))
    model = summariser()
    assert await compactor(model, keep_recent_units=2).compact(msgs, budget_tokens=10, ctx=ctx) == msgs
    assert model.calls == 0 and "nothing to summarise" in ctx.state["seamkit.compaction.notes"][0]


async def test_an_earlier_summary_alone_is_not_summarised_again() -> None:
    ctx = make_test_ctx()
    msgs = (Message.system("s"), summary_message(filler(400)), Message.user(filler(40)), Message.assistant("b"))
    model = summariser()
    assert await compactor(model, keep_recent_units=2).compact(msgs, budget_tokens=10, ctx=ctx) == msgs
    assert model.calls == 0 and "already a summary" in ctx.state["seamkit.compaction.notes"][0]


async def test_an_earlier_summary_is_folded_into_the_new_one() -> None:
    msgs = (summary_message("EARLIER FACT"), Message.user(filler(100)), Message.assistant(filler(100)),
            Message.user("c"))
    model = summariser("folded")
    after = await compactor(model, keep_recent_units=1).compact(msgs, budget_tokens=50)
    assert "EARLIER FACT" in model.requests[0].messages[1].text
    assert after == (summary_message("folded"), Message.user("c"))


async def test_summary_role_is_configurable() -> None:
    after = await compactor(summariser("s"), summary_role="assistant").compact(conversation(), budget_tokens=100)
    assert after[1] == summary_message("s", role="assistant")


async def test_still_over_the_budget_is_noted() -> None:
    ctx = make_test_ctx()
    msgs = (Message.user(filler(100)), Message.user(filler(400)))
    after = await compactor(summariser("s"), keep_recent_units=1).compact(msgs, budget_tokens=100, ctx=ctx)
    assert after == (summary_message("s"), msgs[1])
    assert "still over the budget" in ctx.state["seamkit.compaction.notes"][0]


def test_built_from_the_registry_with_a_nested_provider_slot() -> None:
    c = get_registry().build("compactor", "summarization",
                             {"model": {"use": "scripted", "turns": ["sum"]}, "keep_recent_units": 2})
    assert isinstance(c, SummarizationCompactor) and c.model.provider == "scripted"
    assert "summarization" in get_registry().names("compactor")


@pytest.mark.parametrize("params,path,fragment", [
    ({"model": {"use": "scriptd", "turns": ["x"]}}, "model.use", "did you mean 'scripted'"),
    ({"model": {"use": "scripted"}}, "model.turns", "Field required"),
    ({"model": {"use": "scripted", "turns": ["x"]}, "keep_recent_units": 0}, "keep_recent_units",
     "greater than or equal to 1"),
    ({}, "model", "Field required"),
])
def test_bad_parameters_raise_located_config_errors(params: dict[str, object], path: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        get_registry().build("compactor", "summarization", params)
    (issue,) = info.value.issues
    assert issue.path == path and fragment in issue.message, issue


def test_model_shorthand_is_a_provider_name() -> None:
    cfg = SummarizationConfig.model_validate({"model": "scripted"})
    assert cfg.model.use == "scripted" and cfg.model.params == {}


def test_request_for_is_a_plain_chat_request() -> None:
    req = compactor(summariser()).request_for([(Message.user("hi"),)], 100)
    assert isinstance(req, ChatRequest) and req.output_schema is None


async def test_a_summary_longer_than_what_it_replaces_is_refused() -> None:
    """Regression (newcomer): the summariser could answer with more than the span it replaced, so
    the compacted request grew; it is now refused and the transcript left unchanged."""
    ctx = make_test_ctx()
    msgs = (Message.user("short question"), Message.assistant("short answer"), Message.user(filler(400)))
    model = summariser(filler(300))
    after = await compactor(model, keep_recent_units=1).compact(msgs, budget_tokens=50, ctx=ctx)
    assert after == msgs
    assert "not smaller" in ctx.state["seamkit.compaction.notes"][-1]


async def test_the_summary_is_capped_at_what_the_budget_leaves() -> None:
    """Regression (newcomer): the summary call asked for max_summary_tokens whatever budget was left."""
    model = summariser()
    msgs = conversation(n_pairs=6, size=200)
    await compactor(model, keep_recent_units=1, max_summary_tokens=512).compact(msgs, budget_tokens=400)
    sent = model.requests[0]
    assert sent.max_tokens is not None and sent.max_tokens < 512
    assert f"well under {sent.max_tokens} tokens" in sent.messages[-1].text
