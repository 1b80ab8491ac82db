"""A workflow's agent step with ``queue``: with a child-run dispatcher in the run's services it hands
its agent run there (the activation's run id, no tool, the workflow as parent) and maps the outcome
like the in-process run; without one it runs in-process; ``queue:`` in YAML is checked, located."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from seamkit._agent.agent import Agent
from seamkit._agent.child_runs import CHILD_RUNS_SERVICE, ChildRunOutcome, ChildRunRequest
from seamkit._runtime.context import RunContext
from seamkit.errors import ChildRunFailed, ConfigError, FailureClass
from seamkit.testing._models import ScriptedModel
from seamkit.values import Usage
from seamkit.workflows import StepError, Workflow, WorkflowFailed, agent_step, function_step, run_workflow


class FakeDispatcher:
    """Answers each request with ``outcome(request)`` after ``delay`` s; records the requests and
    the most requests in flight at once."""

    def __init__(self, outcome: Any, delay: float = 0.0) -> None:
        self.outcome = outcome
        self.delay = delay
        self.requests: list[ChildRunRequest] = []
        self.in_flight = 0
        self.most = 0

    async def run_child(self, request: ChildRunRequest, ctx: RunContext) -> ChildRunOutcome:
        self.requests.append(request)
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.in_flight -= 1
        return self.outcome(request)  # type: ignore[no-any-return]


def _done(request: ChildRunRequest) -> ChildRunOutcome:
    return ChildRunOutcome(request.run_id, "done", output=f"found {request.task}", stop_reason="completed",
                           usage=Usage(input_tokens=3, output_tokens=2, requests=1, cost=Decimal("0.01"),
                                       cost_source="reported"))


def _branches(agent: Agent, queue: str | None = "kids") -> Workflow:
    async def both(ctx: Any, data: Any) -> Any:
        return [data["a_done"], data["b_done"]]

    return Workflow("w", (
        agent_step("a", agent, emits="a_done", queue=queue),
        agent_step("b", agent, emits="b_done", queue=queue),
        function_step(both, consumes=("a_done", "b_done"), emits="done"),
    ), outcomes=("done",))


async def test_queued_branches_go_to_the_dispatcher_at_once_and_join() -> None:
    model = ScriptedModel(["local"], repeat=True)
    agent = Agent(model, name="researcher")
    dispatcher = FakeDispatcher(_done, delay=0.05)
    steps: list[Any] = []

    class Steps:
        def on_event(self, event: Any) -> None:
            if event.data["event"] == "started":
                steps.append((event.data["name"], event.data["child_run_id"]))

    wf = Workflow("w", _branches(agent).steps, outcomes=("done",), observers=(Steps(),))
    ctx = RunContext(services={CHILD_RUNS_SERVICE: dispatcher})
    r = await run_workflow(wf, "part", ctx=ctx)
    assert r.output == ["found part", "found part"]
    assert model.calls == 0  # nothing ran in this process
    assert dispatcher.most == 2  # both branches waited on the dispatcher at once
    by_step = dict(steps)
    assert sorted(q.run_id for q in dispatcher.requests) == sorted([by_step["a"], by_step["b"]])
    for q in dispatcher.requests:
        assert q.tool is None and q.agent is agent and q.queue == "kids" and q.task == "part"
        assert q.parent_run_id == ctx.run_id and q.ancestors[0] == ctx.run_id and q.agent_depth == 0
    assert r.usage.requests == 2 and r.usage.cost == Decimal("0.02")  # each child's usage is the workflow's


async def test_without_a_dispatcher_a_queued_step_runs_in_process() -> None:
    model = ScriptedModel(["local"], repeat=True)
    r = await run_workflow(_branches(Agent(model, name="researcher")), "part")
    assert r.output == ["local", "local"] and model.calls == 2


async def test_a_step_without_queue_ignores_the_dispatcher() -> None:
    model = ScriptedModel(["local"], repeat=True)
    dispatcher = FakeDispatcher(_done)
    r = await run_workflow(_branches(Agent(model, name="researcher"), queue=None), "part",
                           ctx=RunContext(services={CHILD_RUNS_SERVICE: dispatcher}))
    assert r.output == ["local", "local"] and dispatcher.requests == []


async def test_a_suspended_queued_run_is_agent_suspended() -> None:
    def suspended(q: ChildRunRequest) -> ChildRunOutcome:
        return ChildRunOutcome(q.run_id, "suspended", pending=({"call_id": "call_7", "tool": "pay"},))

    wf = Workflow("w", (agent_step("a", Agent(ScriptedModel(["x"]), name="r"), emits="done", queue="q"),),
                  outcomes=("done",))
    with pytest.raises(WorkflowFailed) as info:
        await run_workflow(wf, "go", ctx=RunContext(services={CHILD_RUNS_SERVICE: FakeDispatcher(suspended)}))
    cause = info.value.__cause__
    assert isinstance(cause, StepError) and cause.code == "AGENT_SUSPENDED"
    assert "call_7" in str(cause) and "on queue 'q'" in str(cause)


async def test_a_failed_queued_run_fails_the_step_with_its_failure_class() -> None:
    def failed(q: ChildRunRequest) -> ChildRunOutcome:
        return ChildRunOutcome(q.run_id, "failed", error="ProviderError: slow down",
                               failure_class=FailureClass.RATE_LIMITED)

    wf = Workflow("w", (agent_step("a", Agent(ScriptedModel(["x"]), name="r"), emits="done", queue="q"),),
                  outcomes=("done",))
    with pytest.raises(WorkflowFailed, match="STEP_FAILED") as info:
        await run_workflow(wf, "go", ctx=RunContext(services={CHILD_RUNS_SERVICE: FakeDispatcher(failed)}))
    cause = info.value.__cause__
    assert isinstance(cause, ChildRunFailed) and cause.failure_class == FailureClass.RATE_LIMITED
    assert "slow down" in str(cause) and "(rate_limited)" in str(cause)


async def test_messages_cannot_go_to_a_queue_and_a_blank_queue_is_refused() -> None:
    wf = Workflow("w", (agent_step("a", Agent(ScriptedModel(["x"]), name="r"), emits="done", queue="q"),),
                  outcomes=("done",))
    with pytest.raises(WorkflowFailed, match="INVALID_STEP_INPUT"):
        await run_workflow(wf, {"messages": [{"role": "user", "text": "hi"}]},
                           ctx=RunContext(services={CHILD_RUNS_SERVICE: FakeDispatcher(_done)}))
    with pytest.raises(ValueError, match="non-blank queue name"):
        agent_step("a", Agent(ScriptedModel(["x"]), name="r"), queue=" ")


FILE = """\
seamkit: 1
agent:
  name: lead
  model: {use: scripted, turns: [ok]}
agents:
  researcher:
    model: {use: scripted, turns: [ok]}
workflow:
  outcomes: [done]
  steps:
    a:
      agent: researcher
      emits: done
      queue: QUEUE
"""


def test_queue_on_an_agent_step_in_yaml(tmp_path: Path) -> None:
    from seamkit.composition import build_workflow, load_composition

    for written, name in (("true", "children"), ("{name: research}", "research"), ("false", None)):
        path = tmp_path / "wf.yaml"
        path.write_text(FILE.replace("QUEUE", written))
        c = load_composition(path)
        assert c.workflow is not None and c.workflow.steps["a"].queue_name() == name  # type: ignore[union-attr]
        assert build_workflow(c).step("a") is not None


@pytest.mark.parametrize(("written", "why"), [
    ("3", "Input should be a valid boolean"),
    ("{name: 'two words'}", "should match pattern"),
    ("{nam: research}", "did you mean 'name'"),
])
def test_a_bad_queue_on_an_agent_step_is_located(tmp_path: Path, written: str, why: str) -> None:
    from seamkit.composition import load_composition

    path = tmp_path / "wf.yaml"
    path.write_text(FILE.replace("QUEUE", written))
    with pytest.raises(ConfigError) as info:
        load_composition(path)
    text = str(info.value)
    assert "workflow.steps.a.queue" in text and why in text, text
    assert any(i.file is not None and Path(i.file).name == "wf.yaml" and i.line == 14 and i.column is not None
               for i in info.value.issues), [(i.file, i.line, i.column) for i in info.value.issues]


async def test_a_dispatcher_that_cannot_reach_its_broker_leaves_the_workflow_running_and_resumable() -> None:
    from seamkit._durability.checkpointer import Checkpointer
    from seamkit.errors import InfrastructureUnavailable
    from seamkit.testing._memory_store import MemoryStore
    from seamkit.workflows import resume_workflow

    def down(request: ChildRunRequest) -> ChildRunOutcome:
        raise InfrastructureUnavailable("the broker is unreachable")

    cp = Checkpointer(MemoryStore())
    agent = Agent(ScriptedModel(["local"], repeat=True), name="researcher")
    wf = Workflow("w", _branches(agent).steps, outcomes=("done",), checkpointer=cp)
    with pytest.raises(InfrastructureUnavailable):
        ctx = RunContext(run_id="wf1", services={CHILD_RUNS_SERVICE: FakeDispatcher(down)})
        await run_workflow(wf, "part", ctx=ctx)
    snap = await cp.latest("wf1")
    assert snap is not None and snap.status == "running"  # not failed
    assert snap.metadata.get("lease_until") is None  # released: any worker may continue it
    back = RunContext(run_id="wf1", services={CHILD_RUNS_SERVICE: FakeDispatcher(_done)})
    r = await resume_workflow(wf, "wf1", ctx=back)
    assert r.output == ["found part", "found part"]
