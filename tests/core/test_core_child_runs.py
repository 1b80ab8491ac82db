"""The child-run dispatcher seam (``seamkit._agent.child_runs``): an agent tool with a ``queue``
hands its child to the dispatcher the run offers in ``ctx.services``, under a run id derived from
the tool call; without a dispatcher (or without a queue) the child runs in-process."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from seamkit._agent.agent import Agent
from seamkit._agent.as_tool import agent_tool
from seamkit._agent.child_runs import (
    CHILD_RUNS_SERVICE,
    ChildRunDispatcher,
    ChildRunOutcome,
    ChildRunRequest,
    calling,
    child_run_id,
    current_call_key,
)
from seamkit._runtime.context import RunContext
from seamkit.errors import ChildRunFailed, FailureClass, ProviderError, RunCancelled
from seamkit.testing import ScriptedModel
from seamkit.testing._memory_store import MemoryStore
from seamkit.values import ToolResult, Usage


def call(name: str, task: str, id: str = "c1") -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": {"task": task}, "id": id}]}


def tool_results(result: Any) -> list[ToolResult]:
    return [b for m in result.transcript if m.role == "tool" for b in m.content if isinstance(b, ToolResult)]


class FakeDispatcher:
    """Records each request and answers with ``outcome(request)``."""

    __test__ = False

    def __init__(self, outcome: Any) -> None:
        self.requests: list[ChildRunRequest] = []
        self.outcome = outcome

    async def run_child(self, request: ChildRunRequest, ctx: RunContext) -> ChildRunOutcome:
        self.requests.append(request)
        result = self.outcome(request)
        return await result if asyncio.iscoroutine(result) else result  # type: ignore[no-any-return]


def done(text: str, usage: Usage | None = None) -> Any:
    return lambda r: ChildRunOutcome(r.run_id, "done", text, "completed", usage)


def lead_with(model_turns: list[Any], *, queue: str | None = "children", store: Any = None) -> tuple[Agent, Agent]:
    researcher = Agent(ScriptedModel(["in-process answer"]), name="researcher", checkpointer=store)
    lead = Agent(ScriptedModel(model_turns), name="lead", tools=[agent_tool(researcher, queue=queue)],
                 checkpointer=store)
    return lead, researcher


def test_a_fake_dispatcher_is_a_child_run_dispatcher() -> None:
    assert isinstance(FakeDispatcher(done("x")), ChildRunDispatcher)


async def test_a_queued_agent_tool_hands_the_child_to_the_dispatcher_with_a_derived_run_id() -> None:
    lead, _ = lead_with([call("researcher", "find it"), "done"])
    d = FakeDispatcher(done("remote answer", Usage(input_tokens=7, output_tokens=3)))
    ctx = RunContext(services={CHILD_RUNS_SERVICE: d}, ancestors=("run_root",), parent_run_id="run_root")

    result = await lead.run("go", ctx=ctx)

    assert [r.content for r in tool_results(result)] == ["remote answer"]
    (req,) = d.requests
    assert (req.tool, req.agent.name, req.task, req.queue) == ("researcher", "researcher", "find it", "children")
    assert req.parent_run_id == result.run_id and req.ancestors == (result.run_id, "run_root")
    assert req.agent_depth == 1
    assert req.run_id == child_run_id(f"{result.run_id}:1:c1", "researcher")
    assert result.usage.input_tokens >= 7 and result.usage.output_tokens >= 3  # the child's usage added


async def test_the_same_call_of_the_same_run_names_the_same_child_and_another_call_another() -> None:
    ids = []
    for call_id in ("c1", "c1", "c2"):
        lead, _ = lead_with([call("researcher", "find it", call_id), "done"])
        d = FakeDispatcher(done("ok"))
        await lead.run("go", ctx=RunContext(run_id="run_fixed", services={CHILD_RUNS_SERVICE: d}))
        ids.append(d.requests[0].run_id)
    assert ids[0] == ids[1] != ids[2]
    assert ids[0].startswith("run_") and len(ids[0]) == 36


async def test_a_resumed_parent_names_the_same_child_again() -> None:
    # the parent stops (cancelled) while its child is out; resumed, it asks for the same child id
    store = MemoryStore()
    lead, _ = lead_with([call("researcher", "find it"), "done"], store=store)
    gate = asyncio.Event()

    async def never(r: ChildRunRequest) -> ChildRunOutcome:
        gate.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    first = FakeDispatcher(never)
    ctx = RunContext(services={CHILD_RUNS_SERVICE: first})
    task = asyncio.ensure_future(lead.run("go", ctx=ctx))
    await gate.wait()
    ctx.cancellation.cancel("the worker went away")
    with pytest.raises(RunCancelled):
        await task
    second = FakeDispatcher(done("ok"))
    result = await lead.resume(ctx.run_id, ctx=RunContext(services={CHILD_RUNS_SERVICE: second}))
    assert result.output == "done"
    assert second.requests[0].run_id == first.requests[0].run_id


async def test_without_a_dispatcher_a_queued_tool_runs_the_child_in_process() -> None:
    store = MemoryStore()
    lead, _ = lead_with([call("researcher", "find it"), "done"], store=store)
    result = await lead.run("go")
    assert [r.content for r in tool_results(result)] == ["in-process answer"]
    children = await store.list_runs(parent_run_id=result.run_id)
    assert len(children) == 1


async def test_without_a_queue_the_dispatcher_is_not_used() -> None:
    lead, _ = lead_with([call("researcher", "find it"), "done"], queue=None)
    d = FakeDispatcher(done("remote"))
    result = await lead.run("go", ctx=RunContext(services={CHILD_RUNS_SERVICE: d}))
    assert [r.content for r in tool_results(result)] == ["in-process answer"]
    assert d.requests == []


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        (ChildRunOutcome("run_c", "failed", error="ProviderError: overloaded", failure_class=FailureClass.OVERLOADED),
         "ChildRunFailed: agent 'researcher' (run run_c, on queue 'children') failed (overloaded): "
         "ProviderError: overloaded"),
        (ChildRunOutcome("run_c", "suspended", pending=({"call_id": "k1", "tool": "pay", "arguments": {}},)),
         "waits for approval of pay (k1)"),
        (ChildRunOutcome("run_c", "done", stop_reason="max_steps"), "gave no answer: it stopped after"),
    ],
)
async def test_a_child_that_failed_suspended_or_gave_no_answer_is_an_error_result(
        outcome: ChildRunOutcome, expected: str) -> None:
    lead, _ = lead_with([call("researcher", "find it"), "done"])
    d = FakeDispatcher(lambda r: outcome)
    result = await lead.run("go", ctx=RunContext(services={CHILD_RUNS_SERVICE: d}))
    (r,) = tool_results(result)
    assert r.is_error and expected in str(r.content), r.content
    assert result.output == "done"  # the caller goes on


async def test_the_error_is_a_classified_child_run_failed() -> None:
    lead, _ = lead_with([call("researcher", "x")])
    tool = lead.tools[0]
    d = FakeDispatcher(lambda r: ChildRunOutcome(r.run_id, "failed", error="boom",
                                                 failure_class=FailureClass.RATE_LIMITED))
    with calling("run_p:1:c9"), pytest.raises(ChildRunFailed) as info:
        await tool.invoke({"task": "x"}, RunContext(run_id="run_p", services={CHILD_RUNS_SERVICE: d}))
    assert info.value.failure_class is FailureClass.RATE_LIMITED and info.value.status == "failed"
    assert info.value.run_id == child_run_id("run_p:1:c9", "researcher")


async def test_outside_an_agent_loop_the_child_gets_a_fresh_run_id() -> None:
    lead, _ = lead_with([call("researcher", "x")])
    d = FakeDispatcher(done("ok"))
    assert current_call_key() is None
    await lead.tools[0].invoke({"task": "x"}, RunContext(services={CHILD_RUNS_SERVICE: d}))
    await lead.tools[0].invoke({"task": "x"}, RunContext(services={CHILD_RUNS_SERVICE: d}))
    assert d.requests[0].run_id != d.requests[1].run_id


async def test_a_failed_run_records_its_failure_class_in_the_checkpoint() -> None:
    store = MemoryStore()
    err = ProviderError("too busy", failure_class=FailureClass.OVERLOADED)
    agent = Agent(ScriptedModel([err]), name="a", checkpointer=store)
    ctx = RunContext()
    with pytest.raises(ProviderError):
        await agent.run("go", ctx=ctx)
    assert agent.checkpointer is not None
    snap = await agent.checkpointer.latest(ctx.run_id)
    assert snap is not None and snap.status == "failed"
    assert snap.state["failure_class"] == "overloaded"


def test_queue_must_be_a_name() -> None:
    researcher = Agent(ScriptedModel(["x"]), name="researcher")
    with pytest.raises(ValueError, match="queue must be a non-blank queue name"):
        agent_tool(researcher, queue=" ")
    assert "queue='kids'" in repr(agent_tool(researcher, queue="kids"))


async def test_in_process_a_queued_tools_call_rerun_after_a_stop_continues_the_same_child() -> None:
    store = MemoryStore()
    researcher = Agent(ScriptedModel([{"text": "slow answer", "delay": 30}, "fast answer"], follow_transcript=True),
                       name="researcher", checkpointer=store)
    lead = Agent(ScriptedModel([call("researcher", "find it"), "done"], follow_transcript=True), name="lead",
                 tools=[agent_tool(researcher, queue="children")], checkpointer=store)
    assert lead.tools[0].schema.idempotent
    ctx = RunContext()
    task = asyncio.ensure_future(lead.run("go", ctx=ctx))
    for _ in range(200):  # until the child's first checkpoint exists
        await asyncio.sleep(0.01)
        if await store.list_runs(parent_run_id=ctx.run_id):
            break
    ctx.cancellation.cancel("stopped")
    with pytest.raises(RunCancelled):
        await task
    (first,) = await store.list_runs(parent_run_id=ctx.run_id)
    m = researcher.model
    m._turns[0], m._deltas[0] = m._turns[1], m._deltas[1]  # type: ignore[attr-defined]  # no 30 s this time
    result = await lead.resume(ctx.run_id)
    assert result.output == "done"
    children = await store.list_runs(parent_run_id=ctx.run_id)
    assert [c.run_id for c in children] == [first.run_id]  # continued, not a second child
    assert [r.content for r in tool_results(result)] == ["fast answer"]
    # the same call run again once the child is done: its stored answer, no model call
    tool = lead.tools[0]
    with calling(f"{ctx.run_id}:1:c1"):
        assert await tool.invoke({"task": "find it"}, RunContext(run_id=ctx.run_id)) == "fast answer"


YAML = """\
seamkit: 1
agent:
  name: lead
  model: {use: scripted, turns: [hi]}
  checkpoints: null
  tools:
    - {agent: researcher, QUEUE}
    - {agent: writer}
agents:
  researcher: {model: {use: scripted, turns: [hi]}, checkpoints: null}
  writer: {model: {use: scripted, turns: [hi]}, checkpoints: null}
"""


@pytest.mark.parametrize(("written", "queue"), [
    ("queue: true", "children"), ("queue: {name: research}", "research"), ("queue: false", None),
])
def test_yaml_queue_on_an_agent_tool(written: str, queue: str | None) -> None:
    from seamkit.composition import build_agent, loads_composition

    lead = build_agent(loads_composition(YAML.replace("QUEUE", written)))
    tools = {t.name: t for t in lead.tools}
    assert tools["researcher"].queue == queue and tools["writer"].queue is None  # type: ignore[attr-defined]
    assert tools["researcher"].schema.idempotent is (queue is not None)


@pytest.mark.parametrize(("written", "message"), [
    ("queue: {name: 'a b'}", "agent.tools[0].queue.name: String should match pattern"),
    ("queue: {nam: x}", "agent.tools[0].queue.nam: unknown key 'nam'"),
])
def test_yaml_bad_queue_is_located(written: str, message: str) -> None:
    from seamkit.composition import loads_composition
    from seamkit.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        loads_composition(YAML.replace("QUEUE", written), file="lead.yaml")
    assert any(message in str(i) and str(i).startswith("lead.yaml:7:") for i in info.value.issues), info.value.issues


def test_validate_says_which_agent_tools_are_queued() -> None:
    from seamkit._cli.commands import describe
    from seamkit.composition import loads_composition

    line = describe(loads_composition(YAML.replace("QUEUE", "queue: true")))
    assert "tools: agent researcher (queue children), agent writer," in line


@pytest.mark.parametrize("side_effecting", [False, True], ids=["plain", "through-the-effect-ledger"])
async def test_a_dispatcher_that_cannot_reach_its_broker_stops_the_run_unfinished_never_tells_the_model(
        side_effecting: bool) -> None:
    from seamkit._agent.as_tool import agent_tool
    from seamkit.errors import InfrastructureUnavailable

    store = MemoryStore()
    researcher = Agent(ScriptedModel(["in-process answer"]), name="researcher", checkpointer=store)
    lead = Agent(ScriptedModel([call("researcher", "find it"), "done"], follow_transcript=True), name="lead",
                 tools=[agent_tool(researcher, queue="children", side_effecting=side_effecting)], checkpointer=store)

    def down(r: ChildRunRequest) -> Any:
        raise InfrastructureUnavailable("the broker redis://h:6379/1 is unreachable")

    ctx = RunContext(run_id="run_lead", services={CHILD_RUNS_SERVICE: FakeDispatcher(down)})
    with pytest.raises(InfrastructureUnavailable):
        await lead.run("go", ctx=ctx)
    assert lead.checkpointer is not None
    snap = await lead.checkpointer.latest("run_lead")
    assert snap is not None and snap.status == "running"  # resumable, not failed
    assert snap.metadata.get("lease_until") is None  # released: anyone may continue it
    assert not [m for m in snap.transcript if m.role == "tool"]  # the model was told nothing
    back = FakeDispatcher(done("found it"))
    result = await lead.resume("run_lead", ctx=RunContext(run_id="run_lead", services={CHILD_RUNS_SERVICE: back}))
    assert result.output == "done" and [r.content for r in tool_results(result)] == ["found it"]
    assert len(back.requests) == 1
