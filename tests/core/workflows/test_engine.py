"""Running workflows (``seamkit.workflows._engine``): events, fan-out and join, waits for several
events, gates, failures and resume, cancellation, child runs and their checkpoints, agent, tool,
capability and nested-workflow steps. Real checkpointer over the in-memory store and SQLite."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from seamkit._agent.agent import Agent
from seamkit._durability.checkpointer import Checkpointer
from seamkit._durability.ledger import EffectLedger
from seamkit._runtime.context import RunContext
from seamkit._tools import tool
from seamkit.errors import RunCancelled, RunNotResumable
from seamkit.testing._memory_store import MemoryStore
from seamkit.testing._models import ScriptedModel
from seamkit.values import StreamEvent
from seamkit.workflows import (
    START,
    Emit,
    Step,
    StepContext,
    Workflow,
    WorkflowFailed,
    agent_step,
    gate,
    resume_workflow,
    run_workflow,
    tool_step,
    workflow_state,
    workflow_step,
)
from seamkit_sqlite.store import SqliteStore

CALLS: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def _clear() -> None:
    CALLS.clear()


class Seen:
    def __init__(self) -> None:
        self.events: list[StreamEvent] = []

    def on_event(self, event: StreamEvent) -> None:
        self.events.append(event)

    def kinds(self) -> list[tuple[str, str]]:
        return [(e.data["event"], e.data["name"]) for e in self.events if e.kind == "step"]


def fn(name: str, result: Any = None, *, consumes: Any = (START,), emits: Any = (), join: bool = False,
       then: Any = None) -> Step:
    async def run(ctx: StepContext, data: Any) -> Any:
        CALLS[name] += 1
        return then(data) if then is not None else result

    return Step(name, run, consumes, emits, join)


async def test_a_pipeline_passes_each_output_on_and_ends_with_its_outcome() -> None:
    seen = Seen()
    w = Workflow("pipe", (fn("upper", emits="upper", then=str.upper),
                          fn("exclaim", consumes="upper", emits="done", then=lambda t: t + "!")),
                 outcomes=("done",), observers=(seen,))
    r = await run_workflow(w, "hello")
    assert (r.status, r.outcome, r.output) == ("done", "done", "HELLO!")
    assert [a.step for a in r.steps] == ["upper", "exclaim"]
    assert len({a.run_id for a in r.steps} | {r.run_id}) == 3  # each step its own child run
    assert seen.kinds() == [("started", "upper"), ("finished", "upper"), ("started", "exclaim"),
                            ("finished", "exclaim")]


async def test_fan_out_runs_each_branch_and_the_join_gets_every_branch_once_in_order() -> None:
    running, peak = 0, 0

    async def research(ctx: StepContext, topic: str) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01 * (3 - len(topic) % 3))  # finish out of order
        running -= 1
        CALLS["research"] += 1
        return f"notes on {topic}"

    w = Workflow("fan", (fn("plan", ["a", "bb", "ccc", "dddd", "eeeee"], emits="topic"),
                         Step("research", research, "topic", "finding"),
                         fn("write", consumes="finding", emits="report", join=True, then=" | ".join)),
                 outcomes=("report",), max_concurrency=2)
    r = await run_workflow(w, "go")
    assert r.output == "notes on a | notes on bb | notes on ccc | notes on dddd | notes on eeeee"
    assert CALLS == {"plan": 1, "research": 5, "write": 1} and peak == 2


async def test_an_empty_fan_out_reaches_the_join_as_an_empty_list_without_running_the_branches() -> None:
    w = Workflow("fan", (fn("plan", [], emits="topic"), fn("research", consumes="topic", emits="finding", then=str),
                         fn("write", consumes="finding", emits="report", join=True, then=len)),
                 outcomes=("report",))
    r = await run_workflow(w, "go")
    assert r.output == 0 and CALLS["research"] == 0 and CALLS["write"] == 1
    assert [a.status for a in r.steps] == ["done", "skipped", "done"]


async def test_nested_fan_outs_join_inner_branches_first() -> None:
    w = Workflow("nest", (
        fn("teams", [["a", "b"], ["c"]], emits="team"),
        fn("people", consumes="team", emits="person", then=list),
        fn("greet", consumes="person", emits="greeting", then=lambda p: f"hi {p}"),
        fn("team_card", consumes="greeting", emits="card", join=True, then=", ".join),
        fn("all_cards", consumes="card", emits="done", join=True, then=" / ".join),
    ), outcomes=("done",))
    r = await run_workflow(w, None)
    assert r.output == "hi a, hi b / hi c"


async def test_a_step_consuming_several_events_waits_for_all_of_them() -> None:
    w = Workflow("wait", (
        fn("left", "L", emits="l"), fn("right", "R", emits="r"),
        fn("both", consumes=("l", "r"), emits="done", then=lambda d: d["l"] + d["r"]),
    ), outcomes=("done",))
    assert (await run_workflow(w, None)).output == "LR"


async def test_explicit_emits_route_and_an_undeclared_one_fails_the_step() -> None:
    w = Workflow("route", (fn("triage", Emit("urgent", 1), emits=("urgent", "later")),
                           fn("page", consumes="urgent", emits="done", then=lambda n: n + 1),
                           fn("queue", consumes="later", emits="done")), outcomes=("done",))
    r = await run_workflow(w, None)
    assert r.output == 2 and CALLS["queue"] == 0
    bad = Workflow("bad", (fn("triage", Emit("nope"), emits="done"),), outcomes=("done",))
    with pytest.raises(WorkflowFailed, match="emitted nope, which it does not declare") as err:
        await run_workflow(bad, None)
    assert err.value.code == "STEP_FAILED" and err.value.step == "triage"


async def test_a_step_that_declares_no_event_emits_nothing_whatever_it_returns() -> None:
    w = Workflow("tail", (fn("answer", "42", emits="done"), fn("log", {"stored": True}, consumes="done")),
                 outcomes=("done",))
    r = await run_workflow(w, None)
    assert r.output == "42" and CALLS["log"] == 1 and [a.emitted for a in r.steps] == [("done",), ()]


async def test_events_that_can_never_meet_end_the_run_as_stalled() -> None:
    # one step emits either event; the join needs both: only visible at run time
    w = Workflow("stall", (fn("either", Emit("a"), emits=("a", "b")), fn("both", consumes=("a", "b"), emits="done")),
                 outcomes=("done",))
    with pytest.raises(WorkflowFailed, match="WORKFLOW_STALLED: it ended without an outcome: step 'both' has a "
                                             "but waits for b"):
        await run_workflow(w, None)


# --------------------------------------------------------------------------- durability


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    return MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "wf.db")


async def test_a_gate_suspends_and_the_answer_routes_yes_and_no(store: Any) -> None:
    cp = Checkpointer(store)
    w = Workflow("approve", (fn("draft", "refund $20", emits="draft"),
                             gate("check", "send the refund?", consumes="draft", on_yes="ok", on_no="stop"),
                             fn("send", consumes="ok", emits="sent", then=lambda d: f"sent {d}"),
                             fn("drop", consumes="stop", emits="dropped", then=lambda d: "dropped")),
                 outcomes=("sent", "dropped"), checkpointer=cp)
    r = await run_workflow(w, None)
    assert r.status == "suspended" and r.output is None
    [(waiting, prompt)] = r.waiting
    assert (waiting.step, prompt) == ("check", "send the refund?")
    snap = await cp.latest(r.run_id)
    assert snap is not None and snap.status == "suspended" and snap.state["waiting_for"] == "gate"
    with pytest.raises(RunNotResumable, match="waits for the person's answer"):
        await resume_workflow(w, r.run_id)
    with pytest.raises(ValueError, match="takes a plain yes or no"):
        await resume_workflow(w, r.run_id, answer="maybe later?")
    done = await resume_workflow(w, r.run_id, answer="yes")
    assert (done.status, done.outcome, done.output) == ("done", "sent", "sent refund $20")
    assert CALLS["draft"] == 1  # not run again
    r2 = await run_workflow(w, None)
    assert (await resume_workflow(w, r2.run_id, answer="no")).outcome == "dropped"
    await store.aclose()


async def test_a_failed_step_runs_again_on_resume_and_finished_steps_do_not(store: Any, tmp_path: Path) -> None:
    flag = tmp_path / "broken"
    flag.touch()
    effects: list[str] = []

    async def charge(ctx: StepContext, item: str) -> str:
        async def op() -> str:
            effects.append(item)
            return f"charged {item}"

        done = await ctx.run_effect("charge", op)
        if item == "b" and flag.exists():
            raise ConnectionError("the ledger line dropped")
        return done

    cp = Checkpointer(store)
    w = Workflow("bill", (fn("items", ["a", "b", "c"], emits="item"), Step("charge", charge, "item", "charged"),
                          fn("total", consumes="charged", emits="done", join=True, then=list)),
                 outcomes=("done",), checkpointer=cp, max_concurrency=1)
    with pytest.raises(WorkflowFailed, match=r"step 'charge'.*ConnectionError") as err:
        await run_workflow(w, None)
    run_id = err.value.run_id
    snap = await cp.latest(run_id)
    assert snap is not None and snap.status == "failed"
    with pytest.raises(RunNotResumable, match="it failed"):
        await resume_workflow(w, run_id)
    flag.unlink()
    r = await resume_workflow(w, run_id, allow_finished=True)
    assert r.output == ["charged a", "charged b", "charged c"]
    assert sorted(effects) == ["a", "b", "c"]  # each branch's effect once, the failed one's included
    assert CALLS["items"] == 1
    versions = await cp.history(run_id)
    assert len(versions) >= 6  # a checkpoint when steps start and after every step
    await store.aclose()


async def test_cancellation_reaches_every_running_step_and_a_plain_resume_runs_them_again(store: Any) -> None:
    started = asyncio.Event()
    stopped: list[str] = []

    async def slow(ctx: StepContext, item: str) -> str:
        CALLS["slow"] += 1
        if CALLS["slow"] <= 3:
            if CALLS["slow"] == 3:  # all three are in flight (not a timing guess: the store may be slow)
                started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                stopped.append(item)
                raise
        return item

    cp = Checkpointer(store)
    w = Workflow("slow", (fn("items", ["a", "b", "c"], emits="item"), Step("slow", slow, "item", "out"),
                          fn("join", consumes="out", emits="done", join=True, then=list)),
                 outcomes=("done",), checkpointer=cp)
    ctx = RunContext()
    task = asyncio.ensure_future(run_workflow(w, None, ctx=ctx))
    await started.wait()
    ctx.cancellation.cancel("stop")
    with pytest.raises(RunCancelled):
        await task
    assert sorted(stopped) == ["a", "b", "c"]
    snap = await cp.latest(ctx.run_id)
    assert snap is not None and snap.status == "running" and "interrupted" in snap.state
    r = await resume_workflow(w, ctx.run_id)
    assert r.output == ["a", "b", "c"] and CALLS["items"] == 1
    await store.aclose()


async def test_an_agent_step_is_a_child_run_with_its_own_checkpoints_and_usage() -> None:
    store = MemoryStore()
    cp = Checkpointer(store)
    planner = Agent(ScriptedModel(['["llamas", "alpacas"]']), name="planner", output=list[str], checkpointer=cp)
    researcher = Agent(ScriptedModel(["notes"], repeat=True), name="researcher", checkpointer=cp)
    w = Workflow("research", (agent_step("plan", planner, emits="topic"),
                              agent_step("research", researcher, consumes="topic", emits="finding"),
                              fn("write", consumes="finding", emits="report", join=True, then=list)),
                 outcomes=("report",), checkpointer=cp)
    r = await run_workflow(w, "camelids")
    assert r.output == ["notes", "notes"]
    children = await cp.list_runs(parent_run_id=r.run_id)
    assert len(children) == 3 and {c.status for c in children} == {"done"}
    assert {c.run_id for c in children} == {a.run_id for a in r.steps if a.step in ("plan", "research")}
    assert r.usage.requests == 3  # the three agent runs, counted as the workflow's


async def test_a_side_effecting_tool_step_runs_once_per_activation() -> None:
    sent: list[str] = []

    @tool(side_effecting=True)
    async def notify(message: str) -> str:
        """Send a note."""
        sent.append(message)
        return "sent"

    w = Workflow("t", (tool_step("notify", notify, emits="done"),), outcomes=("done",),
                 checkpointer=Checkpointer(MemoryStore()))
    r = await run_workflow(w, "hello")
    assert r.output == "sent" and sent == ["hello"]


async def test_a_nested_workflow_is_one_step() -> None:
    inner = Workflow("inner", (fn("double", emits="done", then=lambda n: n * 2),), outcomes=("done",))
    outer = Workflow("outer", (workflow_step("inner", inner, emits="doubled"),
                               fn("inc", consumes="doubled", emits="done", then=lambda n: n + 1)), outcomes=("done",))
    assert (await run_workflow(outer, 20)).output == 41


async def test_the_checkpoint_holds_the_step_tree_as_json_for_runs_show() -> None:
    cp = Checkpointer(MemoryStore())
    w = Workflow("pipe", (fn("a", "x", emits="done"),), outcomes=("done",), checkpointer=cp)
    r = await run_workflow(w, "in")
    snap = await cp.latest(r.run_id)
    assert snap is not None and snap.status == "done" and snap.state["output"] == "x"
    assert [a.step for a in workflow_state(snap.state).finished] == ["a"]
    json.dumps(str(snap.state))  # decodes to plain values


async def test_a_failing_step_lets_a_sibling_finish_the_effect_in_flight_so_the_rerun_gets_its_receipt(
        store: Any, tmp_path: Path) -> None:
    """A branch that fails stops its siblings; one of them in the middle of an effect finishes the
    effect first (it is not cut off into an uncertain receipt that would need a person), so a resume
    once the cause is fixed reruns it and gets the receipt back instead of failing on it."""
    flag = tmp_path / "broken"
    flag.touch()
    entered = asyncio.Event()
    sent: list[str] = []

    async def branch(ctx: StepContext, item: str) -> str:
        if item == "bad":
            if flag.exists():
                await entered.wait()  # fail while the sibling's effect is in flight
                raise ValueError("bad input")
            return "fixed"

        async def send() -> str:
            sent.append(item)
            entered.set()
            for _ in range(100):  # a call in flight far longer than the engine takes to see the failure
                await asyncio.sleep(0)
            return f"sent {item}"

        result = await ctx.run_effect("send", send)
        CALLS["after_send"] += 1
        return result

    cp = Checkpointer(store)
    w = Workflow("sib", (fn("items", ["bad", "slow"], emits="item"), Step("branch", branch, "item", "out"),
                         fn("join", consumes="out", emits="done", join=True, then=list)),
                 outcomes=("done",), checkpointer=cp)
    with pytest.raises(WorkflowFailed, match=r"step 'branch'.*ValueError: bad input") as err:
        await run_workflow(w, None)
    assert sent == ["slow"] and CALLS["after_send"] == 0  # the effect finished; the step stopped after it
    [slow] = [a for a in (await cp.latest(err.value.run_id)).state["workflow_state"].active  # type: ignore[union-attr]
              if a.status == "running"]
    receipt = await EffectLedger(store).receipt(f"{slow.run_id}:send")
    assert receipt is not None and receipt["status"] == "completed"
    flag.unlink()
    r = await resume_workflow(w, err.value.run_id, allow_finished=True)
    assert r.output == ["fixed", "sent slow"] and sent == ["slow"]  # the receipt, not a second send
    await store.aclose()


async def test_a_failing_step_lets_an_agent_sibling_finish_its_tool_call_in_flight(store: Any, tmp_path: Path) -> None:
    """The same for an agent step whose side-effecting tool call is in flight: the agent's effects go
    through the activation's ledger, so the call finishes; on resume the agent continues with its
    result instead of waiting for a person to settle it."""
    flag = tmp_path / "broken"
    flag.touch()
    entered = asyncio.Event()
    sent: list[str] = []

    @tool(side_effecting=True)
    async def send(item: str) -> str:
        """Send it."""
        sent.append(item)
        entered.set()
        for _ in range(100):  # a call in flight far longer than the engine takes to see the failure
            await asyncio.sleep(0)
        return f"sent {item}"

    async def check(ctx: StepContext, data: Any) -> str:
        if flag.exists():
            await entered.wait()
            raise ValueError("bad input")
        return "checked"

    cp = Checkpointer(store)
    model = ScriptedModel([{"tool_calls": [{"name": "send", "arguments": {"item": "parcel"}, "id": "c1"}]},
                           lambda request: {"text": "agent: " + request.messages[-1].tool_results[0].content}],
                          follow_transcript=True)
    w = Workflow("sib", (Step("check", check, START, "checked"),
                         agent_step("send", Agent(model, tools=[send], checkpointer=cp, name="sender"), emits="sent"),
                         fn("both", consumes=("checked", "sent"), emits="done",
                            then=lambda d: [d["checked"], d["sent"]])),
                 outcomes=("done",), checkpointer=cp)
    with pytest.raises(WorkflowFailed, match=r"step 'check'.*ValueError: bad input") as err:
        await run_workflow(w, "go")
    flag.unlink()
    r = await resume_workflow(w, err.value.run_id, allow_finished=True)
    assert r.output == ["checked", "agent: sent parcel"] and sent == ["parcel"]
    await store.aclose()


# --------------------------------------------------------------------------- an outside tester's findings


async def test_a_result_the_checkpoint_cannot_store_fails_the_step_and_the_run_stays_resumable() -> None:
    cp = Checkpointer(MemoryStore())
    fixed: list[bool] = []

    async def odd(ctx: StepContext, data: Any) -> Any:
        return {"a", "b"} if not fixed else "ab"

    w = Workflow("odd", (Step("odd", odd, START, "v"), fn("fin", consumes="v", emits="done", then=len)),
                 outcomes=("done",), checkpointer=cp)
    with pytest.raises(WorkflowFailed, match=r"step 'odd' .* returned what it cannot emit") as err:
        await run_workflow(w, None)
    assert err.value.code == "STEP_FAILED" and err.value.step == "odd"
    snap = await cp.latest(err.value.run_id)
    assert snap is not None and snap.status == "failed"
    [bad] = workflow_state(snap.state).active  # type: ignore[union-attr]
    assert (bad.step, bad.status) == ("odd", "failed")
    fixed.append(True)
    r = await resume_workflow(w, err.value.run_id, allow_finished=True)
    assert r.output == 2
    # the same without a checkpointer: a step behaves the same, durable or not
    with pytest.raises(WorkflowFailed, match="cannot emit"):
        await run_workflow(Workflow("odd2", (Step("odd", lambda c, d: _aset(), START, "done"),), outcomes=("done",)))


async def _aset() -> set[str]:
    return {"x"}


async def test_a_branch_that_emits_nothing_does_not_hang_the_join() -> None:
    w = Workflow("filter", (fn("items", [1, 2, 3, 4], emits="n"),
                            fn("even", consumes="n", emits="kept", then=lambda n: n if n % 2 == 0 else None),
                            fn("sum", consumes="kept", emits="done", join=True, then=lambda xs: Emit("done", xs))),
                 outcomes=("done",))
    assert (await run_workflow(w, None)).output == [2, 4]


async def test_a_route_a_branch_did_not_take_reaches_its_join_empty() -> None:
    w = Workflow("routes", (
        fn("items", [1, 2, 3], emits="n"),
        fn("triage", consumes="n", emits=("big", "small"), then=lambda n: Emit("big" if n > 1 else "small", n)),
        fn("bigs", consumes="big", emits="done", join=True, then=lambda xs: Emit("done", xs)),
        fn("smalls", consumes="small", emits="noted", join=True, then=lambda xs: Emit("noted", xs)),
    ), outcomes=("done", "noted"))
    r = await run_workflow(w, None)
    assert {e.type: e.payload for e in r.outcomes} == {"done": [2, 3], "noted": [1]}


async def test_a_join_may_also_wait_for_the_question_from_outside_its_fan_out() -> None:
    w = Workflow("qa", (
        fn("ask", "why?", emits="question"),
        fn("split", consumes="question", emits="part", then=lambda q: ["a", "b"]),
        fn("answer", consumes="part", emits="res", then=str.upper),
        fn("merge", consumes=("res", "question"), emits="done", join=True,
           then=lambda d: f"{d['question']} {'+'.join(d['res'])}"),
    ), outcomes=("done",))
    assert (await run_workflow(w, None)).output == "why? A+B"


async def test_a_step_waiting_for_events_of_different_branches_says_so() -> None:
    w = Workflow("mixed", (
        fn("ctx", "c", emits="ctx"), fn("items", ["x", "y"], emits="item"),
        fn("combine", consumes=("item", "ctx"), emits="done", then=lambda d: d),
    ), outcomes=("done",))
    with pytest.raises(WorkflowFailed, match="step 'combine' has ctx, item, but not from the same fan-out branch"):
        await run_workflow(w, None)


async def test_a_run_waiting_only_for_an_outside_event_suspends_until_it_is_handed_in() -> None:
    cp = Checkpointer(MemoryStore())
    w = Workflow("publish", (fn("draft", "text", emits="draft"),
                             fn("pub", consumes=("draft", "approval"), emits="done",
                                then=lambda d: f"{d['draft']} by {d['approval']}")),
                 outcomes=("done",), external=("approval",), checkpointer=cp)
    r = await run_workflow(w, None)
    assert (r.status, r.awaiting) == ("suspended", ("approval",))
    snap = await cp.latest(r.run_id)
    assert snap is not None and snap.state["waiting_for"] == "event"
    with pytest.raises(RunNotResumable, match="waiting for an outside event: approval"):
        await resume_workflow(w, r.run_id)
    with pytest.raises(ValueError, match="takes no external event 'nope'"):
        await resume_workflow(w, r.run_id, events={"nope": [1]})
    done = await resume_workflow(w, r.run_id, events={"approval": ["ann"]})
    assert done.output == "text by ann"
    with pytest.raises(RunNotResumable, match="nothing waits for an answer or an event"):
        await resume_workflow(w, r.run_id, events={"approval": ["bob"]}, allow_finished=True)


async def test_a_run_is_resumed_only_by_the_graph_it_started_with() -> None:
    cp = Checkpointer(MemoryStore())
    first = Workflow("g", (fn("a", "x", emits="mid"), gate("ok", "go on?", consumes="mid", emits="done")),
                     outcomes=("done",), checkpointer=cp)
    r = await run_workflow(first, None)
    changed = Workflow("g", (fn("a", "x", emits="mid"), gate("ok", "go on?", consumes="mid", emits="finished")),
                       outcomes=("finished",), checkpointer=cp)
    with pytest.raises(RunNotResumable, match="has other steps or events than when this run started"):
        await resume_workflow(changed, r.run_id, answer="yes")
    assert (await resume_workflow(first, r.run_id, answer="yes")).outcome == "done"


async def test_a_cycle_that_never_ends_stops_at_the_activation_limit() -> None:
    w = Workflow("loop", (fn("start", 0, emits="tick"), fn("tick", consumes="tick", emits=("tick", "done"),
                                                         then=lambda n: Emit("tick", n + 1))),
                 outcomes=("done",), max_activations=50)
    with pytest.raises(WorkflowFailed, match="ACTIVATION_LIMIT: more than 50 steps ran"):
        await run_workflow(w, None)


async def test_several_outcomes_warn_that_the_output_is_the_last() -> None:
    w = Workflow("many", (fn("items", [1, 2], emits="n"), fn("each", consumes="n", emits="done", then=str)),
                 outcomes=("done",))
    r = await run_workflow(w, None)
    assert len(r.outcomes) == 2 and any("emitted 2 outcome events" in x for x in r.warnings)


async def test_answering_one_of_several_waiting_gates_by_name_or_activation() -> None:
    cp = Checkpointer(MemoryStore())
    w = Workflow("two", (fn("items", ["a", "b"], emits="item"),
                         gate("check", "ok?", consumes="item", on_yes="yes", on_no="no"),
                         fn("keep", consumes="yes", emits="done", join=True, then=lambda xs: Emit("done", xs)),
                         fn("drop", consumes="no", emits="dropped", join=True, then=lambda xs: Emit("dropped", xs))),
                 outcomes=("done", "dropped"), checkpointer=cp)
    r = await run_workflow(w, None)
    assert len(r.waiting) == 2
    with pytest.raises(ValueError, match="several gates wait"):
        await resume_workflow(w, r.run_id, answer="yes")
    first = r.waiting[0][0].id
    r2 = await resume_workflow(w, r.run_id, answer="yes", gate=first)
    assert r2.status == "suspended" and len(r2.waiting) == 1
    r3 = await resume_workflow(w, r.run_id, answer="no", gate="check")
    assert {e.type: e.payload for e in r3.outcomes} == {"done": ["a"], "dropped": ["b"]}


async def test_second_outside_pass_findings() -> None:
    cp = Checkpointer(MemoryStore())
    # an outcome type that arrives from outside ends the run
    ext = Workflow("ext", (fn("a", None, emits="x"), fn("b", consumes="x", emits="done")), outcomes=("done",),
                   external=("done",), checkpointer=cp)
    r = await run_workflow(ext, None)
    assert (r.status, r.awaiting) == ("suspended", ("done",))
    assert (await resume_workflow(ext, r.run_id, events={"done": ["from outside"]})).output == "from outside"
    with pytest.raises(TypeError, match=r"events\['done'\] must be a list of payloads"):
        await run_workflow(ext, None, events={"done": "abc"})  # type: ignore[dict-item]
    # an outside event cannot meet events inside a fan-out: the run stalls at once, saying so
    fan = Workflow("fan", (fn("items", [1, 2], emits="i"), fn("w", consumes=("i", "sig"), emits="done")),
                   outcomes=("done",), external=("sig",), checkpointer=cp)
    with pytest.raises(WorkflowFailed, match="not from the same fan-out branch"):
        await run_workflow(fan, None)
    # gates and outside events need a checkpointer (a waiting run is suspended durably)
    with pytest.raises(ValueError, match="needs a checkpointer"):
        await run_workflow(Workflow("g", (gate("g", "ok?", emits="done"),), outcomes=("done",)), None)
    # a gate in a fan-out: its answer is recorded, and only the route it took is listed as emitted
    two = Workflow("two", (fn("items", ["a", "b"], emits="item"),
                           gate("check", "ok?", consumes="item", on_yes="yes", on_no="no"),
                           fn("keep", consumes="yes", emits="done", join=True, then=lambda xs: Emit("done", xs)),
                           fn("drop", consumes="no", join=True)), outcomes=("done",), checkpointer=cp)
    r = await run_workflow(two, None)
    for a, _ in r.waiting:
        r2 = await resume_workflow(two, r.run_id, answer="yes" if a.inputs[0].payload == "a" else "no", gate=a.id)
    assert r2.output == ["a"]
    gates = [a for a in r2.steps if a.step == "check"]
    assert sorted((a.answer, a.emitted) for a in gates) == [("no", ("no",)), ("yes", ("yes",))]


async def test_review_findings() -> None:
    # the activation limit holds inside a fan-out too, not only between scheduling rounds
    fan = Workflow("fan", (fn("items", list(range(10)), emits="n"), fn("each", consumes="n", emits="m", then=str),
                           fn("all", consumes="m", emits="done", join=True, then=lambda xs: Emit("done", xs))),
                   outcomes=("done",), max_activations=3)
    with pytest.raises(WorkflowFailed, match="ACTIVATION_LIMIT"):
        await run_workflow(fan, None)
    assert CALLS["each"] <= 2
    with pytest.raises(ValueError, match="max_activations must be an integer >= 1"):
        Workflow("bad", (), max_activations=0)
    # the caller's context is not changed by the run (services, effects)
    ctx = RunContext()
    w = Workflow("svc", (fn("a", "x", emits="done"),), outcomes=("done",), services={"svc": 1},
                 checkpointer=Checkpointer(MemoryStore()))
    r = await run_workflow(w, None, ctx=ctx)
    assert r.run_id == ctx.run_id and dict(ctx.services) == {} and ctx.effects is None
    # a changed nested workflow is a changed graph
    cp = Checkpointer(MemoryStore())
    inner = Workflow("in", (fn("x", 1, emits="done"),), outcomes=("done",))
    outer = Workflow("out", (workflow_step("sub", inner, emits="mid"), gate("ok", "go?", consumes="mid",
                                                                           emits="done")),
                     outcomes=("done",), checkpointer=cp)
    r = await run_workflow(outer, None)
    inner2 = Workflow("in", (fn("x", 1, emits="end"),), outcomes=("end",))
    outer2 = Workflow("out", (workflow_step("sub", inner2, emits="mid"), gate("ok", "go?", consumes="mid",
                                                                             emits="done")),
                      outcomes=("done",), checkpointer=cp)
    with pytest.raises(RunNotResumable, match="has other steps or events"):
        await resume_workflow(outer2, r.run_id, answer="yes")


async def test_a_capability_step_refuses_an_input_that_is_not_an_object() -> None:
    from seamkit.capabilities import Capability, Completed
    from seamkit.workflows import capability_step

    async def run(ctx: Any, data: Any) -> Completed:
        return Completed({"got": dict(data)})

    cap = Capability("echo", 1, "echo", run, input={"type": "object", "properties": {"q": {"type": "string"}}})
    w = Workflow("c", (capability_step("echo", cap, emits="done"),), outcomes=("done",))
    assert (await run_workflow(w, {"q": "x"})).output == {"got": {"q": "x"}}
    with pytest.raises(WorkflowFailed, match="INVALID_STEP_INPUT: capability echo@1 takes an object"):
        await run_workflow(w, "text")


async def test_a_workflow_run_owns_resources_its_tool_and_agent_steps_share_and_closes_them() -> None:
    log: list[str] = []

    class Session:
        async def aclose(self) -> None:
            log.append("close")

    async def open_session() -> Session:
        log.append("open")
        return Session()

    @tool(side_effecting=False)
    async def lookup(ctx: RunContext) -> str:
        """Look something up through the run's session; returns ok."""
        await ctx.resource("session", open_session)
        return "ok"

    agent = Agent(model=ScriptedModel([{"tool_calls": [{"name": "lookup", "arguments": {}}]}, "done"]),
                  tools=(lookup,), name="asker")
    wf = Workflow("w", (
        tool_step("first", lookup, emits="looked"),
        agent_step("second", agent, consumes="looked", emits="done"),
    ), outcomes=("done",))
    result = await run_workflow(wf, {})
    assert result.status == "done"
    assert log == ["open", "close"]  # one session for the tool step and the agent step's run, closed at the end
