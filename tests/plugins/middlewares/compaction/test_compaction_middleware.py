"""The ``compaction`` middleware: when it compacts, what it records, what it refuses, its budget."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest
from compaction_mw_fakes import SYSTEM, FakeCompactor, RecordingTracer, chat_through, filler, transcript
from pydantic import ValidationError
from seamkit._compaction import transcript_tokens
from seamkit._middleware import Call
from seamkit._plugins.registry import get_registry
from seamkit._tokens import estimate_tokens
from seamkit.errors import ConfigError
from seamkit.testing import ScriptedModel, make_test_ctx
from seamkit.testing._transcripts import big_tool_call_transcript
from seamkit.values import ChatRequest, Message, ToolCall, ToolRequest, ToolResult, ToolSchema
from seamkit_compaction.config import CompactionConfig
from seamkit_compaction.middleware import Compaction, build

WARNING = re.compile(r"^compacted (\d+) messages \(([\d,]+) -> ([\d,]+) tokens\) with (\w+)$")


def mw_with(comp: Any, **cfg: Any) -> Compaction:
    config = CompactionConfig.model_validate({"compactor": "truncation", "budget_tokens": 300, **cfg})
    return Compaction(config, compactor=comp)


def keep_last(n: int) -> Any:
    return lambda msgs: (msgs[0], *msgs[len(msgs) - n:])


async def test_a_request_within_the_budget_passes_untouched() -> None:
    fake = FakeCompactor(lambda m: m[:1])
    model = ScriptedModel(["ok"])
    request = ChatRequest((SYSTEM, *transcript(2)))
    result = await chat_through(mw_with(fake, budget_tokens=10_000), model, request, make_test_ctx())
    assert model.requests[0] is request and fake.calls == [] and result.warnings == ()


async def test_over_the_budget_it_compacts_and_records_what_it_did() -> None:
    tracer = RecordingTracer()
    ctx = make_test_ctx(services={"tracer": tracer})
    fake = FakeCompactor(keep_last(1), notes=["dropped some turns"])
    model = ScriptedModel(["ok"])
    request = ChatRequest((SYSTEM, *transcript(5)))
    result = await chat_through(mw_with(fake), model, request, ctx)
    sent = model.requests[0]
    assert sent.messages == (SYSTEM, request.messages[-1])
    first, note = result.warnings
    m = WARNING.match(first)
    assert m, first
    assert int(m[1]) == len(request.messages) - 2  # every message but the system and the last one
    assert m[2] == f"{estimate_tokens(request):,}" and m[3] == f"{estimate_tokens(sent):,}" and m[4] == "fake"
    assert note == "compaction: dropped some turns"
    assert fake.calls[0][2] is ctx
    assert tracer.spans == [("compaction", {"compactor": "fake", "outcome": "compacted",
                                            "tokens_before": estimate_tokens(request),
                                            "tokens_after": estimate_tokens(sent), "budget": 300})]


async def test_the_compactor_budget_leaves_room_for_tool_schemas() -> None:
    fake = FakeCompactor(keep_last(1))
    schema = ToolSchema("lookup", "Look a topic up " + filler(30), {"type": "object", "properties": {}}, False)
    request = ChatRequest((SYSTEM, *transcript(5)), tools=(schema,))
    await chat_through(mw_with(fake), ScriptedModel(["ok"]), request, make_test_ctx())
    overhead = estimate_tokens(request) - transcript_tokens(request.messages)
    assert overhead > 30 and fake.calls[0][1] == 300 - overhead


async def test_an_empty_rewrite_is_refused_and_the_request_sent_unchanged() -> None:
    tracer = RecordingTracer()
    fake = FakeCompactor(lambda m: ())
    model = ScriptedModel(["ok"])
    request = ChatRequest((SYSTEM, *transcript(5)))
    result = await chat_through(mw_with(fake), model, request, make_test_ctx(services={"tracer": tracer}))
    assert model.requests[0] is request
    assert result.warnings == (
        f"compaction refused: fake: the compactor returned an empty transcript; the request was sent unchanged "
        f"({estimate_tokens(request):,} tokens, budget 300)",)
    assert result.text == "ok"
    assert tracer.spans[0][1]["outcome"] == "refused"


@pytest.mark.parametrize("rewrite,fragment", [
    (lambda m: m[1:], "leading system message"),  # drops the system message
    (lambda m: (m[0], m[-1]), "not a whole unit"),  # keeps a tool result without its call
    (lambda m: (m[0], m[1], m[1]), "out of order or repeated"),
])
async def test_a_rewrite_breaking_an_invariant_is_refused(rewrite: Any, fragment: str) -> None:
    model = ScriptedModel(["ok"])
    request = ChatRequest((SYSTEM, *transcript(4)))  # ends with a tool unit
    result = await chat_through(mw_with(FakeCompactor(rewrite)), model, request, make_test_ctx())
    assert model.requests[0] is request
    (warning,) = result.warnings
    assert warning.startswith("compaction refused: fake: the rewrite breaks the compaction invariants")
    assert fragment in warning, warning


async def test_still_over_the_budget_is_recorded() -> None:
    fake = FakeCompactor(keep_last(1))
    request = ChatRequest((SYSTEM, *transcript(3, size=400)))
    result = await chat_through(mw_with(fake), ScriptedModel(["ok"]), request, make_test_ctx())
    assert WARNING.match(result.warnings[0])
    assert result.warnings[1].startswith("compaction: the request is still over the budget")


async def test_compactor_errors_propagate() -> None:
    class Boom:
        name = "boom"

        async def compact(self, messages: Any, *, budget_tokens: int, ctx: Any = None) -> Any:
            raise RuntimeError("summariser down")

    with pytest.raises(RuntimeError, match="summariser down"):
        await chat_through(mw_with(Boom()), ScriptedModel(["ok"]), ChatRequest(transcript(6)), make_test_ctx())


async def test_the_324k_character_transcript_is_compacted_with_truncation() -> None:
    mw = build(CompactionConfig.model_validate({"compactor": {"use": "truncation"}, "budget_tokens": 4000}))
    model = ScriptedModel(["ok"])
    request = ChatRequest(big_tool_call_transcript())
    before = estimate_tokens(request)
    result = await chat_through(mw, model, request, make_test_ctx())
    sent = model.requests[0]
    assert before > 60_000 and estimate_tokens(sent) <= 4000
    assert not any(b.type == "tool_call" for m in sent.messages for b in m.content)  # the big unit went whole
    assert len(sent.messages) == len(request.messages) - 3  # the task, the call and its result
    assert result.warnings == (f"compacted 3 messages ({before:,} -> {estimate_tokens(sent):,} tokens) "
                               f"with truncation",)


async def test_tool_calls_are_not_wrapped() -> None:
    mw = build(CompactionConfig.model_validate({"compactor": "truncation", "budget_tokens": 10}))
    assert mw.kinds == frozenset({"chat"})  # type: ignore[attr-defined]
    result = ToolResult("c1", "lookup", "x")

    async def nxt(call: Call) -> AsyncIterator[Any]:
        yield result

    call = Call("tool", ToolRequest(ToolCall("c1", "lookup")), make_test_ctx())
    assert [i async for i in mw(call, nxt)] == [result]


class _Windowed:
    provider, model = "fake", "windowed"
    context_window = 1000


async def test_budget_fraction_reads_the_context_window() -> None:
    cfg = {"compactor": "truncation", "budget_tokens": None}
    assert mw_with(None, **cfg, budget_fraction=0.5).budget_for(_Windowed()) == 500
    n_ctx_model = SimpleNamespace(provider="llamacpp", model="gemma", config=SimpleNamespace(n_ctx=2048))
    assert mw_with(None, **cfg, budget_fraction=0.25).budget_for(n_ctx_model) == 512
    assert mw_with(None, **cfg, budget_fraction=0.5, context_tokens=4000).budget_for(_Windowed()) == 2000
    with pytest.raises(ConfigError) as info:
        mw_with(None, **cfg, budget_fraction=0.5).budget_for(ScriptedModel(["ok"]))
    assert "scripted:scripted does not say it" in str(info.value) and info.value.issues[0].path == "context_tokens"


@pytest.mark.parametrize("params,fragment", [
    ({"compactor": "truncation"}, "exactly one of budget_tokens and budget_fraction"),
    ({"compactor": "truncation", "budget_tokens": 10, "budget_fraction": 0.5}, "exactly one"),
    ({"compactor": "truncation", "budget_tokens": 10, "context_tokens": 100}, "only used with budget_fraction"),
    ({"compactor": "truncation", "budget_fraction": 1.5}, "less than or equal to 1"),
    ({"budget_tokens": 10}, "Field required"),
])
def test_bad_configs_are_refused(params: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(fragment)):
        CompactionConfig.model_validate(params)


def test_built_from_the_registry_with_its_compactor() -> None:
    mw = get_registry().build("middleware", "compaction",
                              {"compactor": {"use": "truncation"}, "budget_tokens": 100})
    assert isinstance(mw, Compaction) and mw.compactor.name == "truncation"
    assert repr(mw) == "Compaction(compactor=truncation, budget_tokens=100)"
    with pytest.raises(ConfigError) as info:
        get_registry().build("middleware", "compaction", {"compactor": {"use": "trunkation"}, "budget_tokens": 100})
    (issue,) = info.value.issues
    assert issue.path == "compactor.use" and "did you mean 'truncation'" in issue.message


def test_an_empty_request_passes() -> None:
    import asyncio

    req = ChatRequest(())
    new, warnings = asyncio.run(mw_with(FakeCompactor(lambda m: m)).rewrite(req, make_test_ctx()))
    assert new is req and warnings == []


def test_messages_count_is_a_multiset_difference() -> None:
    from seamkit_compaction.middleware import _changed

    a, b = Message.user("a"), Message.user("b")
    assert _changed((a, a, b), (a, b)) == 1 and _changed((a, b), (b, a)) == 0 and _changed((a,), ()) == 1


async def test_a_compactor_that_cannot_shrink_is_recorded_as_such() -> None:
    fake = FakeCompactor(lambda m: m, notes=["nothing to summarise"])
    model = ScriptedModel(["ok"])
    request = ChatRequest((SYSTEM, *transcript(5)))
    result = await chat_through(mw_with(fake), model, request, make_test_ctx())
    assert model.requests[0].messages == request.messages
    assert result.warnings == (
        f"compaction: fake left the request as it was ({estimate_tokens(request):,} tokens, budget 300)",
        "compaction: nothing to summarise")
