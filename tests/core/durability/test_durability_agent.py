"""The agent loop with checkpoints: per-step checkpoints, crash and resume, the effect ledger in
the loop, approvals, leases and claims, child runs, secrets, time travel (on the in-memory store)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from seamkit import tool
from seamkit._agent.agent import Agent
from seamkit._durability.approvals import approve, reject
from seamkit._durability.checkpointer import Checkpointer
from seamkit._durability.records import CheckpointRecord
from seamkit._runtime.context import RunContext
from seamkit.errors import CodecError, EffectNotApplied, EffectUncertain, RunNotResumable, ToolArgumentError
from seamkit.testing import ScriptedModel
from seamkit.testing._memory_store import MemoryStore
from seamkit.values import Scope


class Crash(BaseException):
    """Stands in for the process dying: nothing after it runs (the 'failed' save also fails)."""


class CrashingPort:
    """Wraps a store; the save after ``crash_after`` saves raises :class:`Crash`, and every save
    after that fails too (a dead process writes nothing)."""

    def __init__(self, inner: MemoryStore, crash_after: int) -> None:
        self.inner = inner
        self.crash_after = crash_after
        self.saves = 0
        self.dead = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def save(self, record: CheckpointRecord, *, expected_version: int | None) -> None:
        if self.dead:
            raise Crash()
        if self.saves >= self.crash_after:
            self.dead = True
            raise Crash()
        self.saves += 1
        await self.inner.save(record, expected_version=expected_version)

    async def put_write(self, run_id: str, version: int, task_id: str, payload: str) -> None:
        if self.dead:
            raise Crash()
        await self.inner.put_write(run_id, version, task_id, payload)


def pay_tool(log: list[int]) -> Any:
    @tool(side_effecting=True)
    def pay(amount: int) -> str:
        """Pay an amount.

        Args:
            amount: in cents
        """
        log.append(amount)
        return f"paid {amount}"

    return pay


def scripted_payments(n: int) -> list[Any]:
    turns: list[Any] = [{"tool_calls": [{"name": "pay", "arguments": {"amount": i}}]} for i in range(1, n + 1)]
    turns.append("all paid")
    return turns


async def test_a_checkpoint_after_every_model_turn_and_tool_batch() -> None:
    store = MemoryStore()
    log: list[int] = []
    agent = Agent(ScriptedModel(scripted_payments(2)), tools=[pay_tool(log)], checkpointer=store)
    result = await agent.run("pay twice")
    assert result.output == "all paid" and log == [1, 2]
    history = await agent.checkpointer.history(result.run_id)
    # begin, (model turn, tool batch) x 2, final turn = done
    assert [(i.version, i.status) for i in history] == [
        (1, "running"), (2, "running"), (3, "running"), (4, "running"), (5, "running"), (6, "done")
    ]
    snap = await agent.checkpointer.latest(result.run_id)
    assert snap is not None and snap.transcript == result.transcript
    assert snap.state["output"] == "all paid" and snap.state["usage"] == result.usage


@pytest.mark.parametrize("crash_after", range(1, 6))
async def test_a_crashed_run_resumes_from_its_last_checkpoint_with_each_payment_made_once(crash_after: int) -> None:
    store = MemoryStore()
    log: list[int] = []
    turns = scripted_payments(2)
    crashing = Agent(ScriptedModel(turns), tools=[pay_tool(log)], checkpointer=CrashingPort(store, crash_after))
    ctx = RunContext()
    with pytest.raises(Crash):
        await crashing.run("pay twice", ctx=ctx)
    # a new process: a new agent over the same store, a model that continues the script
    snap = await Checkpointer(store).latest(ctx.run_id)
    assert snap is not None
    done_turns = sum(1 for m in snap.transcript if m.role == "assistant")
    fresh = Agent(ScriptedModel(turns[done_turns:]), tools=[pay_tool(log)], checkpointer=store)
    result = await fresh.resume(ctx.run_id)
    assert result.output == "all paid"
    assert sorted(log) == [1, 2], f"each payment exactly once, got {log}"
    assert result.usage.requests == 3  # usage from before the crash is kept
    assert [m.role for m in result.transcript] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]


async def test_tool_results_recorded_before_a_crash_are_not_run_again() -> None:
    store = MemoryStore()
    ran: list[str] = []

    @tool(side_effecting=False)
    def lookup(key: str) -> str:
        """Look up a key."""
        ran.append(key)
        return key.upper()

    turns: list[Any] = [
        {"tool_calls": [{"name": "lookup", "arguments": {"key": "a"}}, {"name": "lookup", "arguments": {"key": "b"}}]},
        "ok",
    ]
    # saves: begin, model turn; the tool batch's checkpoint is the crash
    agent = Agent(ScriptedModel(turns), tools=[lookup], checkpointer=CrashingPort(store, 2))
    ctx = RunContext()
    with pytest.raises(Crash):
        await agent.run("go", ctx=ctx)
    assert sorted(ran) == ["a", "b"]
    fresh = Agent(ScriptedModel(turns[1:]), tools=[lookup], checkpointer=store)
    result = await fresh.resume(ctx.run_id)
    assert sorted(ran) == ["a", "b"]  # not run again: their results were pending writes
    assert result.transcript[2].tool_results[0].content == "A"


async def _crashed_mid_call(store: MemoryStore, calls: tuple[Any, ...] = (("c1", 1),), running: int = 1) -> str:
    """A run whose process died while its first ``running`` side-effecting ``pay`` calls ran: the
    model turn is checkpointed, those calls' receipts say ``prepared``, no result was recorded (the
    other calls had not started). Returns the run id."""
    from seamkit._durability.ledger import EffectLedger
    from seamkit.values import Message, ToolCall

    run_id = RunContext().run_id
    handle = await Checkpointer(store).begin(run_id, {"step": 0}, [])
    turn = Message("assistant", tuple(ToolCall(cid, "pay", {"amount": amount}) for cid, amount in calls))
    await handle.save("running", {"step": 1}, [Message.user("pay"), turn])
    for cid, _ in calls[:running]:
        await EffectLedger(store)._put(f"{run_id}:1:{cid}", {"status": "prepared"})
    return run_id


async def test_a_call_a_crash_interrupted_suspends_the_run_until_a_person_settles_it_applied() -> None:
    store = MemoryStore()
    log: list[int] = []
    run_id = await _crashed_mid_call(store, (("c1", 1), ("c2", 2)))  # c2 had not started
    fresh = Agent(ScriptedModel(["all paid"]), tools=[pay_tool(log)], checkpointer=store)
    result = await fresh.resume(run_id)
    assert log == [2]  # never retried automatically; the other call of the batch ran
    assert result.stop_reason == "suspended" and result.output is None
    (effect,) = result.uncertain_effects
    assert (effect.call_id, effect.tool, effect.waits, effect.settled) == ("c1", "pay", True, None)
    # the warning names the call and the ways to settle it, but no command line (only the CLI knows
    # which --agent FILE reaches the store; it prints runnable commands itself)
    assert any("c1" in w and run_id in w and "Agent.settle_effect, or seamkit runs settle" in w
               for w in result.warnings)
    assert not any(f"runs settle {run_id}" in w for w in result.warnings)
    snap = await fresh.checkpointer.latest(run_id)
    assert snap is not None and snap.status == "suspended"
    assert snap.state["status_detail"] == "waiting for a person to settle 1 tool call whose outcome is unknown: c1"
    with pytest.raises(RunNotResumable, match="c1 is unknown"):
        await fresh.resume(run_id)
    with pytest.raises(ValueError, match="unsettled: c1"):
        await fresh.settle_effect(run_id, "c2", applied=True)

    settled = await fresh.settle_effect(run_id, "c1", applied=True, result="the bank shows 1 cent")
    assert settled.settled == "applied"
    done = await fresh.resume(run_id)
    assert done.output == "all paid" and done.stop_reason == "completed" and log == [2]
    assert [(r.call_id, r.content, r.is_error) for r in done.transcript[2].tool_results] == [
        ("c1", "A person checked: this call was applied. Result: the bank shows 1 cent", False),
        ("c2", "paid 2", False),
    ]
    assert done.uncertain_effects == () and not any("c1" in w for w in done.warnings)
    final = await fresh.checkpointer.latest(run_id)
    assert final is not None and final.status == "done" and "status_detail" not in final.state


async def test_a_call_settled_as_not_applied_runs_again_on_resume() -> None:
    store = MemoryStore()
    log: list[int] = []
    run_id = await _crashed_mid_call(store)
    agent = Agent(ScriptedModel(["all paid"]), tools=[pay_tool(log)], checkpointer=store)
    assert (await agent.resume(run_id)).stop_reason == "suspended" and log == []
    with pytest.raises(ValueError, match="applied"):
        await agent.settle_effect(run_id, "c1", applied=False, result="nothing")
    await agent.checkpointer.settle_effect(run_id, "c1", applied=False)  # the Checkpointer API too
    with pytest.raises(ValueError, match="unsettled: none"):
        await agent.settle_effect(run_id, "c1", applied=False)
    done = await agent.resume(run_id)
    assert done.output == "all paid" and log == [1]
    assert done.transcript[2].tool_results[0].content == "paid 1"


async def test_an_idempotent_tool_gets_a_stable_key_and_is_retried_after_a_crash() -> None:
    store = MemoryStore()
    keys: list[str | None] = []
    port = CrashingPort(store, crash_after=10**6)

    @tool(side_effecting=True, idempotent=True)
    def charge(amount: int, ctx: RunContext) -> str:
        """Charge an amount, idempotently.

        Args:
            amount: in cents
        """
        keys.append(ctx.idempotency_key)
        if len(keys) == 1:  # the process dies while the first attempt runs
            port.dead = True
            raise Crash()
        return f"charged {amount}"

    assert charge.schema.idempotent and charge.schema.side_effecting
    turns: list[Any] = [{"tool_calls": [{"id": "c1", "name": "charge", "arguments": {"amount": 5}}]}, "charged"]
    ctx = RunContext()
    with pytest.raises(Crash):
        await Agent(ScriptedModel(turns), tools=[charge], checkpointer=port).run("charge", ctx=ctx)
    fresh = Agent(ScriptedModel(turns[1:]), tools=[charge], checkpointer=store)
    result = await fresh.resume(ctx.run_id)
    assert result.output == "charged" and result.uncertain_effects == ()
    assert keys == [f"{ctx.run_id}:1:c1", f"{ctx.run_id}:1:c1"]  # the same key in both attempts
    assert result.transcript[2].tool_results[0].content == "charged 5"


async def test_a_side_effecting_tool_that_raises_leaves_its_outcome_unknown_and_is_never_rerun() -> None:
    from seamkit._durability.ledger import EffectLedger

    store = MemoryStore()
    attempts: list[int] = []

    @tool(side_effecting=True)
    def transfer(amount: int) -> str:
        """Transfer an amount.

        Args:
            amount: in cents
        """
        attempts.append(amount)
        if amount == 7:
            raise ConnectionResetError("the bank closed the connection after the request was sent")
        if amount == 8:
            raise EffectNotApplied("the bank declined it before booking")
        return f"sent {amount}"

    calls = [{"id": f"c{a}", "name": "transfer", "arguments": {"amount": a}} for a in (7, 8)]
    calls.append({"id": "cx", "name": "transfer", "arguments": {"amount": "lots"}})
    agent = Agent(ScriptedModel([{"tool_calls": calls}, "done"]), tools=[transfer], checkpointer=store)
    result = await agent.run("transfer")
    ledger = EffectLedger(store)
    statuses = {c: (await ledger.receipt(f"{result.run_id}:1:{c}") or {}).get("status") for c in ("c7", "c8", "cx")}
    # only an explicit "not applied" (or a call that never started) allows a retry
    assert statuses == {"c7": "uncertain", "c8": "failed", "cx": "failed"}
    from seamkit._durability.ledger import UNCERTAIN_TEMPLATE

    results = {r.call_id: r for r in result.transcript[2].tool_results}
    reason = "the operation raised ConnectionResetError: the bank closed the connection after the request was sent"
    assert results["c7"].is_error and results["c7"].content == UNCERTAIN_TEMPLATE.format(reason=reason)
    assert results["c8"].content == "EffectNotApplied: the bank declined it before booking"
    assert results["cx"].content.startswith("ToolArgumentError: invalid arguments for tool 'transfer'")
    assert [e.call_id for e in result.uncertain_effects] == ["c7"] and not result.uncertain_effects[0].waits
    snap = await agent.checkpointer.latest(result.run_id)
    assert snap is not None and snap.status == "done"
    assert snap.state["status_detail"] == "1 tool call with an unknown outcome, not settled: c7"
    assert any("c7" in w for w in snap.state["warnings"])

    # the same call again (a resumed attempt of it) does not run the tool
    async def again() -> str:
        attempts.append(-1)
        return "sent again"

    with pytest.raises(EffectUncertain):
        await ledger.run(f"{result.run_id}:1:c7", again)
    assert attempts.count(-1) == 0


async def test_an_approved_call_a_crash_interrupted_is_not_asked_for_approval_again_after_settling() -> None:
    store = MemoryStore()
    port = CrashingPort(store, crash_after=10**6)
    paid: list[int] = []

    @tool(side_effecting=True)
    def pay(amount: int) -> str:
        """Pay an amount.

        Args:
            amount: in cents
        """
        paid.append(amount)
        if len(paid) == 1:  # the process dies while the approved call runs
            port.dead = True
            raise Crash()
        return f"paid {amount}"

    calls = [{"id": "c1", "name": "pay", "arguments": {"amount": 1}}, {"id": "c2", "name": "pay",
                                                                       "arguments": {"amount": 2}}]
    turns: list[Any] = [{"tool_calls": calls}, "done"]
    first = await Agent(ScriptedModel(turns), tools=[pay], checkpointer=store, approvals={"pay": "every_call"}).run("p")
    assert first.stop_reason == "suspended"
    crashing = Agent(ScriptedModel(turns[1:]), tools=[pay], checkpointer=port, approvals={"pay": "every_call"})
    with pytest.raises(Crash):
        await crashing.resume(first.run_id, decisions={"c1": approve({"amount": 10}), "c2": reject("not this one")})
    agent = Agent(ScriptedModel(turns[1:]), tools=[pay], checkpointer=store, approvals={"pay": "every_call"})
    waiting = await agent.resume(first.run_id)
    assert waiting.stop_reason == "suspended" and waiting.pending_approvals == ()
    assert [(e.call_id, dict(e.arguments)) for e in waiting.uncertain_effects] == [("c1", {"amount": 10})]
    await agent.settle_effect(first.run_id, "c1", applied=True)
    done = await agent.resume(first.run_id)
    assert done.output == "done" and paid == [10]
    c1, c2 = done.transcript[2].tool_results
    assert c1.content.endswith("A person checked: this call was applied.") and "edited" in c1.content
    assert c2.is_error and "not this one" in c2.content


async def test_through_tool_middlewares_a_refused_call_is_not_applied_and_a_raising_tool_is_uncertain() -> None:
    from seamkit._durability.ledger import EffectLedger
    from seamkit._middleware import middleware

    ran: list[int] = []

    @middleware(kinds=["tool"])
    async def limit(call: Any, next: Any) -> Any:
        """Refuses large amounts before the tool runs."""
        if call.request.call.arguments["amount"] > 100:
            raise PermissionError("amounts over 100 need a second signature")
        async for item in next(call):
            yield item

    @tool(side_effecting=True)
    async def pay_async(amount: int) -> str:
        """Pay an amount.

        Args:
            amount: in cents
        """
        ran.append(amount)
        await asyncio.sleep(0)
        raise OSError("the connection dropped mid-request")

    store = MemoryStore()
    calls = [{"id": f"c{a}", "name": "pay_async", "arguments": {"amount": a}} for a in (5, 500)]
    agent = Agent(ScriptedModel([{"tool_calls": calls}, "ok"]), tools=[pay_async], checkpointer=store,
                  middlewares=[limit])
    result = await agent.run("pay")
    assert ran == [5]
    ledger = EffectLedger(store)
    assert (await ledger.receipt(f"{result.run_id}:1:c5"))["status"] == "uncertain"  # type: ignore[index]
    assert (await ledger.receipt(f"{result.run_id}:1:c500"))["status"] == "failed"  # type: ignore[index]
    refused = result.transcript[2].tool_results[1]
    assert refused.content == "PermissionError: amounts over 100 need a second signature"
    assert [e.call_id for e in result.uncertain_effects] == ["c5"]


async def test_a_side_effecting_tool_that_raised_before_its_result_was_recorded_is_not_rerun() -> None:
    store = MemoryStore()
    attempts: list[int] = []

    class DiesAtRecord(CrashingPort):
        async def put_write(self, run_id: str, version: int, task_id: str, payload: str) -> None:
            self.dead = True  # the process dies right after the tool raised
            raise Crash()

    @tool(side_effecting=True)
    def transfer(amount: int) -> str:
        """Transfer an amount.

        Args:
            amount: in cents
        """
        attempts.append(amount)
        raise TimeoutError("no answer from the bank")

    turns: list[Any] = [{"tool_calls": [{"id": "c1", "name": "transfer", "arguments": {"amount": 3}}]}, "ok"]
    ctx = RunContext()
    with pytest.raises(Crash):
        await Agent(ScriptedModel(turns), tools=[transfer], checkpointer=DiesAtRecord(store, 10**6)).run("t", ctx=ctx)
    result = await Agent(ScriptedModel(turns[1:]), tools=[transfer], checkpointer=store).resume(ctx.run_id)
    assert attempts == [3]  # not run again
    assert result.stop_reason == "suspended"
    assert [(e.call_id, e.waits) for e in result.uncertain_effects] == [("c1", True)]
    assert "TimeoutError: no answer from the bank" in result.uncertain_effects[0].reason


async def test_effect_ledger_receipts() -> None:
    from seamkit._durability.ledger import EffectLedger

    store = MemoryStore()
    ledger = EffectLedger(store)
    runs: list[int] = []

    async def op() -> dict[str, int]:
        runs.append(1)
        return {"charged": 5}

    assert await ledger.run("k1", op) == {"charged": 5}
    assert await EffectLedger(store).run("k1", op) == {"charged": 5}  # another process: stored value
    assert runs == [1]
    assert (await ledger.receipt("k1"))["status"] == "completed"  # type: ignore[index]

    async def declined() -> None:
        runs.append(2)
        raise EffectNotApplied("card declined before charging")

    with pytest.raises(EffectNotApplied):
        await ledger.run("k2", declined)
    assert (await ledger.receipt("k2"))["status"] == "failed"  # type: ignore[index]
    assert await ledger.run("k2", op) == {"charged": 5}  # not applied: a retry is allowed

    async def unknown() -> None:
        raise TimeoutError("the payment API did not answer")

    with pytest.raises(EffectUncertain) as info:
        await ledger.run("k3", unknown)
    assert isinstance(info.value.__cause__, TimeoutError)
    before = len(runs)
    with pytest.raises(EffectUncertain):
        await ledger.run("k3", op)
    assert len(runs) == before


@pytest.mark.parametrize("key", ["", " ", "\t\n"])
async def test_an_empty_or_blank_effect_key_is_refused_before_anything_runs(key: str) -> None:
    from seamkit._durability.ledger import EffectLedger

    ran: list[str] = []

    async def op() -> str:
        ran.append("op")
        return "charged"

    for ledger in (EffectLedger(MemoryStore()), EffectLedger()):
        with pytest.raises(ValueError, match="effect key"):
            await ledger.run(key, op)
        for entry in (ledger.receipt(key), ledger.forget(key), ledger.mark_uncertain(key, "?"),
                      ledger.settle(key, applied=False)):
            with pytest.raises(ValueError, match="effect key"):
                await entry
    with pytest.raises(ValueError, match="effect key"):
        await RunContext().run_effect(key, op)
    with pytest.raises(TypeError, match="str"):
        await RunContext().run_effect(None, op)  # type: ignore[arg-type]
    assert ran == []


async def test_ctx_run_effect_without_a_store_runs_once_per_key() -> None:
    ctx = RunContext()
    n: list[int] = []

    async def op() -> int:
        n.append(1)
        return len(n)

    assert await ctx.run_effect("x", op) == 1
    assert await ctx.run_effect("x", op) == 1
    assert await asyncio.gather(*(ctx.run_effect("y", op) for _ in range(5))) == [2] * 5


def approval_agent(store: Any, log: list[int], turns: list[Any], policy: str = "every_call") -> Agent:
    return Agent(ScriptedModel(turns), tools=[pay_tool(log)], checkpointer=store, approvals={"pay": policy})


async def test_approval_suspends_and_an_edited_approval_runs_with_the_edited_arguments() -> None:
    store = MemoryStore()
    log: list[int] = []
    turns = scripted_payments(1)
    result = await approval_agent(store, log, turns).run("pay")
    assert result.stop_reason == "suspended" and log == []
    (pending,) = result.pending_approvals
    assert pending.tool == "pay" and pending.arguments == {"amount": 1}
    snap = await Checkpointer(store).latest(result.run_id)
    assert snap is not None and snap.status == "suspended"
    # another process decides
    other = approval_agent(store, log, turns[1:])
    done = await other.resume(result.run_id, decisions={pending.call_id: approve({"amount": 7})})
    assert done.output == "all paid" and log == [7]
    # the model's call stays in the transcript; its result says what actually ran
    assert done.transcript[1].tool_calls[0].arguments == {"amount": 1}
    assert done.transcript[2].tool_results[0].content == (
        'A person approved this call with edited arguments; it ran with: {"amount": 7}\npaid 7'
    )
    snap = await Checkpointer(store).latest(result.run_id)
    assert snap is not None and snap.state["pending_approvals"] == [] and done.pending_approvals == ()
    with pytest.raises(RunNotResumable, match="done"):
        await other.resume(result.run_id, decisions={pending.call_id: approve()})


async def test_a_rejected_or_undecided_call_is_not_run_and_the_model_sees_the_rejection() -> None:
    store = MemoryStore()
    log: list[int] = []
    turns: list[Any] = [
        {"tool_calls": [{"name": "pay", "arguments": {"amount": 1}}, {"name": "pay", "arguments": {"amount": 2}}]},
        "ok",
    ]
    result = await approval_agent(store, log, turns).run("pay")
    first, second = result.pending_approvals
    model = ScriptedModel(turns[1:])
    agent = Agent(model, tools=[pay_tool(log)], checkpointer=store, approvals={"pay": "every_call"})
    done = await agent.resume(result.run_id, decisions={first.call_id: reject("too much")})
    assert log == []
    results = done.transcript[2].tool_results
    assert all(r.is_error for r in results)
    assert "rejected" in results[0].content and "too much" in results[0].content
    assert "rejected" in results[1].content  # no decision = rejected
    sent = model.requests[0].messages[-1].tool_results
    assert [r.call_id for r in sent] == [first.call_id, second.call_id]


async def test_resuming_an_already_resumed_run_is_a_clear_error() -> None:
    store = MemoryStore()
    log: list[int] = []
    gate = asyncio.Event()

    @tool(side_effecting=True)
    async def pay(amount: int) -> str:
        """Pay."""
        await gate.wait()
        log.append(amount)
        return "ok"

    turns = scripted_payments(1)
    first = Agent(ScriptedModel(turns), tools=[pay], checkpointer=store, approvals={"pay": "every_call"})
    result = await first.run("pay")
    call_id = result.pending_approvals[0].call_id
    a = Agent(ScriptedModel(turns[1:]), tools=[pay], checkpointer=store, approvals={"pay": "every_call"})
    task = asyncio.ensure_future(a.resume(result.run_id, decisions={call_id: approve()}))
    await asyncio.sleep(0.05)
    with pytest.raises(RunNotResumable, match="already resumed"):
        await a.resume(result.run_id, decisions={call_id: approve()})
    gate.set()
    assert (await task).output == "all paid" and log == [1]


async def test_decisions_are_checked_before_anything_changes() -> None:
    store = MemoryStore()
    log: list[int] = []
    result = await approval_agent(store, log, scripted_payments(1)).run("pay")
    call_id = result.pending_approvals[0].call_id
    agent = approval_agent(store, log, ["x"])
    with pytest.raises(ValueError, match="no pending tool call 'nope'"):
        await agent.resume(result.run_id, decisions={"nope": approve()})
    with pytest.raises(ToolArgumentError):
        await agent.resume(result.run_id, decisions={call_id: approve({"amount": "lots"})})
    snap = await Checkpointer(store).latest(result.run_id)
    assert snap is not None and snap.status == "suspended"


async def test_once_per_run_asks_once_and_once_per_thread_remembers_across_runs() -> None:
    store = MemoryStore()
    log: list[int] = []
    turns = scripted_payments(2)
    r = await approval_agent(store, log, turns, "once_per_run").run("pay")
    (p,) = r.pending_approvals
    later = approval_agent(store, log, turns[1:], "once_per_run")
    done = await later.resume(r.run_id, decisions={p.call_id: approve()})
    assert done.output == "all paid" and log == [1, 2]  # the second call needed no approval

    ctx = RunContext(scope=Scope(tenant="t", thread="th-1"))
    r = await approval_agent(store, log, scripted_payments(1), "once_per_thread").run("pay", ctx=ctx)
    await approval_agent(store, log, ["ok"], "once_per_thread").resume(
        r.run_id, decisions={r.pending_approvals[0].call_id: approve()}
    )
    again = await approval_agent(store, log, scripted_payments(1), "once_per_thread").run(
        "pay", ctx=RunContext(scope=Scope(tenant="t", thread="th-1"))
    )
    assert again.stop_reason == "completed"
    other_thread = await approval_agent(store, log, scripted_payments(1), "once_per_thread").run(
        "pay", ctx=RunContext(scope=Scope(tenant="t", thread="th-2"))
    )
    assert other_thread.stop_reason == "suspended"


def test_approvals_are_checked_when_the_agent_is_built() -> None:
    log: list[int] = []
    with pytest.raises(ValueError, match="need a checkpointer"):
        Agent(ScriptedModel(["x"]), tools=[pay_tool(log)], approvals={"pay": "every_call"})
    with pytest.raises(ValueError, match="must be one of"):
        Agent(ScriptedModel(["x"]), tools=[pay_tool(log)], checkpointer=MemoryStore(), approvals={"pay": "always"})
    with pytest.raises(ValueError, match="not a tool"):
        Agent(ScriptedModel(["x"]), tools=[pay_tool(log)], checkpointer=MemoryStore(), approvals={"refund": "never"})


async def test_finished_runs_are_refused_unless_asked() -> None:
    store = MemoryStore()
    agent = Agent(ScriptedModel(["hello"]), checkpointer=store)
    result = await agent.run("hi")
    with pytest.raises(RunNotResumable, match="done"):
        await agent.resume(result.run_id)
    again = await agent.resume(result.run_id, allow_finished=True)
    assert again.output == "hello" and again.transcript == result.transcript
    with pytest.raises(RunNotResumable, match="no checkpoints"):
        await agent.resume("run_unknown")


async def test_of_two_workers_claiming_a_crashed_run_exactly_one_wins() -> None:
    store = MemoryStore()
    log: list[int] = []
    turns = scripted_payments(1)
    ctx = RunContext()
    with pytest.raises(Crash):
        await Agent(ScriptedModel(turns), tools=[pay_tool(log)], checkpointer=CrashingPort(store, 2)).run("p", ctx=ctx)
    workers = [
        Agent(ScriptedModel(turns[1:]), tools=[pay_tool(log)], checkpointer=Checkpointer(store, owner=f"w{i}"))
        for i in range(5)
    ]
    # the crashed run's lease belongs to this (live) process: other owners must steal it
    outcomes = await asyncio.gather(*(w.resume(ctx.run_id, steal=True) for w in workers), return_exceptions=True)
    wins = [o for o in outcomes if not isinstance(o, BaseException)]
    losses = [o for o in outcomes if isinstance(o, RunNotResumable)]
    assert len(wins) == 1 and len(losses) == 4, outcomes
    assert log == [1]


async def test_a_live_workers_lease_keeps_others_out() -> None:
    store = MemoryStore()
    gate = asyncio.Event()

    @tool(side_effecting=False)
    async def slow() -> str:
        """Wait."""
        await gate.wait()
        return "done"

    agent = Agent(ScriptedModel([{"tool_calls": [{"name": "slow", "arguments": {}}]}, "ok"]), tools=[slow],
                  checkpointer=Checkpointer(store, owner="host-a:1"))
    ctx = RunContext()
    task = asyncio.ensure_future(agent.run("go", ctx=ctx))
    await asyncio.sleep(0.05)
    other = Agent(ScriptedModel(["ok"]), tools=[slow], checkpointer=Checkpointer(store, owner="host-b:2"))
    with pytest.raises(RunNotResumable, match="another worker"):
        await other.resume(ctx.run_id)
    gate.set()
    assert (await task).output == "ok"


async def test_child_runs_record_their_parent_and_never_touch_a_sibling() -> None:
    store = MemoryStore()
    parent = RunContext()
    a = Agent(ScriptedModel(["a done"]), checkpointer=store)
    b = Agent(ScriptedModel(["b done"]), checkpointer=store)
    ca, cb = parent.child(), parent.child()
    ra, rb = await asyncio.gather(a.run("a", ctx=ca), b.run("b", ctx=cb))
    assert ra.parent_run_id == rb.parent_run_id == parent.run_id and ra.run_id != rb.run_id
    cp = Checkpointer(store)
    children = await cp.list_runs(parent_run_id=parent.run_id)
    assert sorted(i.run_id for i in children) == sorted([ra.run_id, rb.run_id])
    sa, sb = await cp.latest(ra.run_id), await cp.latest(rb.run_id)
    assert sa is not None and sb is not None
    assert sa.state["output"] == "a done" and sb.state["output"] == "b done"
    assert sa.transcript[-1].text == "a done" and sb.transcript[-1].text == "b done"


async def test_a_secret_in_the_state_is_never_persisted() -> None:
    store = MemoryStore()
    secret = "sk-live-0123456789abcdef"
    agent = Agent(ScriptedModel(["noted", "ok"]), checkpointer=Checkpointer(store, secrets=[secret]))
    result = await agent.run("hello")
    assert result.warnings == ()
    leaky = await agent.run(f"my key is {secret}")
    assert any("secret" in w for w in leaky.warnings)
    snap = await Checkpointer(store).latest(leaky.run_id)
    # the task held the secret: no message of this run was written, but the run is recorded as
    # done (not left 'running' to be resumed and run again)
    assert snap is not None and snap.status == "done" and snap.transcript == ()
    assert snap.state["output"] is None and "secret" in snap.state["redacted"]
    assert all(secret not in entry for entry in (await store.latest(leaky.run_id)).log)  # type: ignore[union-attr]


@pytest.mark.parametrize("ending", ["failed", "max_steps", "completed"])
async def test_a_run_whose_final_checkpoint_held_a_secret_is_marked_finished_and_says_why(ending: str) -> None:
    from seamkit.errors import ProviderError

    store = MemoryStore()
    secret = "sk-live-0123456789abcdef"

    @tool(side_effecting=False)
    def echo(text: str) -> str:
        """Echo a text.

        Args:
            text: what to echo
        """
        return text

    # the first snapshot is clean; the model's tool call puts the secret in every later one
    turns: list[Any] = [{"tool_calls": [{"name": "echo", "arguments": {"text": f"key {secret}"}}]}]
    turns.append({"failed": ProviderError(f"upstream rejected {secret}"), "max_steps": {"tool_calls": []},
                  "completed": "all good"}[ending])
    agent = Agent(ScriptedModel(turns), tools=[echo], checkpointer=Checkpointer(store, secrets=[secret]),
                  max_steps=1 if ending == "max_steps" else 10)
    ctx = RunContext()
    if ending == "failed":
        with pytest.raises(ProviderError):
            await agent.run("hello", ctx=ctx)
    else:
        await agent.run("hello", ctx=ctx)
    snap = await Checkpointer(store).latest(ctx.run_id)
    assert snap is not None and snap.status == ("failed" if ending == "failed" else "done")
    assert "secret" in snap.state["redacted"]
    assert snap.state["status_detail"].startswith(f"the run {'failed' if ending == 'failed' else 'ended'}, but its "
                                                  "final checkpoint was not saved")
    assert all(secret not in e for e in (await store.latest(ctx.run_id)).log)  # type: ignore[union-attr]
    assert secret not in str(snap.state)
    with pytest.raises(RunNotResumable):  # finished: never resumed to run again by accident
        await Agent(ScriptedModel(["again"]), tools=[echo], checkpointer=store).resume(ctx.run_id)


async def test_a_value_the_codec_cannot_encode_fails_at_snapshot_time_naming_its_path() -> None:
    cp = Checkpointer(MemoryStore())
    with pytest.raises(CodecError) as info:
        await cp.begin("run_x", {"step": 0, "extra": {"callback": lambda: None}}, [])
    assert "extra" in info.value.path and "callback" in info.value.path


async def test_time_travel_reads_an_old_version_and_forks_from_it() -> None:
    store = MemoryStore()
    log: list[int] = []
    agent = Agent(ScriptedModel(scripted_payments(2)), tools=[pay_tool(log)], checkpointer=store)
    result = await agent.run("pay twice")
    cp = agent.checkpointer
    old = await cp.at_version(result.run_id, 3)
    assert old is not None and [m.role for m in old.transcript] == ["user", "assistant", "tool"]
    await cp.fork(result.run_id, 3, "run_fork")
    forked = Agent(ScriptedModel(["stopped early"]), tools=[pay_tool(log)], checkpointer=store)
    branch = await forked.resume("run_fork")
    assert branch.output == "stopped early" and log == [1, 2]
    assert (await cp.latest(result.run_id)).state["output"] == "all paid"  # type: ignore[union-attr]


async def test_an_interrupted_run_stays_running_with_its_lease_released_and_any_worker_resumes_it() -> None:
    store = MemoryStore()
    gate = asyncio.Event()
    ran: list[str] = []

    @tool(side_effecting=False)
    async def slow(key: str) -> str:
        """Wait, then answer."""
        ran.append(key)
        await gate.wait()
        return key

    turns: list[Any] = [{"tool_calls": [{"name": "slow", "arguments": {"key": "k"}}]}, "ok"]
    agent = Agent(ScriptedModel(turns), tools=[slow], checkpointer=Checkpointer(store, owner="host-a:1"))
    ctx = RunContext()
    task = asyncio.ensure_future(agent.run("go", ctx=ctx))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    snap = await Checkpointer(store).latest(ctx.run_id)
    assert snap is not None and snap.status == "running" and snap.metadata["lease_until"] is None
    assert "CancelledError" in snap.state["interrupted"]
    gate.set()
    other = Agent(ScriptedModel(turns[1:]), tools=[slow], checkpointer=Checkpointer(store, owner="host-b:2"))
    result = await other.resume(ctx.run_id)  # no steal needed: nobody holds the run
    assert result.output == "ok" and ran == ["k", "k"]  # the interrupted call had not finished: run again


async def test_a_failing_run_is_marked_failed_with_its_error() -> None:
    from seamkit.errors import FailureClass, ProviderError

    class Broken(ScriptedModel):
        def stream(self, request: Any) -> Any:
            raise ProviderError("the server said no", FailureClass.SERVER_ERROR, provider="scripted")

    store = MemoryStore()
    agent = Agent(Broken(["x"]), checkpointer=store)
    ctx = RunContext()
    with pytest.raises(ProviderError):
        await agent.run("hi", ctx=ctx)
    snap = await Checkpointer(store).latest(ctx.run_id)
    assert snap is not None and snap.status == "failed" and "the server said no" in snap.state["error"]
    with pytest.raises(RunNotResumable, match="failed"):
        await Agent(ScriptedModel(["fine now"]), checkpointer=store).resume(ctx.run_id)
    again = await Agent(ScriptedModel(["fine now"]), checkpointer=store).resume(ctx.run_id, allow_finished=True)
    assert again.output == "fine now"


async def test_a_store_blip_mid_run_leaves_it_running_resumable_not_failed() -> None:
    # the store fails one checkpoint write and is back for the next: that is no failure of the run
    # (a queued run's delivery is retried; a plain resume continues it), so it must not read failed
    from seamkit.errors import StoreUnavailable

    class Blip(CrashingPort):
        async def save(self, record: CheckpointRecord, *, expected_version: int | None) -> None:
            self.saves += 1
            if self.saves == self.crash_after:
                raise StoreUnavailable("redis store redis://:***@h/0 failed to save: ConnectionError")
            await self.inner.save(record, expected_version=expected_version)

    store = MemoryStore()
    log: list[int] = []
    turns: list[Any] = [{"tool_calls": [{"name": "pay", "arguments": {"amount": 5}}]}, "paid"]
    agent = Agent(ScriptedModel(turns), tools=[pay_tool(log)], checkpointer=Checkpointer(Blip(store, 2)))
    ctx = RunContext()
    with pytest.raises(StoreUnavailable):
        await agent.run("pay", ctx=ctx)
    snap = await Checkpointer(store).latest(ctx.run_id)
    assert snap is not None and snap.status == "running" and snap.metadata["lease_until"] is None
    assert "StoreUnavailable" in snap.state["interrupted"]
    result = await Agent(ScriptedModel(turns[1:]), tools=[pay_tool(log)], checkpointer=store).resume(ctx.run_id)
    assert result.output == "paid" and log == [5]


async def test_stored_decisions_govern_even_when_the_resuming_agent_has_no_approvals() -> None:
    # regression: a rejected call ran when the resuming agent did not ask for approval of its tool
    store = MemoryStore()
    log: list[int] = []
    turns: list[Any] = [
        {"tool_calls": [{"name": "pay", "arguments": {"amount": 1}}, {"name": "pay", "arguments": {"amount": 2}}]},
        "ok",
    ]
    result = await approval_agent(store, log, turns).run("pay")
    first, second = result.pending_approvals
    lax = Agent(ScriptedModel(turns[1:]), tools=[pay_tool(log)], checkpointer=store)  # no approvals
    decisions = {first.call_id: reject("no"), second.call_id: approve({"amount": 9})}
    done = await lax.resume(result.run_id, decisions=decisions)
    assert log == [9]
    assert done.pending_approvals == ()
    assert done.transcript[2].tool_results[0].is_error


async def test_resuming_a_suspended_run_without_decisions_is_refused() -> None:
    # regression: agent.resume(run_id) silently rejected every pending call
    store = MemoryStore()
    log: list[int] = []
    result = await approval_agent(store, log, scripted_payments(1)).run("pay")
    call_id = result.pending_approvals[0].call_id
    with pytest.raises(RunNotResumable, match=f"waits for a decision on {call_id}"):
        await approval_agent(store, log, ["x"]).resume(result.run_id)
    with pytest.raises(TypeError, match="approve"):
        await approval_agent(store, log, ["x"]).resume(result.run_id, decisions={call_id: True})  # type: ignore[dict-item]
    snap = await Checkpointer(store).latest(result.run_id)
    assert snap is not None and snap.status == "suspended" and log == []


async def test_a_suspension_that_cannot_be_checkpointed_is_an_error_not_a_promise() -> None:
    # regression: the run said "waiting for approval" though nothing was saved
    store = MemoryStore()
    log: list[int] = []
    secret = "sk-live-0123456789abcdef"
    turns: list[Any] = [{"tool_calls": [{"name": "pay", "arguments": {"amount": 1}}]}, "ok"]
    agent = Agent(ScriptedModel(turns), tools=[pay_tool(log)], checkpointer=Checkpointer(store, secrets=[secret]),
                  approvals={"pay": "every_call"})
    with pytest.raises(RunNotResumable, match="could not be checkpointed"):
        await agent.run(f"pay with {secret}")
    assert log == []


async def test_a_model_turn_interrupted_in_flight_is_not_counted_as_a_step() -> None:
    store = MemoryStore()
    agent = Agent(ScriptedModel([{"text": "slow answer", "delay": 5}]), checkpointer=store)
    ctx = RunContext()
    task = asyncio.ensure_future(agent.run("go", ctx=ctx))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    snap = await Checkpointer(store).latest(ctx.run_id)
    assert snap is not None and snap.state["step"] == 0 and snap.status == "running"
    result = await Agent(ScriptedModel(["quick answer"]), checkpointer=store).resume(ctx.run_id)
    assert result.steps == 1 and result.output == "quick answer"


async def test_empty_decisions_are_refused_like_none_and_a_missing_tool_cannot_be_approved() -> None:
    store = MemoryStore()
    log: list[int] = []
    result = await approval_agent(store, log, scripted_payments(1)).run("pay")
    call_id = result.pending_approvals[0].call_id
    with pytest.raises(RunNotResumable, match="waits for a decision"):
        await approval_agent(store, log, ["x"]).resume(result.run_id, decisions={})
    toolless = Agent(ScriptedModel(["x"]), checkpointer=store)
    with pytest.raises(ValueError, match="does not have"):
        await toolless.resume(result.run_id, decisions={call_id: approve()})
    snap = await Checkpointer(store).latest(result.run_id)
    assert snap is not None and snap.status == "suspended" and log == []


async def test_a_resumed_transcript_with_an_unanswered_call_reaches_the_model_answered() -> None:
    # issue 10 item 5: an edited (or pre-fix) checkpoint with a tool call left without a result
    # was sent as is, and providers reject it
    from seamkit._agent.loop import UNANSWERED_TEMPLATE
    from seamkit.values import Message, ToolCall

    store = MemoryStore()
    log: list[int] = []
    agent = Agent(ScriptedModel(["I could not tell whether it was paid."]), tools=[pay_tool(log)],
                  checkpointer=store)
    ctx = RunContext()
    handle = await agent.checkpointer.begin(ctx.run_id, {"step": 1}, [])
    msgs = [Message.user("pay 5"), Message("assistant", (ToolCall("c1", "pay", {"amount": 5}),)),
            Message.user("did it go through?")]
    await handle.save("running", {"step": 1}, msgs)
    result = await agent.resume(ctx.run_id)
    assert result.output == "I could not tell whether it was paid." and log == []
    sent = agent.model.requests[0].messages  # type: ignore[attr-defined]
    assert [m.role for m in sent] == ["user", "assistant", "tool", "user"]
    r = sent[2].tool_results[0]
    assert (r.call_id, r.content, r.is_error) == ("c1", UNANSWERED_TEMPLATE, True)
    snap = await agent.checkpointer.latest(ctx.run_id)
    assert snap is not None and snap.transcript == result.transcript  # the log stays append-only


async def test_a_side_effect_stopped_in_flight_says_the_run_was_stopped_and_shows_before_any_resume() -> None:
    # issue 10 item 15: a SIGTERM (asyncio.run cancels the run's task) left the reason
    # "the operation raised CancelledError: " (empty); and a killed call showed nowhere until a resume
    from seamkit._durability.ledger import STOPPED_REASON, EffectLedger

    store = MemoryStore()
    started = asyncio.Event()

    @tool(side_effecting=True)
    async def pay(amount: int) -> str:
        """Pay an amount to the supplier and return the payment service's confirmation.

        Args:
            amount: euros
        """
        started.set()
        await asyncio.sleep(30)
        return "paid"

    turns: list[Any] = [{"tool_calls": [{"id": "c1", "name": "pay", "arguments": {"amount": 5}}]}, "done"]
    ctx = RunContext()
    task = asyncio.ensure_future(Agent(ScriptedModel(turns), tools=[pay], checkpointer=store).run("pay", ctx=ctx))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    receipt = await EffectLedger(store, tenant=ctx.scope.tenant).receipt(f"{ctx.run_id}:1:c1")
    assert receipt is not None and receipt["error"] == STOPPED_REASON and "CancelledError" not in receipt["error"]
    cp = Checkpointer(store)
    snap = await cp.latest(ctx.run_id)
    assert snap is not None
    (effect,) = await cp.interrupted_effects(snap)  # before any resume
    assert (effect.call_id, effect.tool, effect.reason, effect.waits) == ("c1", "pay", STOPPED_REASON, True)
