"""The planner (``seamkit.capabilities._planner``): one disposition per intention with its code,
the proposal parser, selection and what the model reads; and the same rules through full turns of
an agent (interactions, events, capability and model call counts)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from seamkit._agent.agent import Agent
from seamkit._durability.checkpointer import Checkpointer
from seamkit.capabilities import Capability, Completed, Fact, Guidance, compile_agent
from seamkit.capabilities._planner import catalogue, parse_proposal, plan, proposal_schema, select
from seamkit.capabilities._state import Intention
from seamkit.testing._memory_store import MemoryStore
from seamkit.testing._models import ScriptedModel
from seamkit.values import StreamEvent

RUNS: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def _clear() -> None:
    RUNS.clear()


class Query(BaseModel):
    query: str = Field(min_length=1)


class Pick(BaseModel):
    item: str


def _done(cid: str, *facts: Fact) -> Any:
    async def execute(ctx: Any, inp: Any) -> Completed:
        RUNS[cid] += 1
        return Completed({"ran": cid}, facts=facts)

    return execute


SEARCH = Capability("search", 1, "Search the catalogue", _done("search", Fact("catalog.match@1", {"id": "m1"})),
                    input=Query, provides=("catalog.match@1",), effect="read")
LOOKUP = Capability("lookup", 1, "Look up a catalogue entry", _done("lookup"), input=Query, effect="read")
CHOOSE = Capability("choose", 1, "Choose a match", _done("choose", Fact("choice@1", {"item": "m1"})),
                    input=Pick, requires=("catalog.match@1",), provides=("choice@1",), effect="read")
DETAILS = Capability("details", 1, "Details of the match", _done("details"), input=Pick,
                     requires=("catalog.match@1",), effect="read")
AGENT = compile_agent([SEARCH, LOOKUP, CHOOSE, DETAILS])


def proposal(*intentions: Mapping[str, Any], reply: str = "ok", **extra: Any) -> str:
    return json.dumps({"intentions": list(intentions), "reply": reply, **extra})


def it(capability: str, **inp: Any) -> dict[str, Any]:
    return {"capability": capability, "input": inp}


def agent_with(model: ScriptedModel, compiled: Any = AGENT, **kw: Any) -> tuple[Agent, list[StreamEvent]]:
    events: list[StreamEvent] = []

    class Sink:
        def on_event(self, event: StreamEvent) -> None:
            events.append(event)

    return Agent(model, capabilities=compiled, checkpointer=Checkpointer(MemoryStore()), observers=(Sink(),),
                 **kw), events


def actions(dispositions: Any) -> list[tuple[str, str | None]]:
    return [(d.action, d.code) for d in dispositions]


# --------------------------------------------------------------------------- plan(), directly


def test_each_kind_of_intention_gets_its_disposition_and_code() -> None:
    out = plan(AGENT, [
        Intention("search", {"query": "laptop"}),
        Intention("nope", {}),
        Intention("lookup", {"query": ""}),
        Intention("lookup", {"query": "x"}, alternatives=("search", "unknown")),
        Intention("details", {"item": "m1"}),
        Intention("search", {"query": "laptop"}),
    ], {})
    assert actions(out) == [
        ("execute", None),
        ("reject", "CAPABILITY_NOT_REGISTERED"),
        ("clarify", "INVALID_CAPABILITY_INPUT"),
        ("clarify", "AMBIGUOUS_INTENTION"),
        ("execute", None),  # its fact comes from the search executed in the same step
        ("reject", "DUPLICATE_INTENTION"),
    ]
    # the options are the proposed capability and the registered alternatives, nothing unknown
    assert out[3].options == ("lookup", "search")


def test_a_missing_fact_defers_with_the_fact_named() -> None:
    out = plan(AGENT, [Intention("details", {"item": "m1"}), Intention("choose", {"item": "m1"})], {})
    assert actions(out) == [("defer", "FACT_REQUIRED"), ("defer", "FACT_REQUIRED")]
    assert [d.fact for d in out] == ["catalog.match@1", "catalog.match@1"]
    known = {"catalog.match@1": Fact("catalog.match@1", {"id": "m1"})}
    assert actions(plan(AGENT, [Intention("details", {"item": "m1"})], known)) == [("execute", None)]


def test_a_provider_proposed_after_its_consumer_still_satisfies_it() -> None:
    out = plan(AGENT, [Intention("choose", {"item": "m1"}), Intention("search", {"query": "q"})], {})
    assert actions(out) == [("execute", None), ("execute", None)]


def test_a_provider_that_is_not_executable_does_not_satisfy_its_consumer() -> None:
    out = plan(AGENT, [Intention("choose", {"item": "m1"}), Intention("search", {"query": ""})], {})
    assert actions(out) == [("defer", "FACT_REQUIRED"), ("clarify", "INVALID_CAPABILITY_INPUT")]
    denied = plan(AGENT, [Intention("choose", {"item": "m1"}), Intention("search", {"query": "q"})], {},
                  policy=lambda c, inp, facts: "no searching" if c.id == "search" else None)
    assert actions(denied) == [("defer", "FACT_REQUIRED"), ("reject", "POLICY_DENIED")]


def test_the_policy_sees_capability_input_and_facts_and_only_executable_intentions() -> None:
    seen: list[tuple[str, dict[str, Any], list[str]]] = []

    def policy(c: Capability, inp: Mapping[str, Any], facts: Mapping[str, Fact]) -> str | None:
        seen.append((c.id, dict(inp), sorted(facts)))
        return "too broad" if inp.get("query") == "*" else None

    out = plan(AGENT, [Intention("search", {"query": "*"}), Intention("lookup", {"query": "a"}),
                       Intention("nope"), Intention("details", {"item": "x"})], {}, policy=policy)
    assert actions(out) == [("reject", "POLICY_DENIED"), ("execute", None), ("reject", "CAPABILITY_NOT_REGISTERED"),
                            ("defer", "FACT_REQUIRED")]
    assert out[0].message == "too broad"
    assert sorted(s[0] for s in seen) == ["lookup", "search"]


# --------------------------------------------------------------------------- parse_proposal()


def test_malformed_intentions_are_listed_and_the_rest_kept() -> None:
    p = parse_proposal(json.dumps({"intentions": [it("search", query="a"), "search", {"input": {}},
                                                  {"capability": "lookup", "input": [1]}],
                                   "select": ["x", 3], "confirmation": "maybe", "reply": "r"}))
    assert [i.capability for i in p.intentions] == ["search"]
    assert [i for i, _ in p.malformed] == [1, 2, 3]
    assert p.select == ("x",) and p.confirmation is None and p.reply == "r" and p.problem is None
    assert parse_proposal('{"intentions": 3}').problem is not None
    assert parse_proposal("just text").problem is not None and parse_proposal("just text").reply == "just text"
    # a model without constrained decoding wraps the object in prose or a fence
    fenced = parse_proposal('Here:\n```json\n{"intentions": [], "confirmation": "yes", "reply": "r"}\n```')
    assert fenced.problem is None and fenced.confirmation == "yes"


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                 max_size=4),
                     max_leaves=12)
_intention = st.fixed_dictionaries(
    {"capability": st.text(min_size=1, max_size=10),
     "input": st.dictionaries(st.text(max_size=6), _json, max_size=3)},
    optional={"alternatives": st.lists(st.text(min_size=1, max_size=6), max_size=3)},
)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=200), _json.map(json.dumps),
                 st.dictionaries(st.sampled_from(["intentions", "select", "confirmation", "reply", "x"]), _json)
                 .map(json.dumps)))
def test_parse_proposal_never_raises(text: str) -> None:
    p = parse_proposal(text)
    assert p.confirmation in (None, "yes", "no")
    assert isinstance(p.reply, str)
    assert all(isinstance(i, Intention) for i in p.intentions)


@settings(max_examples=200, deadline=None)
@given(st.lists(_intention, max_size=4), st.lists(st.text(max_size=6), max_size=3),
       st.sampled_from(["yes", "no", "none"]), st.text(max_size=40))
def test_parse_proposal_round_trips_well_formed_proposals(intentions: list[dict[str, Any]], chosen: list[str],
                                                          confirmation: str, reply: str) -> None:
    text = json.dumps({"intentions": intentions, "select": chosen, "confirmation": confirmation, "reply": reply})
    p = parse_proposal(text)
    assert p.problem is None and p.malformed == ()
    assert [(i.capability, json.loads(json.dumps(dict(i.input))), list(i.alternatives)) for i in p.intentions] == [
        (d["capability"], d["input"], d.get("alternatives", [])) for d in intentions]
    assert list(p.select) == chosen and p.reply == reply
    assert p.confirmation == (None if confirmation == "none" else confirmation)


# --------------------------------------------------------------------------- through turns


async def test_two_intentions_missing_one_fact_ask_exactly_one_input_interaction() -> None:
    model = ScriptedModel([proposal(it("details", item="a"), it("choose", item="a")), proposal(reply="which one?")])
    agent, events = agent_with(model)
    r = await agent.run("tell me about a", turn_id="T1")
    turn = r.turn
    assert turn is not None
    assert actions(turn.dispositions) == [("defer", "FACT_REQUIRED"), ("defer", "FACT_REQUIRED")]
    asked = [i for i in turn.interactions if i.kind == "input"]
    assert len(asked) == 1 and asked[0].fact == "catalog.match@1"
    # nothing ran: the model is told why once, and writes its reply knowing it
    assert r.stop_reason == "suspended" and model.calls == 2 and sum(RUNS.values()) == 0
    assert "FACT_REQUIRED" in model.requests[1].messages[-1].text and r.output == "which one?"
    planned = [e.data["disposition"].action for e in events if e.kind == "capability" and e.data["event"] == "planned"]
    assert planned == ["defer", "defer"]


async def test_an_ambiguous_intention_asks_a_choice_with_the_options() -> None:
    model = ScriptedModel([proposal({"capability": "search", "input": {"query": "x"}, "alternatives": ["lookup"]}),
                           proposal(reply="search or lookup?")])
    agent, _ = agent_with(model)
    r = await agent.run("find x")
    assert r.turn is not None
    assert actions(r.turn.dispositions) == [("clarify", "AMBIGUOUS_INTENTION")]
    assert [(i.kind, i.options) for i in r.turn.interactions] == [("choice", ("search", "lookup"))]
    assert r.stop_reason == "suspended" and sum(RUNS.values()) == 0


async def test_invalid_input_unknown_capability_and_malformed_intentions_run_nothing() -> None:
    model = ScriptedModel([json.dumps({"intentions": [it("search", query=""), it("refund", order="1"),
                                                      {"capability": 5}], "reply": "?"}), proposal(reply="sorry")])
    agent, _ = agent_with(model)
    r = await agent.run("do things")
    assert r.turn is not None
    assert sorted(d.code or "" for d in r.turn.dispositions) == [
        "CAPABILITY_NOT_REGISTERED", "INVALID_CAPABILITY_INPUT", "INVALID_INTENTION"]
    assert r.turn.executions == () and sum(RUNS.values()) == 0 and model.calls == 2
    told = model.requests[1].messages[-1].text
    assert all(code in told for code in ("CAPABILITY_NOT_REGISTERED", "INVALID_CAPABILITY_INPUT", "INVALID_INTENTION"))
    # the input that did not validate is a question to the person, about that capability
    assert [(i.kind, i.capability) for i in r.turn.interactions] == [("input", "search")]
    assert r.stop_reason == "suspended" and r.output == "sorry"


async def test_a_corrected_input_runs_and_the_question_about_it_goes() -> None:
    model = ScriptedModel([proposal(it("search", query="")), proposal(it("search", query="laptop")),
                           proposal(reply="found")])
    agent, _ = agent_with(model)
    r = await agent.run("find a laptop")
    assert r.turn is not None
    assert actions(r.turn.dispositions) == [("clarify", "INVALID_CAPABILITY_INPUT"), ("execute", None)]
    assert RUNS == Counter({"search": 1}) and r.turn.interactions == () and r.stop_reason == "completed"
    assert model.calls == 3 and r.output == "found"


async def test_the_model_is_told_only_once_per_turn_when_nothing_runs() -> None:
    model = ScriptedModel([proposal(it("search", query=""))], repeat=True)
    agent, _ = agent_with(model, max_steps=5)
    r = await agent.run("find")
    assert r.turn is not None and model.calls == 2 and sum(RUNS.values()) == 0


async def test_the_agents_capability_policy_rejects_before_anything_runs() -> None:
    model = ScriptedModel([proposal(it("search", query="secret"), it("lookup", query="fine")), proposal()])
    agent, _ = agent_with(model, capability_policy=lambda c, inp, facts: "denied" if inp["query"] == "secret"
                          else None)
    r = await agent.run("look")
    assert r.turn is not None
    assert actions(r.turn.dispositions) == [("reject", "POLICY_DENIED"), ("execute", None)]
    assert RUNS == Counter({"lookup": 1})
    assert [(e.capability, e.outcome) for e in r.turn.executions] == [("lookup@1", "completed")]


async def test_a_provider_proposed_after_its_consumer_runs_first_in_the_turn() -> None:
    model = ScriptedModel([proposal(it("choose", item="m1"), it("search", query="q")), proposal()])
    agent, _ = agent_with(model)
    r = await agent.run("pick the laptop")
    assert r.turn is not None
    assert [(e.capability, e.outcome) for e in r.turn.executions] == [("search@1", "completed"),
                                                                       ("choose@1", "completed")]
    assert r.turn.facts_added == ("catalog.match@1", "choice@1")
    assert model.calls == 2 and RUNS == Counter({"search": 1, "choose": 1})


# --------------------------------------------------------------------------- selection


def _many(n: int) -> Any:
    caps = [Capability(f"op{i}", 1, f"operation number {i}", _done(f"op{i}"), input=Query, effect="read",
                       guidance=Guidance(when_to_use=f"guidance-{i}", examples=(f"topic{i} please",)))
            for i in range(n)]
    return compile_agent(caps)


def test_selection_shows_everything_under_the_limit_and_the_matches_over_it() -> None:
    small = _many(3)
    assert select(small, "anything", limit=6) == small.order
    big = _many(10)
    chosen = select(big, "topic3 and topic7", agenda=["op9"], asked=["op0", "unknown"], limit=6)
    assert set(chosen) == {"op0", "op3", "op7", "op9"}
    text = catalogue(big, {}, chosen)
    for i in range(10):
        assert f"- op{i}: operation number {i}" in text
        assert (f"guidance-{i}" in text) == (f"op{i}" in chosen)
    schema = proposal_schema(big, chosen)
    consts = {v["properties"]["capability"]["const"] for v in schema["properties"]["intentions"]["items"]["anyOf"]}
    assert consts == set(chosen)
    assert set(schema["properties"]["select"]["items"]["enum"]) == set(big.order)
    assert "confirmation" not in schema["properties"]
    assert proposal_schema(big, chosen, confirming=True)["required"][0] == "confirmation"


def test_the_proposal_schema_keeps_each_inputs_definitions_apart() -> None:
    class Inner(BaseModel):
        x: int

    class Outer(BaseModel):
        inner: Inner

    async def noop(ctx: Any, inp: Any) -> Completed:
        return Completed()

    compiled = compile_agent([Capability("a", 1, "A", noop, input=Outer, effect="read"),
                              Capability("b", 1, "B", noop, input=Outer, effect="read")])
    schema = proposal_schema(compiled, compiled.order)
    assert set(schema["$defs"]) == {"a__Inner", "b__Inner"}
    refs = json.dumps(schema["properties"]["intentions"])
    assert "#/$defs/a__Inner" in refs and "#/$defs/b__Inner" in refs and '"#/$defs/Inner"' not in refs


def test_the_catalogue_says_what_each_capability_still_needs() -> None:
    def line(text: str, cid: str) -> str:
        return next(x for x in text.splitlines() if x.startswith(f"- {cid}:"))

    before = catalogue(AGENT, {}, ())
    assert line(before, "search").endswith("[read; ready]")
    assert line(before, "choose").endswith("[read; needs catalog.match@1]")
    after = catalogue(AGENT, {"catalog.match@1": Fact("catalog.match@1", 1)}, ())
    assert line(after, "choose").endswith("[read; ready]")
