"""``CeleryChildRuns`` without a broker: what it sends, when it sends nothing, how it reads a
child's outcome, and that the caller's cancellation ends its wait."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from seamkit._agent.agent import Agent
from seamkit._agent.child_runs import ChildRunRequest
from seamkit._runtime.context import RunContext
from seamkit.errors import FailureClass, ProviderError, RunCancelled, ToolError
from seamkit.testing import ScriptedModel
from seamkit.testing._memory_store import MemoryStore
from seamkit.values import Scope
from seamkit_celery.children import CeleryChildRuns
from seamkit_celery.sent import read_record


class Conf(SimpleNamespace):
    """A Celery app's settings: attributes, and ``get``."""

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)


class FakeApp:
    """Records ``send_task`` calls (a Celery app's surface ``_send`` uses)."""

    __test__ = False

    def __init__(self, fail: bool = False) -> None:
        self.sent: list[dict[str, Any]] = []
        self.was_sent = asyncio.Event()
        self.fail = fail
        self.conf = Conf(broker_url="redis://:pw@127.0.0.1:1/0", task_default_queue="seamkit")

    def send_task(self, name: str, *, args: tuple[Any, ...], queue: str | None, **_: Any) -> None:
        if self.fail:
            raise ConnectionError("refused")
        self.sent.append({"name": name, "spec": args[0], "queue": queue})
        self.was_sent.set()


def request(agent: Agent, run_id: str = "run_child") -> ChildRunRequest:
    return ChildRunRequest(agent=agent, tool="researcher", task="look it up", run_id=run_id,
                           parent_run_id="run_lead", ancestors=("run_lead", "run_root"), agent_depth=2,
                           queue="children", scope=Scope(tenant="acme", user="u1"))


async def test_a_new_child_is_sent_with_its_lineage_then_waited_for() -> None:
    store = MemoryStore()
    researcher = Agent(ScriptedModel(["found it"]), name="researcher", checkpointer=store)
    app = FakeApp()
    d = CeleryChildRuns(app, "/abs/lead.yaml")  # type: ignore[arg-type]

    async def worker() -> None:  # the child's worker: runs it once the message is sent
        await app.was_sent.wait()
        await researcher.run("look it up", ctx=RunContext(run_id="run_child", parent_run_id="run_lead"))

    out, _ = await asyncio.gather(d.run_child(request(researcher), RunContext()), worker())
    (sent,) = app.sent
    assert sent["queue"] == "children" and sent["name"] == "seamkit.run"
    spec = sent["spec"]
    assert (spec["file"], spec["agent"], spec["task"], spec["run_id"]) == (
        "/abs/lead.yaml", "researcher", "look it up", "run_child")
    assert spec["child"] == {"tool": "researcher", "parent_run_id": "run_lead", "ancestors": ["run_lead", "run_root"],
                             "agent_depth": 2, "scope": {"tenant": "acme", "user": "u1", "thread": None}}
    assert (out.status, out.output, out.stop_reason) == ("done", "found it", "completed")
    assert out.usage is not None and out.usage.requests == 1


async def test_a_child_with_a_checkpoint_is_not_sent_again_and_its_failure_is_classified() -> None:
    store = MemoryStore()
    researcher = Agent(ScriptedModel([ProviderError("busy", FailureClass.OVERLOADED)]), name="researcher",
                       checkpointer=store)
    with pytest.raises(ProviderError):
        await researcher.run("look it up", ctx=RunContext(run_id="run_child"))
    app = FakeApp()
    out = await CeleryChildRuns(app, "/f.yaml").run_child(request(researcher), RunContext())  # type: ignore[arg-type]
    assert app.sent == []
    assert out.status == "failed" and out.failure_class is FailureClass.OVERLOADED
    assert out.error is not None and "busy" in out.error


async def test_the_callers_cancellation_ends_the_wait_and_an_unstarted_child_is_logged_once(
        caplog: pytest.LogCaptureFixture) -> None:
    researcher = Agent(ScriptedModel(["x"]), name="researcher", checkpointer=MemoryStore())
    app = FakeApp()
    ctx = RunContext()
    d = CeleryChildRuns(app, "/f.yaml", warn_after_s=0.0)  # type: ignore[arg-type]
    waiting = asyncio.ensure_future(d.run_child(request(researcher), ctx))
    await asyncio.wait_for(app.was_sent.wait(), timeout=5)
    await asyncio.sleep(0.3)  # a few polls of a child nobody starts
    ctx.cancellation.cancel("the lead was stopped")
    with pytest.raises(RunCancelled, match="the lead was stopped"):
        await asyncio.wait_for(waiting, timeout=5)
    warned = [r.getMessage() for r in caplog.records if "has not started" in r.getMessage()]
    assert len(warned) == 1 and "queue 'children'" in warned[0] and "--queue children" in warned[0]


async def test_an_unreachable_broker_is_infrastructure_and_no_checkpoints_a_tool_error() -> None:
    from seamkit.errors import InfrastructureUnavailable

    store = MemoryStore()
    researcher = Agent(ScriptedModel(["x"]), name="researcher", checkpointer=store)
    with pytest.raises(InfrastructureUnavailable, match="could not be sent: could not enqueue run run_child") as info:
        await CeleryChildRuns(FakeApp(fail=True), "/f.yaml").run_child(  # type: ignore[arg-type]
            request(researcher), RunContext())
    assert ":pw@" not in str(info.value)
    assert await read_record(store, "run_child") is None  # a send that failed leaves no record to re-send
    bare = Agent(ScriptedModel(["x"]), name="researcher")
    with pytest.raises(ToolError, match="has no checkpoints"):
        await CeleryChildRuns(FakeApp(), "/f.yaml").run_child(request(bare), RunContext())  # type: ignore[arg-type]


async def test_a_store_outage_while_waiting_for_a_child_is_waited_out_not_told_to_the_model(
        caplog: pytest.LogCaptureFixture) -> None:
    from seamkit.errors import StoreUnavailable

    class Flaky(MemoryStore):
        """Unreachable for the first ``down`` reads of a checkpoint."""

        def __init__(self, down: int) -> None:
            super().__init__()
            self.down = down

        async def latest(self, run_id: str) -> Any:
            if self.down > 0:
                self.down -= 1
                raise StoreUnavailable("redis store redis://:pw@h/0 failed to read a checkpoint: refused")
            return await super().latest(run_id)

    store = Flaky(0)
    researcher = Agent(ScriptedModel(["found it"]), name="researcher", checkpointer=store)
    await researcher.run("look it up", ctx=RunContext(run_id="run_child", parent_run_id="run_lead"))
    store.down = 3  # the child is done; the store is down when its caller looks
    app = FakeApp()
    out = await CeleryChildRuns(app, "/f.yaml").run_child(request(researcher), RunContext())  # type: ignore[arg-type]
    assert (out.status, out.output) == ("done", "found it") and app.sent == [] and store.down == 0
    said = [r.getMessage() for r in caplog.records if "cannot be reached" in r.getMessage()]
    assert len(said) == 1 and "run_child" in said[0] and ":pw@" not in said[0]


async def test_a_lead_whose_child_cannot_be_sent_is_retried_by_its_delivery_not_answered() -> None:
    # the broker is down as the lead sends its child: the delivery is retried (RetryLater), the
    # lead stays running with its lease released, and its model is told nothing; the next delivery
    # (the broker back) sends the child and the lead gets the child's answer
    from seamkit._agent.as_tool import agent_tool
    from seamkit._agent.child_runs import CHILD_RUNS_SERVICE
    from seamkit.errors import InfrastructureUnavailable
    from seamkit.values import ToolResult
    from seamkit_celery.task import RetryLater, deliver, infrastructure, make_spec

    store = MemoryStore()
    researcher = Agent(ScriptedModel(["found it"]), name="researcher", checkpointer=store)
    lead = Agent(ScriptedModel([{"tool_calls": [{"name": "researcher", "arguments": {"task": "look it up"}}]},
                                "lead done"], follow_transcript=True),
                 name="lead", tools=[agent_tool(researcher, queue="children")], checkpointer=store)
    spec = make_spec("/abs/lead.yaml", "brief me", run_id="run_lead", agent="lead")
    down = FakeApp(fail=True)
    with pytest.raises(RetryLater, match="InfrastructureUnavailable") as info:
        await deliver(lead, spec, {CHILD_RUNS_SERVICE: CeleryChildRuns(down, "/abs/lead.yaml")})  # type: ignore[arg-type]
    assert ":pw@" not in str(info.value)
    snap = await lead.checkpointer.latest("run_lead")  # type: ignore[union-attr]
    assert snap is not None and snap.status == "running" and snap.metadata.get("lease_until") is None
    assert not [m for m in snap.transcript if m.role == "tool"]
    assert infrastructure(InfrastructureUnavailable("broker down")) and not infrastructure(ValueError("x"))
    up = FakeApp()

    async def worker() -> None:  # the child's worker
        await up.was_sent.wait()
        (sent,) = up.sent
        await researcher.run("look it up", ctx=RunContext(run_id=sent["spec"]["run_id"], parent_run_id="run_lead"))

    out, _ = await asyncio.gather(
        deliver(lead, {**spec, "task": None}, {CHILD_RUNS_SERVICE: CeleryChildRuns(up, "/abs/lead.yaml")}),  # type: ignore[arg-type]
        worker())
    assert (out["status"], out["output"]) == ("done", "lead done")
    final = await lead.checkpointer.latest("run_lead")  # type: ignore[union-attr]
    assert final is not None
    results = [b.content for m in final.transcript if m.role == "tool" for b in m.content if isinstance(b, ToolResult)]
    assert results == ["found it"]
