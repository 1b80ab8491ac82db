"""The turn driver (``seamkit._agent.kernel``) through full turns of an ``Agent`` with capabilities:
concurrency of reads and writes, effects exactly once across turns and processes, confirmations on
the agenda, the reducer's removals and skips, ``NeedsDependency``, replay of committed turns,
citations, selection and an interrupted turn. Scripted models; a real checkpointer over the
in-memory store and, for durability, over the SQLite store. Assertions are on codes,
dispositions, outcomes, event kinds and call counts."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from pydantic import BaseModel
from seamkit._agent.agent import Agent
from seamkit._agent.kernel import classify_answer, kernel_state, turn_key
from seamkit._durability import codec
from seamkit._durability.checkpointer import Checkpointer
from seamkit._runtime.context import RunContext
from seamkit.capabilities import (
    Capability,
    CapabilityContext,
    Completed,
    Evidence,
    Fact,
    Failed,
    Guidance,
    NeedsConfirmation,
    NeedsDependency,
    compile_agent,
)
from seamkit.capabilities._state import KernelState, TurnResult
from seamkit.errors import EffectNotApplied, ProviderError, RunCancelled, RunNotResumable
from seamkit.testing._memory_store import MemoryStore
from seamkit.testing._models import ScriptedModel, ScriptedTurn
from seamkit.values import ChatRequest, Scope, StreamEvent
from seamkit_sqlite.store import SqliteStore

RUNS: Counter[str] = Counter()  # capability id -> execute calls
EFFECTS: list[str] = []  # effect operations that ran, by key
EVIDENCE = Evidence("catalog:laptop", "Laptop repair")
HOLD: list[asyncio.Event] = []  # when set: submit's effect signals it started, then never finishes


@pytest.fixture(autouse=True)
def _clear() -> None:
    RUNS.clear()
    EFFECTS.clear()
    HOLD.clear()


# --------------------------------------------------------------------------- capabilities


class Query(BaseModel):
    query: str


class Summary(BaseModel):
    summary: str


class Act(BaseModel):
    key: str
    mode: str = "ok"  # ok | raise | not_applied_once | blank | skip | ask


async def search(ctx: CapabilityContext, inp: Query) -> Completed:
    RUNS["search"] += 1
    return Completed({"best": inp.query}, facts=(Fact("service.match@1", {"id": inp.query}, evidence=(EVIDENCE.id,)),),
                     evidence=(EVIDENCE,))


async def submit(ctx: CapabilityContext, inp: Summary) -> Completed:
    RUNS["submit"] += 1

    async def op() -> str:
        EFFECTS.append(inp.summary)
        if HOLD:
            HOLD[0].set()
            await asyncio.Event().wait()
        return f"SD-{len(EFFECTS)}"

    ticket = await ctx.run_effect("req-" + inp.summary, op)
    return Completed({"ticket": ticket}, facts=(Fact("request.ticket@1", {"t": ticket},
                                                     depends_on=("service.match@1",)),))


async def track(ctx: CapabilityContext, inp: Query) -> Completed:
    RUNS["track"] += 1
    return Completed({"status": "open"})


NOT_APPLIED: set[str] = set()


async def act(ctx: CapabilityContext, inp: Act) -> Completed | Failed | NeedsConfirmation:
    """A write that asks for confirmation itself only in mode ``ask`` (confirmation ``capability``)."""
    RUNS["act"] += 1
    if inp.mode == "ask" and not ctx.confirmed:
        return NeedsConfirmation(f"act on {inp.key}")
    if inp.mode == "skip":
        return Completed({"done": False})

    async def op() -> str:
        EFFECTS.append(inp.key)
        if inp.mode == "raise":
            raise RuntimeError("the line dropped: secret-token-123")
        if inp.mode == "not_applied_once" and inp.key not in NOT_APPLIED:
            NOT_APPLIED.add(inp.key)
            raise EffectNotApplied("declined before anything happened")
        return f"done-{inp.key}"

    try:
        out = await ctx.run_effect("  " if inp.mode == "blank" else inp.key, op)
    except EffectNotApplied:
        return Failed("NOT_APPLIED", "the system declined; nothing happened")
    return Completed({"done": out})


async def peek(ctx: CapabilityContext, inp: Act) -> Completed:
    """A read that (wrongly) tries to run an effect."""
    RUNS["peek"] += 1

    async def op() -> None:
        EFFECTS.append("peek")

    await ctx.run_effect(inp.key, op)
    return Completed()


SEARCH = Capability("search_services", 1, "Find a service", search, input=Query, provides=("service.match@1",),
                    effect="read")
SUBMIT = Capability("submit_request", 1, "Submit a request", submit, input=Summary, requires=("service.match@1",),
                    provides=("request.ticket@1",), effect="write", confirmation="required")
TRACK = Capability("track_request", 1, "Track a request", track, input=Query, requires=("request.ticket@1",),
                   effect="read")
ACT = Capability("act", 1, "Act on something", act, input=Act, effect="write", confirmation="capability")
PEEK = Capability("peek", 1, "Peek at something", peek, input=Act, effect="read")


async def forget(ctx: CapabilityContext, inp: Query) -> Completed:
    RUNS["forget"] += 1
    return Completed()


FORGET = Capability("forget_match", 1, "Forget the service found", forget, input=Query,
                    invalidates=("service.match@1",), effect="read")
DESK = compile_agent([SEARCH, SUBMIT, TRACK, ACT, PEEK, FORGET])


def proposal(*intentions: Mapping[str, Any], reply: str = "ok", **extra: Any) -> str:
    return json.dumps({"intentions": list(intentions), "reply": reply, **extra})


def it(capability: str, **inp: Any) -> dict[str, Any]:
    return {"capability": capability, "input": inp}


class Events:
    def __init__(self) -> None:
        self.seen: list[StreamEvent] = []

    def on_event(self, event: StreamEvent) -> None:
        self.seen.append(event)

    def capability(self, what: str) -> list[Any]:
        key = "disposition" if what == "planned" else "execution"
        return [e.data[key] for e in self.seen if e.kind == "capability" and e.data["event"] == what]


def make_agent(store: Any, model: ScriptedModel, compiled: Any = DESK, **kw: Any) -> tuple[Agent, Events]:
    events = Events()
    return Agent(model, capabilities=compiled, checkpointer=Checkpointer(store), observers=(events,), **kw), events


def outcomes(turn: TurnResult | None) -> list[tuple[str, str, str | None]]:
    assert turn is not None
    return [(e.capability, e.outcome, e.code) for e in turn.executions]


async def kernel_of(store: Any, run_id: str) -> tuple[str, KernelState]:
    snap = await Checkpointer(store).latest(run_id)
    assert snap is not None
    found = kernel_state(snap.state)  # facts and evidence are stored as their codec texts
    assert found is not None and isinstance(found[0], KernelState)
    return snap.status, found[0]


@pytest_asyncio.fixture(params=["memory", "sqlite"])
async def opener(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Callable[[], Any]]:
    """Opens the store: the same object in memory; a new connection to one SQLite file (a second
    process) each call."""
    opened: list[Any] = []
    memory = MemoryStore()

    def open_store() -> Any:
        if request.param == "memory":
            return memory
        s = SqliteStore(tmp_path / "kernel.db")
        opened.append(s)
        return s

    yield open_store
    for s in opened:
        await s.aclose()


async def _await_confirmation(store: Any, *, turn_id: str = "T1") -> tuple[str, ScriptedModel]:
    """Turn 1: search and submit (submit proposed first): submit waits for the person's yes."""
    model = ScriptedModel([proposal(it("submit_request", summary="broken screen"),
                                    it("search_services", query="laptop")),
                           proposal(reply=f"Shall I submit? [{EVIDENCE.id}]")])
    agent, _ = make_agent(store, model)
    r = await agent.run("my laptop screen is broken", turn_id=turn_id)
    assert r.stop_reason == "suspended" and outcomes(r.turn) == [
        ("search_services@1", "completed", None),
        ("submit_request@1", "awaiting_confirmation", "CONFIRMATION_REQUIRED")]
    return r.run_id, model


# --------------------------------------------------------------------------- reads and writes


async def test_independent_reads_run_concurrently_and_a_dependent_read_after_its_provider() -> None:
    started = {"a": asyncio.Event(), "b": asyncio.Event()}
    order: list[str] = []

    def read(me: str, other: str, **kw: Any) -> Capability:
        async def execute(ctx: CapabilityContext, inp: Query) -> Completed:
            started[me].set()
            # each waits for the other to have started: only an overlapping run completes both
            await asyncio.wait_for(started[other].wait(), 5)
            order.append(me)
            return Completed(facts=(Fact(f"{me}.seen@1", 1),))
        return Capability(me, 1, me, execute, input=Query, provides=(f"{me}.seen@1",), effect="read", **kw)

    async def after(ctx: CapabilityContext, inp: Query) -> Completed:
        order.append("c")
        assert "a.seen@1" in ctx.facts
        return Completed()

    compiled = compile_agent([read("a", "b"), read("b", "a"), Capability("c", 1, "c", after, input=Query,
                                                                          requires=("a.seen@1",), effect="read")])
    model = ScriptedModel([proposal(it("c", query="x"), it("a", query="x"), it("b", query="x")), proposal()])
    agent, _ = make_agent(MemoryStore(), model, compiled)
    r = await agent.run("go")
    assert sorted(outcomes(r.turn)) == [("a@1", "completed", None), ("b@1", "completed", None),
                                        ("c@1", "completed", None)]
    assert order[-1] == "c" and model.calls == 2


async def test_writes_of_one_step_run_one_after_another() -> None:
    active = {"now": 0, "most": 0}

    async def write(ctx: CapabilityContext, inp: Act) -> Completed:
        active["now"] += 1
        active["most"] = max(active["most"], active["now"])
        for _ in range(5):  # let any other task of a gather run now
            await asyncio.sleep(0)

        async def op() -> str:
            EFFECTS.append(inp.key)
            return inp.key

        await ctx.run_effect(inp.key, op)
        await asyncio.sleep(0)
        active["now"] -= 1
        return Completed()

    caps = [Capability(f"w{i}", 1, f"write {i}", write, input=Act, effect="write", confirmation="capability")
            for i in range(3)]
    model = ScriptedModel([proposal(*(it(f"w{i}", key=f"k{i}") for i in range(3))), proposal()])
    agent, _ = make_agent(MemoryStore(), model, compile_agent(caps))
    r = await agent.run("write all")
    assert [o for _, o, _ in outcomes(r.turn)] == ["completed"] * 3
    assert active["most"] == 1 and sorted(EFFECTS) == ["k0", "k1", "k2"]


# --------------------------------------------------------------------------- confirmation


async def test_a_required_confirmation_stores_one_agenda_item_and_one_interaction(opener: Callable[[], Any]) -> None:
    store = opener()
    run_id, model = await _await_confirmation(store)
    status, ks = await kernel_of(store, run_id)
    assert status == "suspended" and RUNS == Counter({"search": 1}) and EFFECTS == []
    assert [(a.kind, a.capability, dict(a.input)) for a in ks.agenda] == [
        ("confirmation", "submit_request@1", {"summary": "broken screen"})]
    assert [(i.kind, i.agenda_item) for i in ks.interactions] == [("confirmation", ks.agenda[0].id)]
    assert ks.turns == ("T1",) and ks.turn is None and model.calls == 2


async def test_yes_runs_the_write_once_with_the_original_input(opener: Callable[[], Any]) -> None:
    store = opener()
    run_id, _ = await _await_confirmation(store)
    # the model re-proposes the write, with other input, alongside the yes
    model2 = ScriptedModel([proposal(it("submit_request", summary="something else")), proposal(reply="done")])
    other, events = make_agent(opener(), model2)
    r = await other.resume(run_id, answer="Yes, go ahead.", turn_id="T2")
    assert outcomes(r.turn) == [("submit_request@1", "completed", None)]
    assert r.turn is not None
    e = r.turn.executions[0]
    assert e.confirmed and (e.reason or "").startswith("agenda:") and dict(e.input) == {"summary": "broken screen"}
    assert RUNS["submit"] == 1 and EFFECTS == ["broken screen"]
    assert r.stop_reason == "completed" and r.turn.agenda == () and r.turn.interactions == ()
    assert [d.action for d in r.turn.dispositions] == ["execute"]  # merged into the agenda item, not run again
    status, ks = await kernel_of(store, run_id)
    assert status == "done" and ks.agenda == () and ks.interactions == () and "request.ticket@1" in ks.facts
    assert [x.outcome for x in events.capability("finished")] == ["completed"]


async def test_no_declines_and_clears_agenda_and_interaction(opener: Callable[[], Any]) -> None:
    store = opener()
    run_id, _ = await _await_confirmation(store)
    model2 = ScriptedModel([proposal(it("submit_request", summary="broken screen"), reply="cancelled")])
    other, _ = make_agent(opener(), model2)
    r = await other.resume(run_id, answer="no thanks", turn_id="T2")
    assert outcomes(r.turn) == [("submit_request@1", "declined", "CONFIRMATION_DECLINED")]
    assert r.turn is not None
    assert [(d.action, d.code) for d in r.turn.dispositions] == [("reject", "CONFIRMATION_DECLINED")]
    assert RUNS["submit"] == 0 and EFFECTS == [] and model2.calls == 1
    status, ks = await kernel_of(store, run_id)
    assert ks.agenda == () and ks.interactions == () and status == "done"


async def test_the_models_confirmation_field_may_decline_when_the_text_is_not_a_plain_answer() -> None:
    store = MemoryStore()
    run_id, _ = await _await_confirmation(store)
    model2 = ScriptedModel([proposal(confirmation="no"), proposal(reply="ok")])
    other, _ = make_agent(store, model2)
    r = await other.resume(run_id, answer="hmm, on second thought leave it for now", turn_id="T2")
    assert [(c, o) for c, o, _ in outcomes(r.turn)] == [("submit_request@1", "declined")]
    assert RUNS["submit"] == 0 and EFFECTS == []
    schema = model2.requests[0].output_schema
    assert schema is not None and "confirmation" in schema["required"]
    _, ks = await kernel_of(store, run_id)
    assert ks.agenda == () and ks.interactions == ()


@pytest.mark.parametrize("said", ["maybe", "what would that cost?",
                                  "well, as long as it is the laptop one, file it as it stands"])
async def test_the_models_yes_is_no_consent_the_write_waits_for_the_persons_plain_yes(said: str) -> None:
    store = MemoryStore()
    run_id, _ = await _await_confirmation(store)
    model2 = ScriptedModel([proposal(confirmation="yes", reply="shall I?")], repeat=True)
    other, _ = make_agent(store, model2)
    r = await other.resume(run_id, answer=said, turn_id="T2")
    assert outcomes(r.turn) == [] and RUNS["submit"] == 0 and EFFECTS == []
    assert r.stop_reason == "suspended" and r.turn is not None
    assert [i.kind for i in r.turn.interactions] == ["confirmation"]
    r = await other.resume(run_id, answer="yes", turn_id="T3")  # then the person says it
    assert [(c, o) for c, o, _ in outcomes(r.turn)] == [("submit_request@1", "completed")]


async def test_an_answer_that_is_neither_keeps_the_confirmation_open() -> None:
    store = MemoryStore()
    run_id, _ = await _await_confirmation(store)
    model2 = ScriptedModel([proposal(confirmation="none", reply="Which laptop?")])
    other, _ = make_agent(store, model2)
    r = await other.resume(run_id, answer="what does it cost first?", turn_id="T2")
    assert r.turn is not None and r.turn.executions == () and r.stop_reason == "suspended"
    assert RUNS["submit"] == 0 and model2.calls == 1
    _, ks = await kernel_of(store, run_id)
    assert [a.kind for a in ks.agenda] == ["confirmation"] and [i.kind for i in ks.interactions] == ["confirmation"]


async def test_a_confirmed_write_whose_required_fact_was_forgotten_meanwhile_is_not_run(
        opener: Callable[[], Any]) -> None:
    store = opener()
    run_id, _ = await _await_confirmation(store)
    other, _ = make_agent(opener(), ScriptedModel([proposal(it("forget_match", query="x"), confirmation="none"),
                                                   proposal(reply="forgotten"), proposal(reply="not filed")]))
    r2 = await other.resume(run_id, answer="actually, forget that laptop match", turn_id="T2")
    assert outcomes(r2.turn) == [("forget_match@1", "completed", None)]
    assert r2.turn is not None and r2.turn.facts_removed == ("service.match@1",)
    r3 = await other.resume(run_id, answer="yes", turn_id="T3")
    assert outcomes(r3.turn) == [("submit_request@1", "skipped", "DEPENDENCY_NOT_COMPLETED")]
    assert RUNS["submit"] == 0 and EFFECTS == []
    _, ks = await kernel_of(store, run_id)
    assert ks.agenda == () and ks.interactions == () and "request.ticket@1" not in ks.facts


async def test_confirmation_capability_mode_asks_through_needs_confirmation() -> None:
    store = MemoryStore()
    model = ScriptedModel([proposal(it("act", key="k1", mode="ask")), proposal(reply="confirm?"),
                           proposal(reply="done")])
    agent, _ = make_agent(store, model)
    r = await agent.run("act on k1", turn_id="T1")
    assert outcomes(r.turn) == [("act@1", "awaiting_confirmation", "CONFIRMATION_REQUIRED")]
    assert r.stop_reason == "suspended" and RUNS["act"] == 1 and EFFECTS == []
    r2 = await agent.resume(r.run_id, answer="yes", turn_id="T2")
    assert outcomes(r2.turn) == [("act@1", "completed", None)]
    assert r2.turn is not None and r2.turn.executions[0].confirmed
    assert RUNS["act"] == 2 and EFFECTS == ["k1"]


# --------------------------------------------------------------------------- effects through turns


async def test_a_write_confirmed_twice_runs_its_effect_once_across_turns_and_processes(
        opener: Callable[[], Any]) -> None:
    store = opener()
    run_id, _ = await _await_confirmation(store)
    second, _ = make_agent(opener(), ScriptedModel([proposal(reply="done")]))
    r2 = await second.resume(run_id, answer="yes", turn_id="T2")
    assert outcomes(r2.turn) == [("submit_request@1", "completed", None)]
    # the first process again, on its own connection: the same write proposed and confirmed again
    first, _ = make_agent(opener(), ScriptedModel([proposal(it("submit_request", summary="broken screen")),
                                                   proposal(reply="again?"), proposal(reply="done")]))
    r3 = await first.resume(run_id, answer="file it again", turn_id="T3")
    assert outcomes(r3.turn) == [("submit_request@1", "awaiting_confirmation", "CONFIRMATION_REQUIRED")]
    r4 = await first.resume(run_id, answer="yes", turn_id="T4")
    assert outcomes(r4.turn) == [("submit_request@1", "completed", None)]
    assert r2.turn is not None and r4.turn is not None
    assert r4.turn.executions[0].output == r2.turn.executions[0].output == {"ticket": "SD-1"}
    assert RUNS["submit"] == 2 and EFFECTS == ["broken screen"]


async def test_an_uncertain_effect_fails_now_and_on_every_later_attempt(opener: Callable[[], Any]) -> None:
    store = opener()
    model = ScriptedModel([proposal(it("act", key="k1", mode="raise")), proposal(reply="hm")])
    agent, _ = make_agent(store, model)
    r = await agent.run("act", turn_id="T1")
    assert outcomes(r.turn) == [("act@1", "failed", "EFFECT_UNCERTAIN")]
    assert r.turn is not None and "secret-token-123" not in r.turn.executions[0].message
    again, _ = make_agent(opener(), ScriptedModel([proposal(it("act", key="k1", mode="ok")), proposal(reply="hm")]))
    r2 = await again.resume(r.run_id, answer="try again", turn_id="T2")
    assert outcomes(r2.turn) == [("act@1", "failed", "EFFECT_UNCERTAIN")]
    assert EFFECTS == ["k1"] and RUNS["act"] == 2


async def test_an_effect_not_applied_may_be_retried_in_a_later_turn(opener: Callable[[], Any]) -> None:
    NOT_APPLIED.clear()
    store = opener()
    agent, _ = make_agent(store, ScriptedModel([proposal(it("act", key="k2", mode="not_applied_once")),
                                                proposal(reply="declined")]))
    r = await agent.run("act", turn_id="T1")
    assert outcomes(r.turn) == [("act@1", "failed", "NOT_APPLIED")]
    again, _ = make_agent(opener(), ScriptedModel([proposal(it("act", key="k2", mode="not_applied_once")),
                                                   proposal(reply="done")]))
    r2 = await again.resume(r.run_id, answer="try again", turn_id="T2")
    assert outcomes(r2.turn) == [("act@1", "completed", None)]
    assert EFFECTS == ["k2", "k2"]


@pytest.mark.parametrize(("cap", "mode", "code"), [
    ("peek", "ok", "EFFECT_NOT_ALLOWED"),
    ("act", "skip", "WRITE_EFFECT_NOT_COORDINATED"),
    ("act", "blank", "INVALID_IDEMPOTENCY_KEY"),
])
async def test_effect_misuse_is_refused_with_its_code(cap: str, mode: str, code: str) -> None:
    model = ScriptedModel([proposal(it(cap, key="k", mode=mode)), proposal(reply="no")])
    agent, events = make_agent(MemoryStore(), model)
    r = await agent.run("go")
    assert outcomes(r.turn) == [(f"{cap}@1", "failed", code)]
    assert EFFECTS == [] and RUNS[cap] == 1 and model.calls == 2
    assert r.turn is not None and r.turn.facts_added == ()
    assert [x.code for x in events.capability("finished")] == [code]


# --------------------------------------------------------------------------- the reducer in turns


class Name(BaseModel):
    name: str
    fail: bool = False


def _chain() -> Any:
    async def profile(ctx: CapabilityContext, inp: Name) -> Completed | Failed:
        RUNS["profile"] += 1
        if inp.fail:
            return Failed("PROFILE_DOWN", "the profile service is down")
        return Completed(facts=(Fact("customer@1", {"name": inp.name}),))

    async def address(ctx: CapabilityContext, inp: Name) -> Completed:
        RUNS["address"] += 1
        return Completed(facts=(Fact("address@1", inp.name, depends_on=("customer@1",)),))

    async def quote(ctx: CapabilityContext, inp: Name) -> Completed:
        RUNS["quote"] += 1
        return Completed(facts=(Fact("quote@1", 10, depends_on=("address@1",)),))

    async def weather(ctx: CapabilityContext, inp: Name) -> Completed:
        RUNS["weather"] += 1
        return Completed()

    async def logout(ctx: CapabilityContext, inp: Name) -> Completed:
        RUNS["logout"] += 1
        return Completed()

    return compile_agent([
        Capability("profile", 1, "profile", profile, input=Name, provides=("customer@1",), effect="read"),
        Capability("address", 1, "address", address, input=Name, requires=("customer@1",), provides=("address@1",),
                   effect="read"),
        Capability("quote", 1, "quote", quote, input=Name, requires=("address@1",), provides=("quote@1",),
                   effect="read"),
        Capability("weather", 1, "weather", weather, input=Name, effect="read"),
        Capability("logout", 1, "logout", logout, input=Name, invalidates=("customer@1",), effect="read"),
    ])


async def test_replacement_and_invalidation_remove_stale_facts_transitively() -> None:
    store = MemoryStore()
    model = ScriptedModel([
        proposal(it("quote", name="a"), it("address", name="a"), it("profile", name="a")), proposal(),
        proposal(it("profile", name="b")), proposal(),
        proposal(it("logout", name="b")), proposal(),
    ])
    agent, _ = make_agent(store, model, _chain())
    r1 = await agent.run("quote me", turn_id="T1")
    assert [c for c, _, _ in outcomes(r1.turn)] == ["profile@1", "address@1", "quote@1"]
    assert r1.turn is not None and set(r1.turn.facts_added) == {"customer@1", "address@1", "quote@1"}
    r2 = await agent.resume(r1.run_id, answer="I am b now", turn_id="T2")
    assert r2.turn is not None
    assert r2.turn.facts_added == ("customer@1",) and set(r2.turn.facts_removed) == {"address@1", "quote@1"}
    _, ks = await kernel_of(store, r1.run_id)
    assert set(ks.facts) == {"customer@1"} and ks.facts["customer@1"].value == {"name": "b"}
    r3 = await agent.resume(r1.run_id, answer="log me out", turn_id="T3")
    assert r3.turn is not None and r3.turn.facts_removed == ("customer@1",) and r3.turn.facts_added == ()
    _, ks = await kernel_of(store, r1.run_id)
    assert dict(ks.facts) == {}


@pytest.mark.parametrize("effect", ["read", "write"])
async def test_a_fact_derived_in_the_step_that_invalidates_its_source_does_not_survive(effect: str) -> None:
    # address reads customer@1 and derives address@1 from it while logout, in the same step,
    # invalidates customer@1: whatever the order, no fact may outlive what it was derived from
    async def address(ctx: CapabilityContext, inp: Name) -> Completed:
        RUNS["address"] += 1
        assert "customer@1" in ctx.facts
        if effect == "write":
            async def op() -> str:
                EFFECTS.append(inp.name)
                return inp.name

            await ctx.run_effect("address-" + inp.name, op)
        return Completed(facts=(Fact("address@1", inp.name, depends_on=("customer@1",)),))

    chain = _chain()
    compiled = compile_agent([*(c for c in chain.capabilities if c.id != "address"),
                              Capability("address", 1, "address", address, input=Name, requires=("customer@1",),
                                         provides=("address@1",), effect=effect,  # type: ignore[arg-type]
                                         confirmation="capability" if effect == "write" else "none")])
    store = MemoryStore()
    model = ScriptedModel([proposal(it("profile", name="a")), proposal(),
                           proposal(it("logout", name="a"), it("address", name="a")), proposal()])
    agent, _ = make_agent(store, model, compiled)
    r1 = await agent.run("who am i", turn_id="T1")
    r2 = await agent.resume(r1.run_id, answer="address, then log me out", turn_id="T2")
    assert sorted(outcomes(r2.turn)) == [("address@1", "completed", None), ("logout@1", "completed", None)]
    _, ks = await kernel_of(store, r1.run_id)
    assert dict(ks.facts) == {}
    assert r2.turn is not None and set(r2.turn.facts_removed) == {"customer@1", "address@1"}
    assert r2.turn.facts_added == ()


async def test_a_capability_whose_required_fact_an_earlier_one_of_the_step_removed_is_skipped() -> None:
    async def drop(ctx: CapabilityContext, inp: Name) -> Completed:
        RUNS["drop"] += 1
        return Completed()

    async def purge(ctx: CapabilityContext, inp: Name) -> Completed:
        RUNS["purge"] += 1
        return Completed()

    chain = _chain()
    compiled = compile_agent([*chain.capabilities,
                              Capability("drop", 1, "drop", drop, input=Name, invalidates=("customer@1",),
                                         effect="read"),
                              Capability("purge", 1, "purge", purge, input=Name, requires=("customer@1",),
                                         invalidates=("quote@1",), effect="read")])
    assert compiled.order.index("drop") < compiled.order.index("purge")
    model = ScriptedModel([proposal(it("profile", name="a")), proposal(),
                           proposal(it("purge", name="a"), it("drop", name="a")), proposal()])
    agent, _ = make_agent(MemoryStore(), model, compiled)
    r1 = await agent.run("who am i", turn_id="T1")
    r2 = await agent.resume(r1.run_id, answer="drop and purge", turn_id="T2")
    assert outcomes(r2.turn) == [("drop@1", "completed", None), ("purge@1", "skipped", "DEPENDENCY_NOT_COMPLETED")]
    assert RUNS["purge"] == 0 and RUNS["drop"] == 1


async def test_a_failed_provider_keeps_earlier_facts_and_skips_only_its_dependents() -> None:
    store = MemoryStore()
    model = ScriptedModel([
        proposal(it("profile", name="a")), proposal(),
        proposal(it("address", name="a"), it("weather", name="a"), it("profile", name="c", fail=True)), proposal(),
    ])
    agent, _ = make_agent(store, model, _chain())
    r1 = await agent.run("who am i", turn_id="T1")
    r2 = await agent.resume(r1.run_id, answer="again", turn_id="T2")
    assert sorted(outcomes(r2.turn)) == [("address@1", "skipped", "DEPENDENCY_NOT_COMPLETED"),
                                         ("profile@1", "failed", "PROFILE_DOWN"),
                                         ("weather@1", "completed", None)]
    assert RUNS == Counter({"profile": 2, "weather": 1})
    _, ks = await kernel_of(store, r1.run_id)
    assert ks.facts["customer@1"].value == {"name": "a"}
    assert r2.turn is not None and r2.turn.facts_removed == () and r2.turn.facts_added == ()


async def test_a_provider_awaiting_confirmation_leaves_its_dependents_pending() -> None:
    model = ScriptedModel([proposal(it("track_request", query="mine"), it("submit_request", summary="s"),
                                    it("search_services", query="laptop")), proposal()])
    agent, _ = make_agent(MemoryStore(), model)
    r = await agent.run("file and track")
    assert outcomes(r.turn) == [("search_services@1", "completed", None),
                                ("submit_request@1", "awaiting_confirmation", "CONFIRMATION_REQUIRED"),
                                ("track_request@1", "skipped", "DEPENDENCY_PENDING")]
    assert RUNS == Counter({"search": 1}) and r.stop_reason == "suspended"
    assert r.turn is not None and [e.pending for e in r.turn.executions] == [(), (), ("request.ticket@1",)]


# --------------------------------------------------------------------------- needs_dependency


class User(BaseModel):
    user: str


def _dependent(provider_confirmation: str) -> tuple[Any, list[Any]]:
    states: list[Any] = []

    async def status(ctx: CapabilityContext, inp: User) -> Completed | NeedsDependency:
        RUNS["status"] += 1
        if "account@1" not in ctx.facts:
            return NeedsDependency("account@1", "login", {"user": inp.user}, state={"asked": inp.user})
        states.append(ctx.state)
        return Completed({"status": "ok"})

    async def login(ctx: CapabilityContext, inp: User) -> Completed:
        RUNS["login"] += 1
        if provider_confirmation == "required":
            async def op() -> str:
                EFFECTS.append(inp.user)
                return "linked"

            await ctx.run_effect("link-" + inp.user, op)
        return Completed(facts=(Fact("account@1", inp.user),))

    write = provider_confirmation == "required"
    return compile_agent([
        Capability("status", 1, "status", status, input=User, effect="read"),
        Capability("login", 1, "login", login, input=User, provides=("account@1",),
                   effect="write" if write else "read", confirmation="required" if write else "none"),
    ]), states


async def test_needs_dependency_runs_the_provider_in_the_same_turn_and_resumes_the_consumer() -> None:
    compiled, states = _dependent("none")
    model = ScriptedModel([proposal(it("status", user="u")), proposal()])
    agent, _ = make_agent(MemoryStore(), model, compiled)
    r = await agent.run("my status")
    assert outcomes(r.turn) == [("login@1", "completed", None), ("status@1", "completed", None)]
    assert r.turn is not None and r.turn.executions[0].reason == "dependency:status@1"
    assert RUNS == Counter({"status": 2, "login": 1}) and states == [{"asked": "u"}] and model.calls == 2


async def test_the_policy_is_asked_about_a_provider_run_for_a_dependency() -> None:
    compiled, states = _dependent("none")
    asked: list[str] = []

    def policy(c: Capability, inp: Any, facts: Any) -> str | None:
        asked.append(c.id)
        return "logins are not allowed here" if c.id == "login" else None

    model = ScriptedModel([proposal(it("status", user="u")), proposal()])
    agent, _ = make_agent(MemoryStore(), model, compiled, capability_policy=policy)
    r = await agent.run("my status")
    assert outcomes(r.turn) == [("login@1", "failed", "POLICY_DENIED"),
                                ("status@1", "skipped", "DEPENDENCY_NOT_COMPLETED")]
    assert asked == ["status", "login"] and RUNS == Counter({"status": 1}) and states == []


async def test_a_dependency_awaiting_confirmation_puts_the_consumer_on_the_agenda_until_yes(
        opener: Callable[[], Any]) -> None:
    compiled, states = _dependent("required")
    store = opener()
    agent, _ = make_agent(store, ScriptedModel([proposal(it("status", user="u")), proposal(reply="confirm?")]),
                          compiled)
    r = await agent.run("my status", turn_id="T1")
    assert outcomes(r.turn) == [("login@1", "awaiting_confirmation", "CONFIRMATION_REQUIRED"),
                                ("status@1", "awaiting_dependency", "DEPENDENCY_PENDING")]
    assert r.turn is not None and r.turn.executions[1].pending == ("account@1",)
    _, ks = await kernel_of(store, r.run_id)
    assert sorted((a.kind, a.capability, a.waits_for) for a in ks.agenda) == [
        ("confirmation", "login@1", None), ("dependency", "status@1", "account@1")]
    assert [i.kind for i in ks.interactions] == ["confirmation"]
    other, _ = make_agent(opener(), ScriptedModel([proposal(reply="done")]), compiled)
    r2 = await other.resume(r.run_id, answer="yes", turn_id="T2")
    assert outcomes(r2.turn) == [("login@1", "completed", None), ("status@1", "completed", None)]
    assert r2.turn is not None and (r2.turn.executions[1].reason or "").startswith("resumed:")
    assert RUNS == Counter({"status": 2, "login": 1}) and EFFECTS == ["u"] and states == [{"asked": "u"}]
    _, ks = await kernel_of(store, r.run_id)
    assert ks.agenda == () and ks.interactions == ()


async def test_declining_a_dependency_provider_clears_the_consumer_waiting_for_it() -> None:
    compiled, states = _dependent("required")
    store = MemoryStore()
    agent, _ = make_agent(store, ScriptedModel([proposal(it("status", user="u")), proposal(reply="confirm?"),
                                                proposal(reply="cancelled")]), compiled)
    r = await agent.run("my status", turn_id="T1")
    r2 = await agent.resume(r.run_id, answer="no", turn_id="T2")
    assert outcomes(r2.turn) == [("login@1", "declined", "CONFIRMATION_DECLINED"),
                                 ("status@1", "skipped", "DEPENDENCY_NOT_COMPLETED")]
    assert RUNS == Counter({"status": 1}) and EFFECTS == [] and states == []
    status, ks = await kernel_of(store, r.run_id)
    assert ks.agenda == () and ks.interactions == () and status == "done"
    assert r2.turn is not None and r2.turn.agenda == ()


# --------------------------------------------------------------------------- replay and the checkpoint


async def test_a_committed_turn_is_replayed_with_no_model_or_capability_call(opener: Callable[[], Any]) -> None:
    store = opener()
    run_id, _ = await _await_confirmation(store)
    yes_model = ScriptedModel([proposal(reply="done")])
    agent2, _ = make_agent(store, yes_model)
    r2 = await agent2.resume(run_id, answer="yes", turn_id="T2")
    counts = (Counter(RUNS), list(EFFECTS))
    # the same process, and another process over the same store whose model has no turn to give
    for replayer in (agent2, make_agent(opener(), ScriptedModel([]))[0]):
        calls = yes_model.calls
        for tid, said, original in (("T2", "yes", r2.turn), ("T1", "my laptop screen is broken", None)):
            again = await replayer.resume(run_id, answer=said, turn_id=tid)
            assert again.turn is not None and again.turn.replayed and again.turn.turn_id == tid
            if original is not None:
                assert again.turn.executions == original.executions and again.output == r2.output
        assert yes_model.calls == calls and (Counter(RUNS), list(EFFECTS)) == counts
    status, ks = await kernel_of(store, run_id)
    assert ks.turns == ("T1", "T2") and status == "done"
    # a turn id names one message: the same id with another answer is refused, never replayed as if
    with pytest.raises(RunNotResumable, match="committed with another message"):
        await agent2.resume(run_id, answer="no", turn_id="T2")
    assert yes_model.calls == calls and (Counter(RUNS), list(EFFECTS)) == counts


async def test_the_checkpoint_holds_the_whole_state_through_the_codec(opener: Callable[[], Any]) -> None:
    store = opener()
    run_id, _ = await _await_confirmation(store)
    _, ks = await kernel_of(opener(), run_id)  # decoded by another reader
    assert set(ks.facts) == {"service.match@1"} and set(ks.evidence) == {EVIDENCE.id}
    assert len(ks.agenda) == 1 and len(ks.interactions) == 1 and ks.turns == ("T1",)
    assert codec.loads(codec.dumps(ks)) == ks
    text = await store.get(Scope(), turn_key(run_id, "T1"))
    stored = codec.loads(text)
    assert isinstance(stored, TurnResult) and [e.outcome for e in stored.executions] == [
        "completed", "awaiting_confirmation"]


# --------------------------------------------------------------------------- citations


@pytest.mark.parametrize(("cited", "unknown"), [(EVIDENCE.id, ()), ("s000000", ("s000000",))])
async def test_reply_citations_are_checked_against_the_evidence(cited: str, unknown: tuple[str, ...]) -> None:
    model = ScriptedModel([proposal(it("search_services", query="laptop")), proposal(reply=f"Laptop repair [{cited}]")])
    agent, _ = make_agent(MemoryStore(), model)
    r = await agent.run("laptop")
    assert r.turn is not None and r.turn.unknown_citations == unknown
    assert any(c in w for w in r.warnings for c in unknown) == bool(unknown)


# --------------------------------------------------------------------------- selection


def _ten() -> Any:
    async def run(ctx: CapabilityContext, inp: Query) -> Completed:
        RUNS[ctx.capability.id] += 1
        return Completed()

    return compile_agent([Capability(f"op{i}", 1, f"operation number {i}", run, input=Query, effect="read",
                                     guidance=Guidance(when_to_use=f"guidance-{i}", examples=(f"topic{i}",)))
                          for i in range(10)])


def shown(request: ChatRequest) -> tuple[set[str], set[str]]:
    """The capabilities a request shows in full (guidance in the system text, input schema in the
    proposal schema); every id and description is there too."""
    system = request.messages[0].text
    assert all(f"- op{i}: operation number {i}" in system for i in range(10))
    full = {f"op{i}" for i in range(10) if f"guidance-{i}" in system}
    assert request.output_schema is not None
    schema = request.output_schema["properties"]["intentions"]["items"]["anyOf"]
    return full, {v["properties"]["capability"]["const"] for v in schema}


async def test_the_model_sees_every_id_but_the_selected_in_full_and_select_brings_one_in() -> None:
    model = ScriptedModel([json.dumps({"intentions": [], "select": ["op5"], "reply": ""}),
                           proposal(it("op5", query="x")), proposal(reply="done")])
    agent, _ = make_agent(MemoryStore(), model, _ten())
    r = await agent.run("topic2 please")
    assert outcomes(r.turn) == [("op5@1", "completed", None)] and model.calls == 3
    assert shown(model.requests[0]) == ({"op2"}, {"op2"})
    assert shown(model.requests[1]) == ({"op2", "op5"}, {"op2", "op5"})


async def test_select_alongside_intentions_shows_the_capability_in_full_on_the_next_step() -> None:
    model = ScriptedModel([json.dumps({"intentions": [it("op2", query="x")], "select": ["op5"], "reply": ""}),
                           proposal(it("op5", query="y")), proposal(reply="done")])
    agent, _ = make_agent(MemoryStore(), model, _ten())
    r = await agent.run("topic2")
    assert [c for c, _, _ in outcomes(r.turn)] == ["op2@1", "op5@1"] and model.calls == 3
    assert shown(model.requests[0]) == ({"op2"}, {"op2"})
    assert shown(model.requests[1]) == ({"op2", "op5"}, {"op2", "op5"})
    assert RUNS == Counter({"op2": 1, "op5": 1})


# --------------------------------------------------------------------------- an interrupted turn


@pytest.mark.parametrize("how", ["cancellation", "task"])
async def test_an_interrupted_turn_runs_again_with_its_id_and_the_write_is_not_repeated(
        opener: Callable[[], Any], how: str) -> None:
    store = opener()
    run_id, _ = await _await_confirmation(store)
    ctx = RunContext()

    def stop(request: ChatRequest) -> str:
        # mid-turn, after the confirmed write ran: the run is cancelled; the search this step
        # proposes runs, and the turn stops before the next model call
        ctx.cancellation.cancel("the person closed the window")
        return proposal(it("search_services", query="laptop"))

    if how == "cancellation":
        first, _ = make_agent(store, ScriptedModel([stop, proposal(reply="never")]))
        with pytest.raises(RunCancelled):
            await first.resume(run_id, answer="yes", turn_id="T2", ctx=ctx)
    else:  # the task running the turn is cancelled while the model answers
        answering = asyncio.Event()

        def slow(request: ChatRequest) -> ScriptedTurn:
            answering.set()
            return ScriptedTurn(proposal(reply="never"), delay=60)

        first, _ = make_agent(store, ScriptedModel([slow]))
        task = asyncio.ensure_future(first.resume(run_id, answer="yes", turn_id="T2"))
        await asyncio.wait_for(answering.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert EFFECTS == ["broken screen"]
    status, ks = await kernel_of(store, run_id)
    assert status == "running" and ks.turn is not None and ks.turn[0] == "T2" and ks.turns == ("T1",)
    model2 = ScriptedModel([proposal(reply="done")])
    second, _ = make_agent(opener(), model2)
    r = await second.resume(run_id)
    assert r.turn is not None and r.turn.turn_id == "T2" and not r.turn.replayed
    assert EFFECTS == ["broken screen"] and model2.calls == 1
    assert ("submit_request@1", "completed", None) in outcomes(r.turn)
    assert "request.ticket@1" in r.turn.facts_added
    status, ks = await kernel_of(store, run_id)
    assert status == "done" and ks.turns == ("T1", "T2") and ks.agenda == () and ks.interactions == ()


async def test_a_turn_interrupted_while_its_write_is_in_flight_reports_the_effect_uncertain(
        opener: Callable[[], Any]) -> None:
    store = opener()
    run_id, _ = await _await_confirmation(store)
    HOLD.append(asyncio.Event())
    first, _ = make_agent(store, ScriptedModel([proposal(reply="never")]))
    task = asyncio.ensure_future(first.resume(run_id, answer="yes", turn_id="T2"))
    await asyncio.wait_for(HOLD[0].wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    HOLD.clear()
    second, _ = make_agent(opener(), ScriptedModel([proposal(reply="unknown")]))
    r = await second.resume(run_id)
    # the confirmed write is neither lost nor run again: its outcome is unknown, and said so
    assert r.turn is not None and r.turn.turn_id == "T2"
    assert outcomes(r.turn) == [("submit_request@1", "failed", "EFFECT_UNCERTAIN")]
    assert EFFECTS == ["broken screen"] and RUNS["submit"] == 2


async def test_the_first_turn_retried_through_run_with_its_run_and_turn_ids_is_replayed(
        opener: Callable[[], Any]) -> None:
    model = ScriptedModel([proposal(it("search_services", query="laptop")), proposal(reply="found")])
    agent, _ = make_agent(opener(), model)
    r = await agent.run("laptop", ctx=RunContext(run_id="conv-1"), turn_id="T1")
    counts = (model.calls, Counter(RUNS))
    assert r.turn is not None and not r.turn.replayed
    # a client retrying the first message (its answer was lost), in the same or another process
    for retrier in (agent, make_agent(opener(), ScriptedModel([]))[0]):
        again = await retrier.run("laptop", ctx=RunContext(run_id="conv-1"), turn_id="T1")
        assert again.turn is not None and again.turn.replayed and again.run_id == "conv-1"
        assert again.turn.executions == r.turn.executions and again.output == r.output
        assert (model.calls, Counter(RUNS)) == counts


async def test_an_interrupted_first_turn_runs_again_and_an_answer_is_refused_until_then() -> None:
    from seamkit.errors import RunNotResumable

    store = MemoryStore()
    answering = asyncio.Event()

    def slow(request: ChatRequest) -> ScriptedTurn:
        answering.set()
        return ScriptedTurn(proposal(reply="never"), delay=60)

    agent, _ = make_agent(store, ScriptedModel([slow]))
    task = asyncio.ensure_future(agent.run("laptop", ctx=RunContext(run_id="conv-2"), turn_id="T1"))
    await asyncio.wait_for(answering.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    model = ScriptedModel([proposal(it("search_services", query="laptop")), proposal(reply="found")])
    again, _ = make_agent(store, model)
    with pytest.raises(RunNotResumable):
        await again.resume("conv-2", answer="something else", turn_id="T2")
    assert model.calls == 0
    r = await again.resume("conv-2")
    assert r.turn is not None and r.turn.turn_id == "T1" and outcomes(r.turn) == [
        ("search_services@1", "completed", None)]
    status, ks = await kernel_of(store, "conv-2")
    assert status == "done" and ks.turns == ("T1",) and ks.turn is None and model.calls == 2


async def test_a_turns_events_come_in_order_with_their_kinds() -> None:
    model = ScriptedModel([proposal(it("search_services", query="laptop"), it("nope")), proposal(reply="found")])
    agent, events = make_agent(MemoryStore(), model)
    await agent.run("laptop")
    kinds = [e.kind if e.kind != "capability" else f"capability:{e.data['event']}" for e in events.seen]
    assert kinds == ["run_started", "model_result", "capability:planned", "capability:planned",
                     "capability:finished", "model_result", "text", "run_finished"]
    assert [(d.action, d.code) for d in events.capability("planned")] == [
        ("execute", None), ("reject", "CAPABILITY_NOT_REGISTERED")]


async def test_streaming_a_turn_yields_the_capability_events_and_the_result_last() -> None:
    model = ScriptedModel([proposal(it("search_services", query="laptop")), proposal(reply="found")])
    agent = Agent(model, capabilities=DESK, checkpointer=Checkpointer(MemoryStore()))
    seen = [e async for e in agent.stream("laptop", turn_id="T1")]
    assert [e.data["event"] for e in seen if e.kind == "capability"] == ["planned", "finished"]
    assert seen[-1].kind == "run_finished"
    result = seen[-1].data["result"]
    assert result.turn.turn_id == "T1" and outcomes(result.turn) == [("search_services@1", "completed", None)]
    assert RUNS == Counter({"search": 1}) and model.calls == 2


async def test_a_write_proposed_twice_in_a_step_waits_once() -> None:
    store = MemoryStore()
    model = ScriptedModel([proposal(it("search_services", query="laptop"), it("submit_request", summary="s"),
                                    it("submit_request", summary="s")), proposal()])
    agent, _ = make_agent(store, model)
    r = await agent.run("file it")
    assert r.turn is not None and [(d.action, d.code) for d in r.turn.dispositions] == [
        ("execute", None), ("execute", None), ("reject", "DUPLICATE_INTENTION")]
    _, ks = await kernel_of(store, r.run_id)
    assert len(ks.agenda) == 1 and len(ks.interactions) == 1 and RUNS["submit"] == 0


@pytest.mark.parametrize(("text", "plain"), [
    ("yes", "yes"), ("Yes, go ahead.", "yes"), ("ok", "yes"), ("Sure!", "yes"), ("okay, do it", "yes"),
    ("yes please", "yes"), ("go ahead", "yes"),
    ("no", "no"), ("No.", "no"), ("no thanks", "no"), ("nope", "no"), ("no, cancel it", "no"), ("stop", "no"),
    ("don't", "no"),
    # not plain: the model's confirmation field decides
    ("No problem", None), ("no worries, go ahead", None), ("don't worry, do it", None), ("No wait, yes", None),
    ("Yes, no problem", None), ("yes but use the other one", None), ("not now", None), ("", None),
    # a question is not an answer
    ("yes?", None), ("ok?", None), ("no?", None), ("Sure\uff1f", None),
])
def test_only_a_plain_yes_or_no_is_taken_without_the_model(text: str, plain: str | None) -> None:
    assert classify_answer(text) == plain


async def test_no_problem_is_not_a_no() -> None:
    store = MemoryStore()
    run_id, _ = await _await_confirmation(store)
    model = ScriptedModel([proposal(confirmation="yes"), proposal(reply="filed")])
    other, _ = make_agent(store, model)
    r = await other.resume(run_id, answer="No problem", turn_id="T2")
    # not a no; not the person's plain yes either (the model's yes is no consent): still open
    assert outcomes(r.turn) == [] and EFFECTS == [] and model.calls == 1
    assert r.turn is not None and [i.kind for i in r.turn.interactions] == ["confirmation"]


async def test_a_plain_answer_wins_over_the_models_confirmation_field() -> None:
    store = MemoryStore()
    run_id, _ = await _await_confirmation(store)
    model = ScriptedModel([proposal(confirmation="yes", reply="ok")])
    other, _ = make_agent(store, model)
    r = await other.resume(run_id, answer="No.", turn_id="T2")
    assert outcomes(r.turn) == [("submit_request@1", "declined", "CONFIRMATION_DECLINED")]
    assert RUNS["submit"] == 0 and EFFECTS == []


async def test_a_failed_dependency_provider_skips_the_consumer() -> None:
    async def status(ctx: CapabilityContext, inp: User) -> NeedsDependency:
        RUNS["status"] += 1
        return NeedsDependency("account@1", "login", {"user": inp.user})

    async def login(ctx: CapabilityContext, inp: User) -> Failed:
        RUNS["login"] += 1
        return Failed("LOGIN_FAILED", "no such user")

    compiled = compile_agent([Capability("status", 1, "status", status, input=User, effect="read"),
                              Capability("login", 1, "login", login, input=User, provides=("account@1",),
                                         effect="read")])
    agent, _ = make_agent(MemoryStore(), ScriptedModel([proposal(it("status", user="u")), proposal()]), compiled)
    r = await agent.run("status")
    assert outcomes(r.turn) == [("login@1", "failed", "LOGIN_FAILED"),
                                ("status@1", "skipped", "DEPENDENCY_NOT_COMPLETED")]
    assert RUNS == Counter({"status": 1, "login": 1}) and r.stop_reason == "completed"


async def test_the_model_is_told_the_codes_of_the_intentions_that_did_not_run() -> None:
    model = ScriptedModel([proposal(it("search_services", query="laptop"), it("search_services", query="secret"),
                                    it("nope")), proposal(reply="found")])
    agent, _ = make_agent(MemoryStore(), model,
                          capability_policy=lambda c, inp, facts: "no" if inp.get("query") == "secret" else None)
    r = await agent.run("laptop")
    assert r.turn is not None and sorted(d.code or "" for d in r.turn.dispositions) == [
        "", "CAPABILITY_NOT_REGISTERED", "POLICY_DENIED"]
    told = model.requests[1].messages[-1].text
    assert "POLICY_DENIED" in told and "CAPABILITY_NOT_REGISTERED" in told


async def test_another_os_process_over_one_sqlite_file_replays_and_never_repeats_the_write(tmp_path: Path) -> None:
    db = tmp_path / "kernel.db"
    script = textwrap.dedent(f"""
        import asyncio, json, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import test_kernel_turns as k
        from seamkit_sqlite.store import SqliteStore

        async def main():
            store = SqliteStore({str(db)!r})
            run_id, _ = await k._await_confirmation(store)
            agent, _ = k.make_agent(store, k.ScriptedModel([k.proposal(reply="done")]))
            r = await agent.resume(run_id, answer="yes", turn_id="T2")
            print(json.dumps({{"run_id": run_id, "effects": k.EFFECTS, "output": r.turn.executions[0].output}}))
            await store.aclose()

        asyncio.run(main())
    """)
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", script, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    there = json.loads(out.decode().strip().splitlines()[-1])
    assert there["effects"] == ["broken screen"]
    store = SqliteStore(db)
    try:
        replayer, _ = make_agent(store, ScriptedModel([]))
        again = await replayer.resume(there["run_id"], answer="yes", turn_id="T2")
        assert again.turn is not None and again.turn.replayed and again.turn.executions[0].output == there["output"]
        model = ScriptedModel([proposal(it("submit_request", summary="broken screen")), proposal(reply="again?"),
                               proposal(reply="done")])
        here, _ = make_agent(store, model)
        await here.resume(there["run_id"], answer="file it again", turn_id="T3")
        r = await here.resume(there["run_id"], answer="yes", turn_id="T4")
        assert outcomes(r.turn) == [("submit_request@1", "completed", None)]
        assert r.turn is not None and r.turn.executions[0].output == there["output"]
        assert EFFECTS == [] and RUNS == Counter({"submit": 1})
    finally:
        await store.aclose()


async def test_a_reply_that_is_not_a_proposal_ends_the_turn_with_a_warning_and_runs_nothing() -> None:
    model = ScriptedModel(["Sure, I can help with that."])
    agent, _ = make_agent(MemoryStore(), model)
    r = await agent.run("hello")
    assert r.output == "Sure, I can help with that." and r.turn is not None and r.turn.executions == ()
    assert r.warnings and model.calls == 1 and sum(RUNS.values()) == 0 and r.stop_reason == "completed"


async def test_the_same_intention_proposed_again_in_a_turn_is_a_duplicate_and_ends_the_turn() -> None:
    model = ScriptedModel([proposal(it("search_services", query="laptop"))], repeat=True)
    agent, _ = make_agent(MemoryStore(), model, max_steps=3)
    r = await agent.run("laptop")
    assert r.turn is not None and model.calls == 2 and RUNS["search"] == 1
    assert [d.code for d in r.turn.dispositions] == [None, "DUPLICATE_INTENTION"]
    assert not any("max_steps" in w for w in r.warnings)


async def test_a_turn_stops_at_max_steps_model_calls() -> None:
    n = iter(range(100))  # a new query each step: the same intention again would be a duplicate
    model = ScriptedModel([lambda request: proposal(it("search_services", query=f"laptop {next(n)}"))], repeat=True)
    agent, _ = make_agent(MemoryStore(), model, max_steps=3)
    r = await agent.run("laptop")
    assert model.calls == 3 and RUNS["search"] == 3 and r.turn is not None and r.turn.steps == 3
    assert any("max_steps" in w for w in r.warnings)


# --------------------------------------------------------------------------- an outside tester's findings


async def test_a_turn_record_holding_a_secret_is_never_stored() -> None:
    store = MemoryStore()
    secret = "sk-live-SECRET-0123456789"
    model = ScriptedModel([proposal(it("search_services", query=secret)), proposal(reply="found")])
    agent = Agent(model, capabilities=DESK, checkpointer=Checkpointer(store, secrets=[secret]))
    r = await agent.run("find it", turn_id="T1")
    assert r.turn is not None and any("was not stored" in w for w in r.warnings)
    assert await store.get(Scope(), turn_key(r.run_id, "T1")) is None
    for key in list(getattr(store, "_data", {}) or ()):  # nothing in the store holds it
        assert secret not in str(await store.get(Scope(), key))


async def test_a_proposal_nested_deeper_than_python_allows_is_not_a_proposal() -> None:
    deep = '{"intentions": [' + "[" * 5000 + "]" * 5000 + '], "reply": "x"}'
    model = ScriptedModel([deep])
    agent, _ = make_agent(MemoryStore(), model)
    r = await agent.run("hello")
    assert r.turn is not None and r.turn.executions == () and r.stop_reason == "completed"
    assert any("not a JSON object" in w for w in r.warnings)


def _one(execute: Any, **kw: Any) -> Any:
    return compile_agent([Capability("odd", 1, "odd", execute, input=Query, **kw)])


async def test_results_a_turn_cannot_store_or_use_are_typed_failures_not_exceptions() -> None:
    async def dict_fact(ctx: CapabilityContext, inp: Query) -> Completed:
        return Completed(facts=({"type": "x@1"},))  # type: ignore[arg-type]

    async def unstorable(ctx: CapabilityContext, inp: Query) -> Completed:
        return Completed({"handle": object()})

    for execute, code in ((dict_fact, "CAPABILITY_ERROR"), (unstorable, "INVALID_RESULT")):
        model = ScriptedModel([proposal(it("odd", query="q")), proposal()])
        agent, _ = make_agent(MemoryStore(), model, _one(execute))
        r = await agent.run("go")
        assert outcomes(r.turn) == [("odd@1", "failed", code)] and r.stop_reason == "completed"


async def test_a_policy_that_raises_refuses_with_a_typed_code() -> None:
    def policy(c: Capability, inp: Any, facts: Any) -> str | None:
        raise ZeroDivisionError("secret detail")

    model = ScriptedModel([proposal(it("search_services", query="q")), proposal()])
    agent, _ = make_agent(MemoryStore(), model, capability_policy=policy)
    r = await agent.run("go")
    assert r.turn is not None and [(d.action, d.code) for d in r.turn.dispositions] == [("reject", "POLICY_ERROR")]
    assert "secret detail" not in r.turn.dispositions[0].message and RUNS["search"] == 0


async def test_a_fact_established_again_as_it_was_keeps_what_was_derived_from_it(opener: Callable[[], Any]) -> None:
    store = opener()
    run_id, _ = await _await_confirmation(store)
    agent, _ = make_agent(store, ScriptedModel([proposal(it("search_services", query="laptop")), proposal()],
                                               repeat=True))
    r = await agent.resume(run_id, answer="yes", turn_id="T2")
    assert ("submit_request@1", "completed", None) in outcomes(r.turn)
    _, ks = await kernel_of(store, run_id)
    assert "request.ticket@1" in ks.facts  # the same search again changed nothing
    r = await agent.resume(run_id, answer="search again", turn_id="T3")
    assert ("search_services@1", "completed", None) in outcomes(r.turn)
    assert r.turn is not None and r.turn.facts_removed == ()
    _, ks = await kernel_of(store, run_id)
    assert "request.ticket@1" in ks.facts and len(EFFECTS) == 1


async def test_a_capability_hiding_its_uncertain_effect_still_fails_uncertain() -> None:
    class Key(BaseModel):
        key: str

    async def hide(ctx: CapabilityContext, inp: Key) -> Completed:
        async def op() -> None:
            raise RuntimeError("the line dropped")

        try:
            await ctx.run_effect(inp.key, op)
        except Exception:
            pass  # swallowed: the capability claims it went fine
        return Completed({"ok": True})

    compiled = compile_agent([Capability("hide", 1, "hide", hide, input=Key, effect="write",
                                         confirmation="capability")])
    model = ScriptedModel([proposal(it("hide", key="k")), proposal()])
    agent, _ = make_agent(MemoryStore(), model, compiled)
    r = await agent.run("go")
    assert outcomes(r.turn) == [("hide@1", "failed", "EFFECT_UNCERTAIN")]


async def test_an_effect_not_applied_that_escapes_execute_is_its_own_code() -> None:
    class Key(BaseModel):
        key: str

    async def escape(ctx: CapabilityContext, inp: Key) -> Completed:
        async def op() -> None:
            raise EffectNotApplied("declined")

        await ctx.run_effect(inp.key, op)
        return Completed()

    compiled = compile_agent([Capability("esc", 1, "esc", escape, input=Key, effect="write",
                                         confirmation="capability")])
    agent, _ = make_agent(MemoryStore(), ScriptedModel([proposal(it("esc", key="k")), proposal()]), compiled)
    r = await agent.run("go")
    assert outcomes(r.turn) == [("esc@1", "failed", "EFFECT_NOT_APPLIED")]


async def test_a_proposal_is_bounded_in_intentions_and_input_size() -> None:
    from seamkit.capabilities._planner import MAX_INPUT_CHARS, MAX_INTENTIONS

    many = [it("search_services", query=f"q{i}") for i in range(MAX_INTENTIONS + 50)]
    big = it("search_services", query="x" * (MAX_INPUT_CHARS + 1))
    model = ScriptedModel([proposal(big, *many), proposal()])
    agent, _ = make_agent(MemoryStore(), model)
    r = await agent.run("go")
    assert r.turn is not None
    codes = [d.code for d in r.turn.dispositions]
    assert codes.count("INVALID_INTENTION") == 2  # the big input, and "the rest were not planned"
    assert RUNS["search"] == MAX_INTENTIONS - 1


async def test_run_on_an_existing_conversation_says_to_resume() -> None:
    store = MemoryStore()
    run_id, _ = await _await_confirmation(store)
    agent, _ = make_agent(store, ScriptedModel([proposal()]))
    for turn_id in ("T9", None):
        with pytest.raises(RunNotResumable, match="take the next turn with resume"):
            await agent.run("again", ctx=RunContext(run_id=run_id), turn_id=turn_id)


async def test_needs_dependency_on_a_known_fact_or_on_itself_is_refused_at_once() -> None:
    async def known(ctx: CapabilityContext, inp: User) -> NeedsDependency:
        RUNS["known"] += 1
        return NeedsDependency("account@1", "login", {"user": inp.user})

    async def selfish(ctx: CapabilityContext, inp: User) -> NeedsDependency:
        RUNS["selfish"] += 1
        return NeedsDependency("me@1", "selfish", {"user": inp.user})

    async def login(ctx: CapabilityContext, inp: User) -> Completed:
        RUNS["login"] += 1
        return Completed(facts=(Fact("account@1", inp.user),))

    compiled = compile_agent([
        Capability("known", 1, "k", known, input=User, requires=("account@1",), effect="read"),
        Capability("login", 1, "l", login, input=User, provides=("account@1",), effect="read"),
        Capability("selfish", 1, "s", selfish, input=User, provides=("me@1",), effect="read"),
    ])
    model = ScriptedModel([proposal(it("login", user="u"), it("known", user="u"), it("selfish", user="u")),
                           proposal()])
    agent, _ = make_agent(MemoryStore(), model, compiled)
    r = await agent.run("go")
    assert sorted(outcomes(r.turn)) == [("known@1", "failed", "INVALID_DEPENDENCY"),
                                        ("login@1", "completed", None),
                                        ("selfish@1", "failed", "INVALID_DEPENDENCY")]
    assert RUNS == Counter({"known": 1, "login": 1, "selfish": 1})


def test_declarations_and_results_refuse_what_would_fail_later() -> None:
    def sync_execute(ctx: Any, inp: Any) -> Completed:
        return Completed()

    with pytest.raises(TypeError, match="async"):
        Capability("s", 1, "s", sync_execute, input=Query)
    with pytest.raises(ValueError, match="non-blank"):
        Failed("", "")

    class Callable_:
        async def __call__(self, ctx: Any, inp: Any) -> Completed:
            return Completed()

    assert Capability("c", 1, "c", Callable_(), input=Query).id == "c"  # an object with an async __call__


# --------------------------------------------------------------------------- a second outside pass


@pytest.mark.parametrize("depth", [65, 200, 400])
async def test_a_proposal_input_nested_deeper_than_the_limit_is_an_invalid_intention(depth: int) -> None:
    from seamkit.capabilities._planner import MAX_INPUT_DEPTH

    deep = '{"intentions": [{"capability": "search_services", "input": {"query": ' + "[" * (depth - 1) + '"x"' \
        + "]" * (depth - 1) + '}}], "reply": "x"}'  # written out: json.dumps itself recurses
    model = ScriptedModel([deep, proposal(reply="sorry")])
    agent, _ = make_agent(MemoryStore(), model)
    r = await agent.run("go")
    assert r.turn is not None and RUNS["search"] == 0
    [d] = [d for d in r.turn.dispositions if d.code == "INVALID_INTENTION"]
    assert f"deeper than {MAX_INPUT_DEPTH}" in d.message
    # just under the limit is an ordinary (schema-invalid) input, not a malformed one
    shallow: Any = "x"
    for _ in range(MAX_INPUT_DEPTH - 2):
        shallow = [shallow]
    agent2, _ = make_agent(MemoryStore(), ScriptedModel([proposal(it("search_services", query=shallow)), proposal()]))
    r2 = await agent2.run("go")
    assert r2.turn is not None and "INVALID_INTENTION" not in r2.turn.codes()


async def test_only_the_conversations_own_uncertain_effect_is_settled_and_then_it_is_no_longer_open() -> None:
    store = MemoryStore()
    cp = Checkpointer(store)
    agent, _ = make_agent(store, ScriptedModel([proposal(it("act", key="k1", mode="raise")), proposal(reply="hm")]))
    r = await agent.run("act", turn_id="T1")
    other, _ = make_agent(store, ScriptedModel([proposal(it("act", key="k2", mode="raise")), proposal(reply="hm")]))
    r_other = await other.run("act", turn_id="T1")
    assert outcomes(r_other.turn) == [("act@1", "failed", "EFFECT_UNCERTAIN")]
    _, ks = await kernel_of(store, r.run_id)
    assert ks.uncertain == ("capability:act:k1",)
    # the ledger is the tenant's: another conversation's key is not settled through this run
    with pytest.raises(ValueError, match=r"no capability effect 'capability:act:k2'.*unsettled: capability:act:k1"):
        await cp.settle_effect(r.run_id, "capability:act:k2", applied=False)
    with pytest.raises(ValueError, match="no capability effect 'capability:act:never'"):
        await cp.settle_effect(r.run_id, "capability:act:never", applied=True)
    settled = await cp.settle_effect(r.run_id, "capability:act:k1", applied=True, result='"done-k1"')
    assert settled.settled == "applied"
    _, ks = await kernel_of(store, r.run_id)
    assert ks.uncertain == ()
    with pytest.raises(ValueError, match="unsettled: none"):
        await cp.settle_effect(r.run_id, "capability:act:k1", applied=True)
    again, _ = make_agent(store, ScriptedModel([proposal(it("act", key="k1", mode="ok")), proposal(reply="ok")]))
    r2 = await again.resume(r.run_id, answer="try again", turn_id="T2")
    assert outcomes(r2.turn) == [("act@1", "completed", None)]
    assert r2.turn is not None and r2.turn.executions[0].output == {"done": "done-k1"}
    assert EFFECTS == ["k1", "k2"]  # settled as applied: not run again


class _Broken(Exception):
    pass


async def test_a_failed_turn_runs_again_from_its_start_with_allow_finished() -> None:
    store = MemoryStore()
    calls = iter(range(10))

    def step(request: ChatRequest) -> str:
        n = next(calls)
        if n == 0:
            return proposal(it("search_services", query="laptop"))
        if n == 1:
            raise _Broken("the provider fell over")
        return proposal(it("search_services", query="laptop"), reply="found it") if n == 2 else proposal(reply="done")

    agent, _ = make_agent(store, ScriptedModel([step], repeat=True))
    with pytest.raises(ProviderError, match="the provider fell over"):
        await agent.run("find a laptop service", turn_id="T1")
    snap = await Checkpointer(store).latest(next(iter(await _run_ids(store))))
    assert snap is not None and snap.status == "failed"
    _, ks = await kernel_of(store, snap.run_id)
    # saved as the turn began: nothing it did before failing is half-kept
    assert ks.turn is not None and ks.turn[0] == "T1" and dict(ks.facts) == {} and ks.turns == ()
    with pytest.raises(RunNotResumable, match="is failed"):
        await agent.resume(snap.run_id)
    r = await agent.resume(snap.run_id, allow_finished=True)
    assert r.stop_reason == "completed" and r.turn is not None and r.turn.turn_id == "T1"
    assert outcomes(r.turn) == [("search_services@1", "completed", None)]
    _, ks = await kernel_of(store, snap.run_id)
    assert ks.turns == ("T1",) and ks.turn is None and "service.match@1" in ks.facts
    assert sum(1 for m in r.transcript if m.role == "user") == 1  # the message is not logged twice


async def _run_ids(store: Any) -> list[str]:
    return [i.run_id for i in await Checkpointer(store).list_runs()]


async def test_a_question_asked_again_in_the_corrective_step_is_one_interaction() -> None:
    bad = proposal(it("search_services", wrong="x"), reply="what service?")
    agent, _ = make_agent(MemoryStore(), ScriptedModel([bad, bad]))
    r = await agent.run("help")
    assert r.turn is not None and r.turn.steps == 2
    assert [i.kind for i in r.turn.interactions] == ["input"]


async def test_max_steps_one_warns_when_the_model_had_no_step_to_correct_a_refusal() -> None:
    agent, _ = make_agent(MemoryStore(), ScriptedModel([proposal(it("nope"))]), max_steps=1)
    r = await agent.run("help")
    assert r.turn is not None and r.turn.codes() == ("CAPABILITY_NOT_REGISTERED",)
    assert any("max_steps (1)" in w for w in r.warnings)


async def test_each_turn_is_a_run_call_through_run_middlewares() -> None:
    from seamkit._middleware import Call, Next, middleware
    from seamkit.values import RunRequest

    seen: list[tuple[bool, str]] = []

    @middleware(kinds=["run"])
    async def look(call: Call, nxt: Next) -> AsyncIterator[Any]:
        assert isinstance(call.request, RunRequest)
        async for item in nxt(call):
            seen.append((call.request.resumed, item.stop_reason))
            yield item

    store = MemoryStore()
    model = ScriptedModel([proposal(it("submit_request", summary="broken screen"),
                                    it("search_services", query="laptop")),
                           proposal(reply=f"Shall I submit? [{EVIDENCE.id}]")])
    agent, _ = make_agent(store, model, middlewares=[look])
    first = await agent.run("my laptop screen is broken", turn_id="T1")
    model2 = ScriptedModel([proposal(reply="done")])
    other, _ = make_agent(store, model2, middlewares=[look])
    await other.resume(first.run_id, answer="Yes, go ahead.", turn_id="T2")
    assert seen == [(False, "suspended"), (True, "completed")]
