"""A request over ``budget_tokens`` (``seamkit._request.fit`` through ``RequestBuilder.build``):
earlier tool results condensed in place, earlier turns summarized into the system head, the
oldest rounds dropped, the request and the latest round never touched, tools left out last."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from seamkit._compaction import SUMMARY_MARKER, summary_message, turn_units
from seamkit._request import ContextBudgetExceeded, RequestBuilder
from seamkit._request.fit import CONDENSED_TEMPLATE, fit_request
from seamkit._runtime.context import RunContext
from seamkit.values import Message, ToolCall, ToolResult, ToolSchema

HISTORY = (Message.user("old question " * 80), Message.assistant("old answer " * 80))
REQUEST = Message.user("what now?")
ROUND_1 = (Message("assistant", (ToolCall("c1", "lookup", {"key": "a"}),)),
           Message("tool", (ToolResult("c1", "lookup", "alpha " * 200),)))
LATEST = (Message("assistant", (ToolCall("c2", "lookup", {"key": "b"}),)),
          Message("tool", (ToolResult("c2", "lookup", "beta " * 200),)))
TAIL = (*HISTORY, REQUEST, *ROUND_1, *LATEST)


async def build(budget: int, **kw: Any) -> tuple[tuple[Message, ...], tuple[Message, ...], Any]:
    builder = RequestBuilder(prompt="You answer questions.", budget_tokens=budget, budget_check=lambda b: None,
                             **kw)
    built = await builder.build(builder.context(), TAIL)
    if built.fitting is not None:  # the running count is the estimate of what is sent
        assert built.fitting.tokens_after == built.estimated_tokens
    return built.prefix, built.tail, built.fitting


def untouched_end(tail: tuple[Message, ...]) -> bool:
    """The request is there as it was, and the latest round closes the tail, exactly as it was."""
    return REQUEST in tail and tail[-2:] == LATEST


async def test_within_the_budget_nothing_is_fitted() -> None:
    prefix, tail, fitting = await build(50_000)
    assert tail == TAIL and fitting is None and prefix == (Message.system("You answer questions."),)


async def test_first_earlier_round_results_are_condensed_in_place() -> None:
    _, tail, fitting = await build(700)
    assert fitting.condensed == ("c1",) and fitting.summarized == 0 and fitting.dropped == 0
    assert tail[:2] == HISTORY and untouched_end(tail)
    condensed = tail[4].tool_results[0]
    assert (condensed.call_id, condensed.name, condensed.is_error) == ("c1", "lookup", False)
    assert condensed.content == CONDENSED_TEMPLATE.format(chars=1200, head=("alpha " * 14).strip()[:79] + "…")
    assert tail[3] == ROUND_1[0]  # the call keeps its id and arguments
    assert fitting.tokens_after <= 700 < fitting.tokens_before


async def test_then_earlier_turns_are_summarized_into_the_system_head() -> None:
    prefix, tail, fitting = await build(400)
    assert fitting.summarized == 2 and fitting.dropped == 0
    assert tail[0] == REQUEST and untouched_end(tail)
    head = prefix[0].text
    assert head.startswith("You answer questions.\n\n" + SUMMARY_MARKER)
    assert "- user: old question old question" in head and "- assistant: old answer" in head
    assert len(prefix) == 1


async def test_then_the_oldest_rounds_are_dropped_whole() -> None:
    _, tail, fitting = await build(300)
    assert fitting.dropped == 2 and fitting.dropped_calls == ("c1",)
    assert tail == (REQUEST, *LATEST)
    assert fitting.tokens_after <= 300


async def test_the_request_and_the_latest_round_are_never_touched_even_over_the_budget() -> None:
    builder = RequestBuilder(prompt="You answer questions.", budget_tokens=150)
    with pytest.raises(ContextBudgetExceeded):
        await builder.build(builder.context(), TAIL)
    _, tail, fitting = await build(150)
    assert tail == (REQUEST, *LATEST) and fitting.tokens_after > 150


class Summarizer:
    """A compactor writing one summary for whatever it is given."""

    name = "summarizer"

    def __init__(self) -> None:
        self.given: list[tuple[Message, ...]] = []

    async def compact(self, messages: Sequence[Message], *, budget_tokens: int,
                      ctx: RunContext | None = None) -> tuple[Message, ...]:
        self.given.append(tuple(messages))
        return (summary_message("the person asked about old things"),)


async def test_a_configured_compactor_summarizes_the_earlier_turns_only() -> None:
    compactor = Summarizer()
    prefix, tail, fitting = await build(400, compactor=compactor)
    assert compactor.given == [HISTORY]  # never the request nor the rounds of this answer
    assert prefix[0].text.endswith(f"{SUMMARY_MARKER}\nthe person asked about old things")
    assert tail[0] == REQUEST and untouched_end(tail) and fitting.summarized == 2


async def test_units_stay_whole_at_every_budget() -> None:
    for budget in range(100, 900, 25):
        _, tail, _ = await build(budget)
        calls = {c.id for m in tail for c in m.tool_calls}
        results = [r.call_id for m in tail for r in m.tool_results]
        assert sorted(results) == sorted(calls), budget
        assert untouched_end(tail)
        assert all(len(u) in (1, 2) for u in turn_units(tail))


async def test_tools_are_left_out_only_when_that_alone_makes_it_fit() -> None:
    big = ToolSchema("search", "Search every record of the archive by keyword. " * 60, {"type": "object"},
                     side_effecting=False)
    tail = (Message.user("hello"),)
    prefix, fitted, fitting = await fit_request((), tail, budget_tokens=200, tools=(big,))
    assert fitting.without_tools and fitted == tail and prefix == ()
    _, _, fitting = await fit_request((), tail, budget_tokens=2, tools=(big,))
    assert not fitting.without_tools  # nothing fits either way: the tools stay, the budget check decides
