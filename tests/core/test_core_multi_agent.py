"""Multi-agent (``seamkit._agent.as_tool``, ``seamkit._agent.handoff``): an agent as another's tool
(a child run: its run id, parent, budget, depth, cancellation, usage, typed output) and handoffs
(filters, who answered, resume)."""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal
from typing import Any

import pydantic
import pytest
from seamkit._agent.agent import Agent
from seamkit._agent.as_tool import DEFAULT_INPUT, agent_tool
from seamkit._agent.handoff import Handoff, filter_messages
from seamkit._durability.approvals import approve
from seamkit._pricing import Price
from seamkit._runtime.context import RunContext
from seamkit._tools import tool
from seamkit.errors import RunCancelled
from seamkit.testing import ScriptedModel
from seamkit.testing._memory_store import MemoryStore
from seamkit.testing._models import ScriptedTurn
from seamkit.values import Message, StreamEvent, ToolCall, ToolResult, Usage, thaw
from seamkit_budget import BudgetMiddleware


def call(name: str, arguments: dict[str, Any] | None = None, id: str | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "arguments": arguments or {}}
    if id is not None:
        c["id"] = id
    return {"tool_calls": [c]}


def tool_results(result: Any) -> list[ToolResult]:
    return [b for m in result.transcript if m.role == "tool" for b in m.content if isinstance(b, ToolResult)]


# --- agent as tool ------------------------------------------------------------------------------


async def test_agent_tool_runs_the_agent_as_a_child_run_recorded_in_the_checkpoints() -> None:
    store = MemoryStore()
    researcher = Agent(ScriptedModel(["Paris is the capital of France."]), name="researcher", checkpointer=store)
    lead_model = ScriptedModel([call("researcher", {"task": "capital of France?"}), "It is Paris."])
    lead = Agent(lead_model, name="lead", tools=[agent_tool(researcher)], checkpointer=store)

    result = await lead.run("What is the capital of France?")

    assert result.output == "It is Paris."
    assert [r.content for r in tool_results(result)] == ["Paris is the capital of France."]
    children = await lead.checkpointer.list_runs(parent_run_id=result.run_id)
    assert len(children) == 1
    child = await lead.checkpointer.latest(children[0].run_id)
    assert child is not None and child.run_id != result.run_id
    assert child.parent_run_id == result.run_id and child.status == "done"
    assert child.state["agent"] == "researcher"
    assert [m.text for m in child.transcript if m.role == "user"] == ["capital of France?"]


def test_agent_tool_schema_defaults_to_a_task_and_takes_name_and_description() -> None:
    a = Agent(ScriptedModel(["x"]), name="my agent!")
    t = agent_tool(a)
    assert t.schema.name == "my_agent_" and thaw(t.schema.parameters) == thaw(DEFAULT_INPUT)
    assert "my agent!" in t.schema.description and not t.schema.side_effecting
    about = "Ask the expert about anything in the manual."
    named = agent_tool(a, name="ask_expert", description=about)
    assert (named.schema.name, named.schema.description) == ("ask_expert", about)


def test_agent_tool_is_side_effecting_when_the_agent_has_a_side_effecting_tool() -> None:
    @tool(side_effecting=True)
    def send(text: str) -> str:
        """Send a text message to the team channel and return its id."""
        return "m1"

    assert agent_tool(Agent(ScriptedModel(["x"]), tools=[send])).schema.side_effecting
    assert not agent_tool(Agent(ScriptedModel(["x"]), tools=[send]), side_effecting=False).schema.side_effecting


class Answer(pydantic.BaseModel):
    city: str
    population_m: float


async def test_typed_output_of_the_child_is_the_tool_result_as_json() -> None:
    child = Agent(ScriptedModel(['{"city": "Paris", "population_m": 2.1}']), name="facts", output=Answer)
    lead = Agent(ScriptedModel([call("facts", {"task": "Paris?"}), "done"]), name="lead", tools=[agent_tool(child)])
    result = await lead.run("go")
    (r,) = tool_results(result)
    assert not r.is_error and json.loads(r.content) == {"city": "Paris", "population_m": 2.1}


class Query(pydantic.BaseModel):
    topic: str
    depth: int = 1


async def test_declared_input_type_is_the_schema_and_the_child_gets_the_arguments_as_json() -> None:
    child_model = ScriptedModel(["noted"])
    child = Agent(child_model, name="researcher")
    t = agent_tool(child, input=Query)
    assert t.schema.parameters["required"] == ["topic"]
    lead = Agent(ScriptedModel([call("researcher", {"topic": "tides", "depth": 2}), "ok"]), tools=[t])
    await lead.run("go")
    user = [m.text for m in child_model.requests[0].messages if m.role == "user"]
    assert [json.loads(u) for u in user] == [{"topic": "tides", "depth": 2}]


async def test_arguments_the_input_refuses_are_an_error_result_and_the_child_does_not_run() -> None:
    child_model = ScriptedModel(["never"])
    t = agent_tool(Agent(child_model, name="researcher"), input=Query)
    lead = Agent(ScriptedModel([call("researcher", {"depth": "deep"}), "ok"]), tools=[t])
    result = await lead.run("go")
    (r,) = tool_results(result)
    assert r.is_error and "topic" in r.content and child_model.calls == 0
    blank = Agent(ScriptedModel([call("researcher", {"task": "  "}), "ok"]),
                  tools=[agent_tool(Agent(child_model, name="researcher"))])
    (r,) = tool_results(await blank.run("go"))
    assert r.is_error and "task" in r.content and child_model.calls == 0


def test_input_must_describe_an_object() -> None:
    with pytest.raises(ValueError, match="object"):
        agent_tool(Agent(ScriptedModel(["x"])), input={"type": "string"})
    with pytest.raises(ValueError, match="max_depth"):
        agent_tool(Agent(ScriptedModel(["x"])), max_depth=0)
    with pytest.raises(TypeError):
        agent_tool("not an agent")  # type: ignore[arg-type]


async def test_usage_of_the_child_is_added_to_the_callers() -> None:
    def u(n: int) -> Usage:
        return Usage(input_tokens=n, requests=1, cost=Decimal("0.01"), cost_source="reported")

    child = Agent(ScriptedModel([ScriptedTurn(text="child answer", usage=u(100))]), name="child")
    lead = Agent(ScriptedModel([ScriptedTurn(tool_calls=({"name": "child", "arguments": {"task": "t"}},), usage=u(10)),
                                ScriptedTurn(text="final", usage=u(20))]),
                 tools=[agent_tool(child)])
    result = await lead.run("go")
    assert result.usage.requests == 3 and result.usage.input_tokens == 130
    assert result.usage.cost == Decimal("0.03")


class Priced(ScriptedModel):
    price = Price(input=Decimal(1), output=Decimal(1))


def priced_turn(**kw: Any) -> ScriptedTurn:
    return ScriptedTurn(usage=Usage(requests=1, cost=Decimal("0.10"), cost_source="reported"), **kw)


async def test_budget_is_charged_to_the_parent_through_a_shared_budget_middleware() -> None:
    budget = BudgetMiddleware("10", default_max_tokens=10)
    child = Agent(Priced([priced_turn(text="child answer")]), name="child", middlewares=[budget], max_tokens=10)
    lead = Agent(Priced([priced_turn(**call("child", {"task": "t"})), priced_turn(text="final")]), name="lead",
                 middlewares=[budget], tools=[agent_tool(child)], max_tokens=10)
    result = await lead.run("go")
    assert result.output == "final"
    parent = budget.ledger(result.run_id)
    assert parent.spent == Decimal("0.30")  # two own calls and the child's
    assert parent.calls == 2


async def test_a_budget_share_refuses_the_childs_calls_over_it_and_the_caller_goes_on() -> None:
    share = BudgetMiddleware("0.10", default_max_tokens=10)
    child_model = Priced([priced_turn(text="first"), priced_turn(text="second")])
    child = Agent(child_model, name="child", max_tokens=10)
    lead = Agent(ScriptedModel([{"tool_calls": [{"name": "child", "arguments": {"task": "a"}, "id": "c1"}]},
                                {"tool_calls": [{"name": "child", "arguments": {"task": "b"}, "id": "c2"}]},
                                "final"]),
                 tools=[agent_tool(child, middlewares=[share])])
    result = await lead.run("go")
    first, second = tool_results(result)
    assert not first.is_error and first.content == "first"
    # the share covers every child run of this caller: the second one is refused before its model call
    assert second.is_error and "BudgetExceeded" in second.content
    assert child_model.calls == 1 and result.output == "final"


async def test_depth_limit_refuses_a_deeper_child_with_a_tool_error() -> None:
    leaf_model = ScriptedModel(["leaf answer"])
    leaf = Agent(leaf_model, name="leaf")
    middle_model = ScriptedModel([call("leaf", {"task": "deeper"}), "middle answer"])
    middle = Agent(middle_model, name="middle", tools=[agent_tool(leaf, max_depth=1)])
    top = Agent(ScriptedModel([call("middle", {"task": "t"}), "top answer"]), tools=[agent_tool(middle)])

    result = await top.run("go")

    assert result.output == "top answer" and leaf_model.calls == 0
    refused = [b for m in middle_model.requests[1].messages for b in m.content if isinstance(b, ToolResult)]
    assert len(refused) == 1 and refused[0].is_error
    assert "depth 2" in refused[0].content and "max_depth 1" in refused[0].content
    # the same leaf tool called from a top-level run is within its limit
    direct = Agent(ScriptedModel([call("leaf", {"task": "t"}), "ok"]), tools=[agent_tool(leaf, max_depth=1)])
    (r,) = tool_results(await direct.run("go"))
    assert r.content == "leaf answer"


async def test_depth_counts_agent_tool_calls_only_not_other_parents() -> None:
    # a caller that is itself a child run (a workflow step, another run's child) calls its agent
    # tools as it does on its own: it was refused "at depth 2" as a workflow step
    leaf = Agent(ScriptedModel(["leaf answer", "leaf again"]), name="leaf")
    caller = Agent(ScriptedModel([call("leaf", {"task": "t"}), "ok"]), tools=[agent_tool(leaf, max_depth=1)])
    step = RunContext(parent_run_id="run_workflow", ancestors=("run_workflow", "run_outer"))

    (r,) = tool_results(await caller.run("go", ctx=step))

    assert not r.is_error and r.content == "leaf answer"
    # a run no agent tool started may itself be the child of another run: still depth 0
    seen: list[RunContext] = []

    @tool(side_effecting=False)
    async def probe(ctx: RunContext) -> str:
        """Record the run context."""
        seen.append(ctx)
        return "seen"

    inner = Agent(ScriptedModel([call("probe", {}), "done"]), name="inner", tools=[probe])
    outer = Agent(ScriptedModel([call("inner", {"task": "t"}), "ok"]), tools=[agent_tool(inner, max_depth=1)])
    await outer.run("go", ctx=step.child())
    assert [c.agent_depth for c in seen] == [1]


async def test_cancelling_the_caller_cancels_the_child_run() -> None:
    started = asyncio.Event()
    seen: list[RunContext] = []

    @tool(side_effecting=False)
    async def wait_forever(ctx: RunContext) -> str:
        """Wait until the run is cancelled (a stand-in for slow work) and return nothing."""
        seen.append(ctx)
        started.set()
        await asyncio.Event().wait()
        return "never"

    store = MemoryStore()
    child = Agent(ScriptedModel([call("wait_forever")]), name="child", tools=[wait_forever], checkpointer=store)
    ctx = RunContext()
    lead = Agent(ScriptedModel([call("child", {"task": "t"})]), name="lead", tools=[agent_tool(child)],
                 checkpointer=store)
    task = asyncio.ensure_future(lead.run("go", ctx=ctx))
    await asyncio.wait_for(started.wait(), 10)
    ctx.cancellation.cancel("the person left")
    with pytest.raises(RunCancelled):
        await asyncio.wait_for(task, 10)
    (child_ctx,) = seen
    assert child_ctx.cancellation.cancelled and child_ctx.parent_run_id == ctx.run_id
    snap = await child.checkpointer.latest(child_ctx.run_id)
    assert snap is not None and snap.status == "running" and snap.state.get("interrupted")


async def test_a_child_that_stops_without_an_answer_is_an_error_result() -> None:
    looping = Agent(ScriptedModel([call("child_tool")], repeat=True), name="child", max_steps=1,
                    tools=[agent_tool(Agent(ScriptedModel(["x"], repeat=True), name="child_tool"))])
    lead = Agent(ScriptedModel([call("child", {"task": "t"}), "ok"]), tools=[agent_tool(looping)])
    (r,) = tool_results(await lead.run("go"))
    assert r.is_error and "gave no answer" in r.content and "1 model turns" in r.content


async def test_max_steps_of_the_tool_bounds_the_child() -> None:
    child = Agent(ScriptedModel([call("leaf", {"task": "t"}), "late answer"]), name="child", max_steps=5,
                  tools=[agent_tool(Agent(ScriptedModel(["leaf"]), name="leaf"))])
    lead = Agent(ScriptedModel([call("child", {"task": "t"}), "ok"]), tools=[agent_tool(child, max_steps=1)])
    (r,) = tool_results(await lead.run("go"))
    assert r.is_error and "gave no answer" in r.content


# --- handoffs -----------------------------------------------------------------------------------


def history() -> list[Message]:
    return [Message.user("hello"), Message.assistant("hi, how can I help?"), Message.user("my invoice is wrong")]


def billing(model: ScriptedModel, **kw: Any) -> Agent:
    return Agent(model, name="billing", prompt="You handle billing.", **kw)


@pytest.mark.parametrize(("rule", "seen"), [
    ("all", [("user", "hello"), ("assistant", "hi, how can I help?"), ("user", "my invoice is wrong"),
             ("assistant", "let me transfer you"), ("tool", "")]),
    ("no_tools", [("user", "hello"), ("assistant", "hi, how can I help?"), ("user", "my invoice is wrong"),
                  ("assistant", "let me transfer you")]),
    ("user_only", [("user", "hello"), ("user", "my invoice is wrong")]),
    ("last_user", [("user", "my invoice is wrong")]),
])
async def test_the_target_sees_the_transcript_through_the_handoffs_filter(rule: str, seen: list[Any]) -> None:
    target_model = ScriptedModel(["Refund issued."])
    triage = Agent(ScriptedModel([{"text": "let me transfer you", "tool_calls": [{"name": "transfer_to_billing"}]}]),
                   name="triage", prompt="You route requests.",
                   handoffs=[Handoff(billing(target_model), filter=rule)])  # type: ignore[arg-type]

    result = await triage.run(history()[-1], history=history()[:-1])

    assert result.output == "Refund issued."
    assert result.answered_by == "billing" and result.handoffs == ("triage", "billing")
    messages = target_model.requests[0].messages
    assert messages[0].role == "system" and messages[0].text == "You handle billing."
    assert [(m.role, m.text) for m in messages[1:]] == seen
    # the stored transcript is the whole conversation, as it happened
    assert [m.role for m in result.transcript] == ["system", "user", "assistant", "user", "assistant", "tool",
                                                    "assistant"]


def test_filter_messages_keeps_text_of_an_assistant_turn_and_drops_its_calls() -> None:
    turn = Message("assistant", (*Message.assistant("checking").content, ToolCall("c1", "lookup", {})))
    out = filter_messages("no_tools", [Message.system("s"), turn, Message("tool", (ToolResult("c1", "lookup", "x"),))])
    assert [(m.role, m.text, m.tool_calls) for m in out] == [("assistant", "checking", ())]
    with pytest.raises(ValueError, match="unknown handoff filter"):
        filter_messages("some", [])


async def test_without_a_handoff_the_agent_answers_itself_and_the_transfer_tool_is_offered() -> None:
    model = ScriptedModel(["I can answer that."])
    triage = Agent(model, name="triage", handoffs=[billing(ScriptedModel(["no"]))])
    result = await triage.run("hi")
    assert result.answered_by == "triage" and result.handoffs == ()
    assert [t.name for t in model.requests[0].tools] == ["transfer_to_billing"]
    assert "billing" in model.requests[0].tools[0].description


async def test_the_holders_tools_and_max_steps_apply_after_a_handoff() -> None:
    @tool(side_effecting=False)
    def refund(invoice: str) -> str:
        """Refund an invoice by its number and return the refund id."""
        return f"refund for {invoice}"

    target_model = ScriptedModel([call("refund", {"invoice": "A1"}), "Refunded."])
    triage = Agent(ScriptedModel([call("transfer_to_billing")]), name="triage", max_steps=1,
                   handoffs=[billing(target_model, tools=[refund], max_steps=2)])
    result = await triage.run("refund A1")
    # triage's one step did not count against billing's two
    assert result.output == "Refunded." and result.steps == 3 and result.stop_reason == "completed"
    assert [t.name for t in target_model.requests[0].tools] == ["refund"]


async def test_a_chain_of_handoffs_filters_what_each_holder_saw() -> None:
    last_model = ScriptedModel(["final from refunds"])
    refunds = Agent(last_model, name="refunds", prompt="You do refunds.")
    billing_agent = Agent(ScriptedModel([call("transfer_to_refunds")]), name="billing", prompt="You handle billing.",
                          handoffs=[Handoff(refunds, filter="all")])
    triage = Agent(ScriptedModel([call("transfer_to_billing")]), name="triage", prompt="You route.",
                   handoffs=[Handoff(billing_agent, filter="last_user")])
    result = await triage.run("refund please")
    assert result.answered_by == "refunds" and result.handoffs == ("triage", "billing", "refunds")
    msgs = last_model.requests[0].messages
    # refunds sees what billing saw (only the person's last message, not triage's transfer), then billing's turn
    assert [(m.role, m.text) for m in msgs[:2]] == [("system", "You do refunds."), ("user", "refund please")]
    assert [m.role for m in msgs[2:]] == ["assistant", "tool"]
    assert msgs[2].tool_calls[0].name == "transfer_to_refunds"


async def test_stream_reports_the_handoff() -> None:
    triage = Agent(ScriptedModel([call("transfer_to_billing")]), name="triage",
                   handoffs=[Handoff(billing(ScriptedModel(["ok"])), filter="no_tools")])
    events: list[StreamEvent] = [e async for e in triage.stream("hi")]
    kinds = [e.kind for e in events]
    assert kinds.count("run_started") == 1 and kinds[-1] == "run_finished"
    (h,) = [e for e in events if e.kind == "handoff"]
    assert thaw(h.data) == {"from": "triage", "to": "billing", "filter": "no_tools"}
    assert events[-1].data["result"].answered_by == "billing"


async def test_a_handed_off_run_resumes_with_the_agent_that_holds_it() -> None:
    @tool(side_effecting=True)
    def refund(invoice: str) -> str:
        """Refund an invoice by its number and return the refund id."""
        return f"refund for {invoice}"

    store = MemoryStore()

    def build() -> tuple[Agent, ScriptedModel]:
        target_model = ScriptedModel([call("refund", {"invoice": "A1"}), "Refunded A1."], follow_transcript=True)
        target = billing(target_model, tools=[refund], approvals={"refund": "every_call"}, checkpointer=store)
        triage = Agent(ScriptedModel([call("transfer_to_billing")], follow_transcript=True), name="triage",
                       checkpointer=store, handoffs=[Handoff(target, filter="user_only")])
        return triage, target_model

    triage, _ = build()
    first = await triage.run("refund A1")
    assert first.stop_reason == "suspended" and first.answered_by == "billing"
    snap = await triage.checkpointer.latest(first.run_id)
    assert snap is not None and snap.state["agent"] == "billing"
    assert [(h["from"], h["to"], h["filter"]) for h in snap.state["handoffs"]] == [("triage", "billing", "user_only")]

    triage2, target_model = build()  # another process: fresh agents, the same store
    (pending,) = first.pending_approvals
    result = await triage2.resume(first.run_id, decisions={pending.call_id: approve()})
    assert result.output == "Refunded A1." and result.answered_by == "billing"
    assert result.handoffs == ("triage", "billing")
    msgs = target_model.requests[0].messages  # billing's view after resuming: still filtered
    assert [(m.role, m.text) for m in msgs[:2]] == [("system", "You handle billing."), ("user", "refund A1")]
    done = await triage2.resume(first.run_id, allow_finished=True)
    assert done.answered_by == "billing" and done.handoffs == ("triage", "billing")


async def test_a_failed_turn_of_the_target_runs_again_with_the_target() -> None:
    from seamkit.errors import FailureClass, ProviderError

    store = MemoryStore()

    def build(target_turns: list[Any]) -> tuple[Agent, ScriptedModel, ScriptedModel]:
        target_model = ScriptedModel(target_turns)
        triage_model = ScriptedModel([call("transfer_to_billing")])
        triage = Agent(triage_model, name="triage", checkpointer=store,
                       handoffs=[Handoff(billing(target_model, checkpointer=store), filter="no_tools")])
        return triage, triage_model, target_model

    ctx = RunContext()
    triage, _, _ = build([ProviderError("down", FailureClass.OVERLOADED, provider="scripted")])
    with pytest.raises(ProviderError):
        await triage.run("hi", ctx=ctx)
    triage, triage_model, target_model = build(["back again"])
    result = await triage.resume(ctx.run_id, allow_finished=True)
    assert result.output == "back again" and result.answered_by == "billing"
    assert triage_model.calls == 0 and [m.role for m in target_model.requests[0].messages] == ["system", "user"]


async def test_resume_refuses_a_run_held_by_an_agent_it_cannot_reach() -> None:
    from seamkit.errors import RunNotResumable

    store = MemoryStore()
    target = billing(ScriptedModel([call("refund_tool")]), checkpointer=store, approvals={"refund_tool": "every_call"},
                     tools=[agent_tool(Agent(ScriptedModel(["x"]), name="refund_tool"))])
    triage = Agent(ScriptedModel([call("transfer_to_billing")]), name="triage", checkpointer=store, handoffs=[target])
    first = await triage.run("hi")
    assert first.stop_reason == "suspended"
    other = Agent(ScriptedModel(["x"]), name="triage", checkpointer=store)
    with pytest.raises(RunNotResumable, match="billing"):
        await other.resume(first.run_id, decisions={first.pending_approvals[0].call_id: approve()})


def test_the_multi_agent_names_are_exported_at_the_top_level() -> None:
    import seamkit
    from seamkit._agent.as_tool import AgentTool

    assert (seamkit.agent_tool, seamkit.AgentTool, seamkit.Handoff) == (agent_tool, AgentTool, Handoff)
    assert {"agent_tool", "AgentTool", "Handoff"} <= set(seamkit.__all__)


def test_handoff_construction_errors() -> None:
    with pytest.raises(ValueError, match="variables"):
        Agent(ScriptedModel(["x"]), handoffs=[Agent(ScriptedModel(["x"]), name="t", prompt="Hi {{name}}")])
    with pytest.raises(ValueError, match="duplicate tool name 'transfer_to_t'"):
        Agent(ScriptedModel(["x"]), handoffs=[Agent(ScriptedModel(["x"]), name="t"),
                                              Agent(ScriptedModel(["y"]), name="t")])
    with pytest.raises(ValueError, match="unknown handoff filter"):
        Handoff(Agent(ScriptedModel(["x"])), filter="none")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Handoff("billing")  # type: ignore[arg-type]
