"""Tool-loop controls (``seamkit._agent.controls``): limits on tool calls and tool rounds, disabled
and withdrawn tools, gather mode, and a request over its input budget, on scripted models."""

from __future__ import annotations

from typing import Any

import pytest
from seamkit._agent.agent import Agent
from seamkit._agent.controls import GATHER_HEADER, LIMIT_NOTE, LIMIT_RESULT
from seamkit._agent.loop import TOOLS_DROPPED_WARNING, answer_unanswered_calls
from seamkit._durability.approvals import approve, reject
from seamkit._request import RequestBuilder
from seamkit._tools import tool
from seamkit.testing import ScriptedModel
from seamkit.testing._memory_store import MemoryStore
from seamkit.values import ChatRequest, Message, StreamEvent, ToolResult


def calls(*specs: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"name": n, "arguments": a} for n, a in specs]}


def make_tools(ran: list[str]) -> list[Any]:
    @tool(side_effecting=False)
    def add(a: int, b: int) -> int:
        """Add two integers and return their sum."""
        ran.append(f"add {a} {b}")
        return a + b

    @tool(side_effecting=False)
    def lookup(key: str) -> str:
        """Look a key up in the reference table and return its value."""
        ran.append(f"lookup {key}")
        return f"value of {key}"

    return [add, lookup]


def results_seen(request: ChatRequest) -> dict[str, ToolResult]:
    return {r.call_id: r for m in request.messages for r in m.tool_results}


def every_call_answered_once(transcript: tuple[Message, ...]) -> bool:
    _, added, left_out = answer_unanswered_calls(transcript, last_is_due=False)
    return not added and not left_out


# --- limits ----------------------------------------------------------------------------------


async def test_four_of_five_calls_used_and_two_asked_for_only_the_first_runs() -> None:
    ran: list[str] = []
    model = ScriptedModel([
        calls(*[("add", {"a": i, "b": 0}) for i in range(4)]),
        calls(("add", {"a": 4, "b": 0}), ("add", {"a": 5, "b": 0})),
        "the sums",
    ])
    result = await Agent(model, tools=make_tools(ran), max_tool_calls=5).run("add")
    assert ran == [f"add {i} 0" for i in range(5)]  # the sixth call never ran
    assert model.calls == 3 and result.output == "the sums"
    assert result.stopped_early and result.limit_reached == "max_tool_calls"
    last = model.requests[2]
    second_turn = result.transcript[3].tool_calls
    seen = results_seen(last)
    assert seen[second_turn[0].id].content == "4" and not seen[second_turn[0].id].is_error
    refused = seen[second_turn[1].id]
    assert refused.is_error and refused.content == LIMIT_RESULT.format(what="tool calls", n=5)
    # the answer turn: no tool may be called, and the model is told why
    assert last.tool_choice == "none"
    assert last.messages[-1] == Message.user(LIMIT_NOTE.format(what="tool calls", n=5))
    assert every_call_answered_once(result.transcript)
    assert any("max_tool_calls (5)" in w for w in result.warnings)


async def test_the_rounds_limit_makes_the_next_turn_answer_without_tools() -> None:
    ran: list[str] = []
    model = ScriptedModel([calls(("lookup", {"key": "a"})), calls(("lookup", {"key": "b"})), "answer from a and b"])
    result = await Agent(model, tools=make_tools(ran), max_tool_rounds=2).run("look up")
    assert ran == ["lookup a", "lookup b"] and model.calls == 3
    assert [r.tool_choice for r in model.requests] == ["auto", "auto", "none"]
    assert model.requests[2].messages[-1].text == LIMIT_NOTE.format(what="tool-calling turns", n=2)
    assert result.output == "answer from a and b"
    assert result.stopped_early and result.limit_reached == "max_tool_rounds"
    # the note is sent, not recorded: the transcript stays the conversation
    assert all(m.text != model.requests[2].messages[-1].text for m in result.transcript)


async def test_calls_the_model_makes_after_the_limit_are_answered_but_never_run() -> None:
    ran: list[str] = []
    model = ScriptedModel([calls(("add", {"a": 1, "b": 1})), calls(("add", {"a": 2, "b": 2})), "two"])
    result = await Agent(model, tools=make_tools(ran), max_tool_calls=1).run("add")
    assert ran == ["add 1 1"] and model.calls == 3
    late = result.transcript[3].tool_calls[0]
    assert results_seen(model.requests[2])[late.id].content == LIMIT_RESULT.format(what="tool calls", n=1)
    assert model.requests[2].tool_choice == "none" and result.output == "two"
    assert every_call_answered_once(result.transcript)


async def test_without_limits_nothing_stops_early() -> None:
    ran: list[str] = []
    model = ScriptedModel([calls(("add", {"a": 1, "b": 2})), calls(("add", {"a": 3, "b": 4})), "done"])
    result = await Agent(model, tools=make_tools(ran), max_tool_calls=3, max_tool_rounds=3).run("add")
    assert ran == ["add 1 2", "add 3 4"]
    assert not result.stopped_early and result.limit_reached is None and result.warnings == ()
    assert [r.tool_choice for r in model.requests] == ["auto", "auto", "auto"]


async def test_max_steps_stays_the_hard_stop() -> None:
    model = ScriptedModel([calls(("add", {"a": 1, "b": 2}))], repeat=True)
    result = await Agent(model, tools=make_tools([]), max_steps=3).run("loop")
    assert result.stop_reason == "max_steps" and result.output is None and not result.stopped_early


async def test_a_limit_reached_after_an_approval_survives_the_resume() -> None:
    store = MemoryStore()
    ran: list[str] = []
    turns: list[Any] = [calls(("add", {"a": 1, "b": 2})), "three"]
    agent = Agent(ScriptedModel(turns), tools=make_tools(ran), checkpointer=store, approvals={"add": "every_call"},
                  max_tool_calls=1)
    first = await agent.run("add")
    assert first.stop_reason == "suspended" and not first.stopped_early
    model = ScriptedModel(turns[1:])
    resumer = Agent(model, tools=make_tools(ran), checkpointer=store, approvals={"add": "every_call"},
                    max_tool_calls=1)
    done = await resumer.resume(first.run_id, decisions={first.pending_approvals[0].call_id: approve()})
    assert ran == ["add 1 2"] and done.output == "three"
    assert model.requests[0].tool_choice == "none" and done.stopped_early
    again = await resumer.resume(first.run_id, allow_finished=True)
    assert again.stopped_early and again.limit_reached == "max_tool_calls"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"max_tool_calls": 0}, "max_tool_calls must be a positive integer"),
    ({"max_tool_calls": True}, "max_tool_calls must be a positive integer"),
    ({"max_tool_rounds": 10}, r"max_tool_rounds \(10\) must be below max_steps \(10\)"),
    ({"max_tool_rounds": 2, "max_steps": 2}, "must be below max_steps"),
    ({"disabled_tools": ["nope"]}, "disabled_tools name 'nope', which is not a tool of this agent"),
    ({"disabled_tools": ["add"], "tool_choice": "add"}, "tool_choice 'add' names a disabled tool"),
    ({"mode": "gahter"}, "mode must be one of answer, gather"),
    ({"mode": "gather", "output": int}, "gather mode returns a context block"),
])
def test_bad_controls_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Agent(ScriptedModel(["x"]), tools=make_tools([]), **kwargs)


# --- disabled and withdrawn tools ------------------------------------------------------------


async def test_a_disabled_tool_is_not_offered_and_a_call_to_it_is_an_unknown_tool() -> None:
    ran: list[str] = []
    model = ScriptedModel([calls(("lookup", {"key": "k"}), ("made_up", {})), "ok"])
    result = await Agent(model, tools=make_tools(ran), disabled_tools=["lookup"]).run("go")
    assert [t.name for t in model.requests[0].tools] == ["add"]
    assert ran == []
    disabled, made_up = result.transcript[2].tool_results
    # one wording for both: the invoker's for a tool the agent does not have
    assert disabled.is_error and disabled.content == "UnknownToolError: unknown tool 'lookup'; available tools: add"
    assert made_up.is_error and made_up.content == "UnknownToolError: unknown tool 'made_up'; available tools: add"


def test_approvals_may_keep_the_policy_of_a_disabled_tool() -> None:
    agent = Agent(ScriptedModel(["x"]), tools=make_tools([]), checkpointer=MemoryStore(),
                  approvals={"lookup": "every_call"}, disabled_tools={"lookup"})
    assert agent.disabled_tools == frozenset({"lookup"}) and agent.invoker.tools.names == ("add",)


async def test_a_disabled_tool_with_an_approval_policy_is_refused_without_asking() -> None:
    model = ScriptedModel([calls(("lookup", {"key": "k"})), "ok"])
    agent = Agent(model, tools=make_tools([]), checkpointer=MemoryStore(), approvals={"lookup": "every_call"},
                  disabled_tools={"lookup"})
    result = await agent.run("go")
    assert result.stop_reason == "completed" and result.pending_approvals == ()
    assert result.transcript[2].tool_results[0].content.startswith("UnknownToolError: unknown tool 'lookup'")


async def test_a_rejected_call_withdraws_its_tool_for_the_rest_of_the_run() -> None:
    store = MemoryStore()
    ran: list[str] = []
    turns: list[Any] = [calls(("lookup", {"key": "secret"})), calls(("lookup", {"key": "again"})), "gave up"]
    approvals = {"lookup": "every_call"}
    first = await Agent(ScriptedModel(turns), tools=make_tools(ran), checkpointer=store,
                        approvals=approvals).run("find")
    assert first.stop_reason == "suspended"
    model = ScriptedModel(turns[1:])
    agent = Agent(model, tools=make_tools(ran), checkpointer=store, approvals=approvals)
    done = await agent.resume(first.run_id, decisions={first.pending_approvals[0].call_id: reject("no")})
    assert ran == [] and done.stop_reason == "completed" and done.output == "gave up"
    # the later turns are not offered the tool, and the call the model made anyway was not asked
    # about (no suspension) nor run: it got the unknown-tool result
    assert [t.name for t in model.requests[0].tools] == ["add"]
    again = done.transcript[3].tool_calls[0]
    answer = results_seen(model.requests[1])[again.id]
    assert answer.content == "UnknownToolError: unknown tool 'lookup'; available tools: add"
    assert every_call_answered_once(done.transcript)


async def test_a_rejection_does_not_touch_the_other_calls_of_its_own_batch() -> None:
    store = MemoryStore()
    ran: list[str] = []
    turns: list[Any] = [calls(("lookup", {"key": "a"}), ("lookup", {"key": "b"})), "one value"]
    approvals = {"lookup": "every_call"}
    first = await Agent(ScriptedModel(turns), tools=make_tools(ran), checkpointer=store,
                        approvals=approvals).run("find")
    a, b = first.pending_approvals
    agent = Agent(ScriptedModel(turns[1:]), tools=make_tools(ran), checkpointer=store, approvals=approvals)
    done = await agent.resume(first.run_id, decisions={a.call_id: reject("no"), b.call_id: approve()})
    assert ran == ["lookup b"] and done.output == "one value"


# --- gather mode -----------------------------------------------------------------------------


async def test_gather_runs_one_decision_and_returns_the_results_as_a_block() -> None:
    ran: list[str] = []
    model = ScriptedModel([calls(("lookup", {"key": "a"}), ("add", {"a": 2, "b": 3}))])
    result = await Agent(model, tools=make_tools(ran), mode="gather").run("gather facts")
    assert model.calls == 1 and ran == ["lookup a", "add 2 3"]
    assert result.stop_reason == "completed" and result.steps == 1
    assert [(g.call.name, g.result.content) for g in result.gathered] == [("lookup", "value of a"), ("add", "5")]
    assert result.output == (f"{GATHER_HEADER} (2 tool calls):\n\n"
                             '[1] lookup {"key": "a"}\nvalue of a\n\n'
                             '[2] add {"a": 2, "b": 3}\n5')


async def test_gather_with_nothing_to_offer_returns_an_empty_block_without_a_model_call() -> None:
    for agent in (Agent(ScriptedModel([]), mode="gather"),
                  Agent(ScriptedModel([]), tools=make_tools([]), disabled_tools=["add", "lookup"], mode="gather")):
        result = await agent.run("gather")
        assert agent.model.calls == 0  # type: ignore[attr-defined]
        assert result.output == "" and result.gathered == () and result.steps == 0


async def test_gather_when_the_model_calls_no_tool_is_an_empty_block() -> None:
    model = ScriptedModel(["I need nothing"])
    result = await Agent(model, tools=make_tools([]), mode="gather").run("gather")
    assert model.calls == 1 and result.output == "" and result.gathered == ()


async def test_gather_lists_refused_calls_and_obeys_the_calls_limit() -> None:
    ran: list[str] = []
    model = ScriptedModel([calls(("lookup", {"key": "a"}), ("lookup", {"key": "b"}))])
    result = await Agent(model, tools=make_tools(ran), mode="gather", max_tool_calls=1).run("gather")
    assert ran == ["lookup a"] and model.calls == 1
    assert [g.result.is_error for g in result.gathered] == [False, True]
    assert "(error)" in result.output and result.stopped_early
    assert result.warnings == ("stopped early: max_tool_calls (1) was reached; calls past it were not run",)


async def test_gather_after_an_approval_finishes_without_another_model_call() -> None:
    store = MemoryStore()
    ran: list[str] = []
    turns: list[Any] = [calls(("lookup", {"key": "a"}))]
    approvals = {"lookup": "every_call"}
    first = await Agent(ScriptedModel(turns), tools=make_tools(ran), checkpointer=store, approvals=approvals,
                        mode="gather").run("gather")
    assert first.stop_reason == "suspended"
    model = ScriptedModel([])
    agent = Agent(model, tools=make_tools(ran), checkpointer=store, approvals=approvals, mode="gather")
    done = await agent.resume(first.run_id, decisions={first.pending_approvals[0].call_id: approve()})
    assert model.calls == 0 and ran == ["lookup a"]
    assert [g.result.content for g in done.gathered] == ["value of a"] and "value of a" in done.output
    stored = await agent.resume(first.run_id, allow_finished=True)
    assert stored.output == done.output and stored.gathered == done.gathered


# --- over the input budget -------------------------------------------------------------------


async def test_a_request_over_budget_is_condensed_and_an_event_says_so() -> None:
    ran: list[str] = []

    @tool(side_effecting=False)
    def page(n: int) -> str:
        """Return page n of the manual, as plain text."""
        ran.append(f"page {n}")
        return f"page {n}: " + "lorem ipsum dolor sit amet " * 120

    model = ScriptedModel([calls(("page", {"n": 1})), calls(("page", {"n": 2})), "summary of both pages"])
    agent = Agent(model, tools=[page], request_builder=RequestBuilder(prompt="You read manuals.", budget_tokens=1300))
    events: list[StreamEvent] = []
    async for e in agent.stream("read two pages"):
        events.append(e)
    result = events[-1].data["result"]
    assert result.output == "summary of both pages" and ran == ["page 1", "page 2"]
    first_call = result.transcript[1].tool_calls[0]
    latest_call = result.transcript[3].tool_calls[0]
    sent = results_seen(model.requests[2])
    # the earlier round's result is condensed in place (same call id), the latest one untouched
    assert sent[first_call.id].content.startswith("[condensed to fit the input budget:")
    assert sent[latest_call.id] == result.transcript[4].tool_results[0]
    assert model.requests[2].messages[1] == Message.user("read two pages")
    condensed = [e for e in events if e.kind == "context_condensed"]
    assert len(condensed) == 1 and condensed[0].step == 3
    data = condensed[0].data
    assert data["condensed"] == [first_call.id] and data["tokens_after"] < data["tokens_before"] <= 1300 + 2000
    assert data["tokens_after"] <= 1300 and not data["without_tools"]
    # the transcript keeps what the tools returned
    assert result.transcript[2].tool_results[0].content.startswith("page 1: lorem")


async def test_when_the_tool_schemas_leave_no_room_the_model_answers_without_tools() -> None:
    @tool(side_effecting=False, description="This tool searches every record of the archive by keyword. " * 40)
    def search(query: str) -> str:
        return "nothing"

    model = ScriptedModel(["an answer without tools"])
    agent = Agent(model, tools=[search], request_builder=RequestBuilder(budget_tokens=300))
    result = await agent.run("what is in the archive?")
    assert model.requests[0].tools == () and model.requests[0].tool_choice == "none"
    assert result.output == "an answer without tools" and TOOLS_DROPPED_WARNING in result.warnings


async def test_no_event_and_no_change_within_the_budget() -> None:
    model = ScriptedModel([calls(("add", {"a": 1, "b": 2})), "3"])
    agent = Agent(model, tools=make_tools([]), request_builder=RequestBuilder(prompt="p", budget_tokens=50_000))
    events = [e async for e in agent.stream("add")]
    assert not [e for e in events if e.kind == "context_condensed"]
    result = events[-1].data["result"]
    assert model.requests[1].messages[1:] == result.transcript[:-1]


async def test_no_event_when_fitting_could_not_make_the_request_smaller() -> None:
    model = ScriptedModel(["short answer"])
    # the request alone is over the budget: nothing may be touched; the budget check lets it go
    builder = RequestBuilder(prompt="p", budget_tokens=5, budget_check=lambda built: None)
    events = [e async for e in Agent(model, request_builder=builder).stream("a request that is over five tokens")]
    assert model.calls == 1 and not [e for e in events if e.kind == "context_condensed"]
