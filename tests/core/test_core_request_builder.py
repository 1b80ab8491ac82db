"""RequestBuilder / WorkingContext (seamkit._request) and their wiring into Agent and YAML."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict
from seamkit._agent.agent import Agent
from seamkit._agent.prompt import Prompt
from seamkit._compaction import CompactorPort, check_invariants, transcript_tokens, turn_units
from seamkit._durability.codec import dumps
from seamkit._grounding import MemoryItem, MemorySource, find_citations
from seamkit._hookspecs import hookimpl
from seamkit._plugins.registry import Registry
from seamkit._request import (
    GROUNDING_HEADER,
    SCHEMA_HEADER,
    BuiltRequest,
    ContextBudgetExceeded,
    PromptVariablesError,
    RequestBuilder,
    load_grounding,
)
from seamkit._runtime.context import RunContext
from seamkit._tools import tool
from seamkit.composition import build_agent, composition_json_schema, load_composition
from seamkit.errors import ConfigError, FailureClass, ProviderError
from seamkit.testing import MemoryStore, ScriptedModel
from seamkit.values import Message, Scope

# -- fixtures ---------------------------------------------------------------------------------


class Docs:
    """A grounding source: fixed items, or (``changing``) new ones on every call."""

    def __init__(self, *, changing: bool = False, inferred: bool = False) -> None:
        self.changing = changing
        self.inferred = inferred
        self.calls: list[tuple[str, Scope, int]] = []

    async def retrieve(self, query: str, *, scope: Scope, k: int = 5) -> Sequence[MemoryItem]:
        self.calls.append((query, scope, k))
        n = len(self.calls)
        items = [
            MemoryItem("seamkit installs with pip.", "docs/install.md#pip", 0.9, {"origin": "recorded"}),
            MemoryItem(f"version note {n if self.changing else 0}", f"docs/notes.md#{n if self.changing else 0}", 0.5),
        ]
        if self.inferred:
            items.append(MemoryItem("a model's guess", "memory/guess-1", 0.99, {"origin": "inferred"}))
        return items[:k]


@tool(side_effecting=False)
def lookup(word: str) -> str:
    """Looks a word up."""
    return f"{word}: found"


def five_turn_model(final: str = "done [s000000]") -> ScriptedModel:
    calls = [{"text": "", "tool_calls": [{"name": "lookup", "arguments": {"word": f"w{i}"}}]} for i in range(4)]
    return ScriptedModel([*calls, final])


def sid(source: str) -> str:
    return "s" + hashlib.sha256(source.encode()).hexdigest()[:6]


# -- the 5-turn conversation ------------------------------------------------------------------


async def test_prefix_bytes_identical_on_all_five_turns_by_default() -> None:
    source = Docs(changing=True)  # would change if it were asked again
    model = five_turn_model()
    builder = RequestBuilder(prompt=Prompt("You help {{team}}.", id="helper", version="2.1.0"), grounding=source)
    agent = Agent(model, tools=[lookup], request_builder=builder)
    result = await agent.run("How do I install seamkit?", variables={"team": "ops"})
    assert result.stop_reason == "completed"
    assert len(model.requests) == 5
    prefixes = [dumps(r.messages[:1]) for r in model.requests]
    assert len(set(prefixes)) == 1
    system = model.requests[0].messages[0]
    assert system.role == "system"
    assert system.text.startswith("You help ops.\n\n" + GROUNDING_HEADER)
    assert f"[{sid('docs/install.md#pip')}] docs/install.md#pip: seamkit installs with pip." in system.text
    assert len(source.calls) == 1  # retrieved once
    assert source.calls[0][0] == "How do I install seamkit?"
    # the tail grows: task, then each tool-call turn and its results
    assert [len(r.messages) for r in model.requests] == [2, 4, 6, 8, 10]
    # prompt id and version, citation ids on every request, the same each turn
    metas = [r.metadata for r in model.requests]
    assert {(m["prompt_id"], m["prompt_version"]) for m in metas} == {("helper", "2.1.0")}
    assert {tuple(m["citation_ids"]) for m in metas} == {(sid("docs/install.md#pip"), sid("docs/notes.md#1"))}
    assert [m["turn"] for m in metas] == [1, 2, 3, 4, 5]
    # the transcript holds no system message: the builder owns the prefix
    assert next(m.role for m in result.transcript) == "user"


async def test_reground_every_turn_changes_the_grounding_per_turn() -> None:
    source = Docs(changing=True)
    model = five_turn_model()
    builder = RequestBuilder(prompt="You help.", grounding=source, reground_every_turn=True)
    await Agent(model, tools=[lookup], request_builder=builder).run("install?")
    assert len(source.calls) == 5
    systems = [r.messages[0].text for r in model.requests]
    assert len(set(systems)) == 5
    for turn, text in enumerate(systems, 1):
        assert f"docs/notes.md#{turn}: version note {turn}" in text
        # the stable source keeps its id on every turn
        assert f"[{sid('docs/install.md#pip')}]" in text
    cites = [tuple(r.metadata["citation_ids"]) for r in model.requests]
    assert all(c[0] == sid("docs/install.md#pip") for c in cites)
    assert [c[1] for c in cites] == [sid(f"docs/notes.md#{n}") for n in range(1, 6)]


async def test_unknown_citations_in_the_answer_are_reported_as_a_warning() -> None:
    good = sid("docs/install.md#pip")
    model = ScriptedModel([f"Use pip [{good}] and [s000000]."])
    result = await Agent(model, request_builder=RequestBuilder(grounding=Docs())).run("install?")
    assert any("s000000" in w and good not in w for w in result.warnings)
    model2 = ScriptedModel([f"Use pip [{good}]."])
    result2 = await Agent(model2, request_builder=RequestBuilder(grounding=Docs())).run("install?")
    assert not any("cites" in w for w in result2.warnings)
    assert find_citations(result2.output) == [good]


async def test_the_result_lists_the_citation_ids_shown_to_the_model() -> None:
    model = ScriptedModel(["Use pip."])
    result = await Agent(model, request_builder=RequestBuilder(grounding=Docs())).run("install?")
    assert result.citation_ids == tuple(model.requests[0].metadata["citation_ids"])
    assert sid("docs/install.md#pip") in result.citation_ids
    plain = await Agent(ScriptedModel(["Use pip."])).run("install?")
    assert plain.citation_ids == ()


async def test_admit_refuses_inferred_items_by_default() -> None:
    wc_builder = RequestBuilder(grounding=Docs(inferred=True))
    wc = wc_builder.context()
    built = await wc_builder.build(wc, [Message.user("q")])
    assert "a model's guess" not in built.messages[0].text
    assert [i.source for i in built.grounding] == ["docs/install.md#pip", "docs/notes.md#0"]
    assert sid("memory/guess-1") not in built.citation_ids
    # the predicate is pluggable
    everything = RequestBuilder(grounding=Docs(inferred=True), admit=lambda i: True)
    built2 = await everything.build(everything.context(), [Message.user("q")])
    assert "a model's guess" in built2.messages[0].text


async def test_custom_render_and_query_policies() -> None:
    source = Docs()
    builder = RequestBuilder(grounding=source, k=1, query=lambda tail: "fixed query",
                             render=lambda items: "|".join(i.source for i in items))
    built = await builder.build(builder.context(), [Message.user("q")])
    assert built.messages[0].text == f"{GROUNDING_HEADER}\ndocs/install.md#pip"
    assert source.calls[0][0] == "fixed query" and source.calls[0][2] == 1


async def test_record_grounding_round_trips_through_a_store() -> None:
    store = MemoryStore()
    scope = Scope(tenant="acme")
    builder = RequestBuilder(grounding=Docs(changing=True), reground_every_turn=True, record_to=store)
    wc = builder.context(scope=scope)
    ctx = RunContext(run_id="r1")
    first = await builder.build(wc, [Message.user("q")], ctx=ctx)
    second = await builder.build(wc, [Message.user("q")], ctx=ctx)
    got1 = await load_grounding(store, scope, "seamkit.grounding:r1:1")
    got2 = await load_grounding(store, scope, "seamkit.grounding:r1:2")
    assert got1 == first.grounding and got2 == second.grounding and got1 != got2
    assert all(type(i) is MemoryItem for i in got1 or ())
    # stored as plain JSON data (encoded), so durable stores accept it
    raw = await store.get(scope, "seamkit.grounding:r1:1")
    json.dumps(raw)
    assert await load_grounding(store, Scope(tenant="other"), "seamkit.grounding:r1:1") is None


async def test_a_resumed_run_rebuilds_the_same_prefix_with_its_variables() -> None:
    model = ScriptedModel([
        {"text": "", "tool_calls": [{"name": "lookup", "arguments": {"word": "w"}}]},
        ProviderError("down", FailureClass.SERVER_ERROR),
        "final",
    ])
    agent = Agent(model, prompt="Help {{team}}.", tools=[lookup], checkpointer=MemoryStore(),
                  request_builder=RequestBuilder(grounding=Docs()))
    with pytest.raises(ProviderError):
        await agent.run("q", variables={"team": "ops"}, ctx=RunContext(run_id="r-resume"))
    result = await agent.resume("r-resume", allow_finished=True)
    assert result.output == "final"
    prefixes = {dumps(r.messages[:1]) for r in model.requests}
    assert len(prefixes) == 1 and model.requests[-1].messages[0].text.startswith("Help ops.")


# -- prompt variables -------------------------------------------------------------------------


def test_missing_and_unknown_variables_raise_a_clear_error() -> None:
    builder = RequestBuilder(prompt=Prompt("Help {{team}} with {{topic}}.", id="p", version="3"))
    with pytest.raises(PromptVariablesError) as err:
        builder.context({"team": "ops", "colour": "red"})
    assert err.value.missing == ("topic",) and err.value.unknown == ("colour",)
    assert "p@3" in str(err.value) and "missing variables: topic" in str(err.value)
    assert "unknown variables: colour" in str(err.value)
    with pytest.raises(PromptVariablesError, match="unknown variables: nope"):
        RequestBuilder(prompt="Hi {{name}}", variables={"nope": 1})
    # defaults merge with a run's variables
    ok = RequestBuilder(prompt="Hi {{name}} from {{team}}", variables={"team": "ops"})
    assert ok.context({"name": "Ada"}).variables == {"team": "ops", "name": "Ada"}
    with pytest.raises(PromptVariablesError, match="unknown variables: x"):
        RequestBuilder().context({"x": 1})


async def test_agent_checks_variables_before_calling_the_model() -> None:
    model = ScriptedModel(["hi"])
    agent = Agent(model, prompt="Help {{team}}.", request_builder=RequestBuilder())
    with pytest.raises(PromptVariablesError, match="missing variables: team"):
        await agent.run("q")
    assert model.requests == []
    result = await agent.run("q", variables={"team": "ops"})
    assert model.requests[0].messages[0] == Message.system("Help ops.")
    assert result.output == "hi"
    assert model.requests[0].metadata["prompt_id"] == "agent"


def test_agent_refuses_two_prompts() -> None:
    with pytest.raises(ValueError, match="not both"):
        Agent(ScriptedModel(["x"]), prompt="a", request_builder=RequestBuilder(prompt="b"))
    with pytest.raises(TypeError, match="RequestBuilder"):
        Agent(ScriptedModel(["x"]), request_builder=object())  # type: ignore[arg-type]


# -- output schema, budgets, compaction -------------------------------------------------------


async def test_output_schema_block_is_in_the_prefix() -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "number"}}, "required": ["answer"]}
    model = ScriptedModel(['{"answer": 4}'])
    result = await Agent(model, prompt="Add.", output=schema, request_builder=RequestBuilder()).run("2+2")
    assert result.output == {"answer": 4}
    text = model.requests[0].messages[0].text
    assert text.startswith("Add.\n\n" + SCHEMA_HEADER + "\n")
    assert json.loads(text.split("\n", 3)[-1]) == schema
    no_schema = RequestBuilder(include_schema=False)
    built = await no_schema.build(no_schema.context(), [Message.user("q")], output_schema=schema)
    assert built.prefix == ()


class DropOldest:
    """A test compactor: drops the oldest units until the transcript fits."""

    name = "drop_oldest"

    def __init__(self) -> None:
        self.budgets: list[int] = []

    async def compact(self, messages: Sequence[Message], *, budget_tokens: int,
                      ctx: RunContext | None = None) -> tuple[Message, ...]:
        self.budgets.append(budget_tokens)
        units = turn_units(messages)
        while len(units) > 1 and transcript_tokens([m for u in units for m in u]) > budget_tokens:
            units.pop(0)
        return tuple(m for u in units for m in u)


async def test_compactor_works_on_the_tail_and_never_on_the_prefix() -> None:
    compactor = DropOldest()
    assert isinstance(compactor, CompactorPort)
    builder = RequestBuilder(prompt="P " * 50, grounding=Docs(), compactor=compactor, budget_tokens=250)
    wc = builder.context()
    tail = [Message.user("old " * 300), Message.assistant("reply"), Message.user("new question")]
    built = await builder.build(wc, tail)
    assert built.prefix == wc.prefix and built.prefix[0].text.startswith("P P")
    assert built.tail == tuple(tail[1:])
    assert built.estimated_tokens <= 250
    assert check_invariants(tail, built.tail, budget_tokens=compactor.budgets[0]) == []
    # the compactor was given what the prefix leaves of the budget
    assert 0 < compactor.budgets[0] < 250
    # a short tail is left alone
    short = await builder.build(wc, [Message.user("hi")])
    assert short.tail == (Message.user("hi"),)


async def test_over_budget_raises_or_goes_to_the_budget_check_hook() -> None:
    tail = [Message.user("word " * 500)]
    strict = RequestBuilder(prompt="p", budget_tokens=50)
    with pytest.raises(ContextBudgetExceeded) as err:
        await strict.build(strict.context(), tail)
    assert err.value.budget == 50 and err.value.estimated > 50
    seen: list[int] = []

    def shorten(built: BuiltRequest) -> BuiltRequest | None:
        seen.append(built.estimated_tokens)
        if built.estimated_tokens <= 50:
            return None
        return BuiltRequest((*built.prefix, Message.user("(too long: summarised)")), built.prompt_id,
                            built.prompt_version, 20, built.grounding, built.citation_ids, built.prefix_size,
                            built.turn)

    hooked = RequestBuilder(prompt="p", budget_tokens=50, budget_check=shorten)
    out = await hooked.build(hooked.context(), tail)
    assert out.tail == (Message.user("(too long: summarised)"),) and seen and seen[0] > 50

    async def refuse(built: BuiltRequest) -> None:
        raise RuntimeError(f"{built.estimated_tokens} tokens is too many")

    refusing = RequestBuilder(budget_check=refuse)
    with pytest.raises(RuntimeError, match="tokens is too many"):
        await refusing.build(refusing.context(), tail)


def test_builder_argument_errors() -> None:
    with pytest.raises(ValueError, match="needs budget_tokens"):
        RequestBuilder(compactor=DropOldest())
    with pytest.raises(ValueError, match="k must be"):
        RequestBuilder(k=0)
    with pytest.raises(TypeError, match="MemorySource"):
        RequestBuilder(grounding=object())  # type: ignore[arg-type]


async def test_default_agent_behaviour_is_unchanged_without_a_builder() -> None:
    model = ScriptedModel(["hi"])
    await Agent(model, prompt="Sys").run("q")
    assert model.requests[0].messages == (Message.system("Sys"), Message.user("q"))
    assert "turn" not in model.requests[0].metadata


# -- YAML composition -------------------------------------------------------------------------


class DocsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    changing: bool = False


def make_docs(config: DocsConfig) -> MemorySource:
    return Docs(changing=config.changing)


class NotASourceConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")


def make_not_a_source(config: NotASourceConfig) -> object:
    return object()


class DropConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")


def make_drop(config: DropConfig) -> CompactorPort:
    return DropOldest()


class ContextPlugin:
    @hookimpl
    def seamkit_register_memory(self, register: Any) -> None:
        register("docs", make_docs, config=DocsConfig, description="Test docs")
        register("embedder", make_not_a_source, config=NotASourceConfig, description="Not a source")

    @hookimpl
    def seamkit_register_compactors(self, register: Any) -> None:
        register("drop_oldest", make_drop, config=DropConfig, description="Drops oldest units")


@pytest.fixture
def registry() -> Registry:
    import seamkit.testing._components as testkit

    reg = Registry(strict=True)
    reg.register_plugin(testkit, "testkit", distribution="seamkit", version="0.1.0")
    reg.register_plugin(ContextPlugin(), "context-tests", distribution="seamkit-context-tests", version="0")
    return reg


def write(tmp_path: Path, context: str) -> Path:
    p = tmp_path / "agent.yaml"
    p.write_text("seamkit: 1\nagent:\n  name: grounded\n  model: {use: scripted, turns: ['ok [s000000]']}\n"
                 "  prompt: {id: helper, version: 1.2.0, template: 'You help.'}\n  checkpoints: null\n" + context)
    return p


async def test_yaml_context_builds_a_grounded_agent(tmp_path: Path, registry: Registry) -> None:
    path = write(tmp_path, "  context:\n    grounding: {use: docs, changing: true}\n    k: 1\n"
                           "    reground_every_turn: true\n    compactor: drop_oldest\n    budget_tokens: 4000\n")
    agent = build_agent(load_composition(path, registry=registry), registry=registry)
    rb = agent.request_builder
    assert rb is not None
    assert rb.reground_every_turn and rb.k == 1 and rb.budget_tokens == 4000
    assert isinstance(rb.compactor, DropOldest) and isinstance(rb.grounding, Docs)
    assert isinstance(rb.prompt, Prompt) and (rb.prompt.id, rb.prompt.version) == ("helper", "1.2.0")
    result = await agent.run("install?")
    assert result.output == "ok [s000000]"
    schema = composition_json_schema(registry)["$defs"]
    assert "context" in schema["AgentConfig"]["properties"]
    assert {"const": "docs", "description": "Test docs"} in [
        o.get("properties", {}).get("use") for o in schema["MemoryRef"]["oneOf"]]
    assert any("s000000" in w for w in result.warnings)


def test_yaml_context_errors_are_located(tmp_path: Path, registry: Registry) -> None:
    path = write(tmp_path, "  context:\n    grounding: {use: docs, colour: red}\n    compactor: drop_oldest\n"
                           "    k: 0\n")
    with pytest.raises(ConfigError) as err:
        load_composition(path, registry=registry)
    issues = {i.path: i for i in err.value.issues}
    assert "agent.context.k" in issues
    assert any(p.startswith("agent.context.grounding") for p in issues)
    assert all(i.line is not None for i in err.value.issues)

    no_budget = write(tmp_path, "  context:\n    compactor: drop_oldest\n")
    with pytest.raises(ConfigError) as err0:
        load_composition(no_budget, registry=registry)
    assert [(i.path, "needs budget_tokens" in i.message) for i in err0.value.issues] == [("agent.context", True)]

    unknown = write(tmp_path, "  context:\n    grounding: doks\n")
    with pytest.raises(ConfigError, match="unknown memory 'doks'"):
        load_composition(unknown, registry=registry)

    not_source = write(tmp_path, "  context:\n    grounding: embedder\n")
    with pytest.raises(ConfigError) as err2:
        build_agent(load_composition(not_source, registry=registry), registry=registry)
    assert [i.path for i in err2.value.issues] == ["agent.context.grounding"]
    assert "does not satisfy the grounding-source port" in err2.value.issues[0].message
    assert "missing retrieve()" in err2.value.issues[0].message

    no_store = write(tmp_path, "  context:\n    grounding: docs\n    record_grounding: true\n")
    with pytest.raises(ConfigError, match="record_grounding needs a store"):
        build_agent(load_composition(no_store, registry=registry), registry=registry)


# -- each message estimated once per run (issue 19) ---------------------------------------------


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[Message]:
    """Record every message the default estimate counts (seamkit._tokens._message_tokens)."""
    import seamkit._tokens as tokens

    counted: list[Message] = []
    real = tokens._message_tokens

    def counting(message: Message, count: Any) -> int:
        counted.append(message)
        return real(message, count)

    monkeypatch.setattr(tokens, "_message_tokens", counting)
    return counted


async def test_a_run_estimates_each_message_once_and_the_estimate_is_the_uncached_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from seamkit._tokens import estimate_tokens
    from seamkit.values import ChatRequest

    counted = _counting(monkeypatch)
    model = five_turn_model("done")
    builder = RequestBuilder(prompt="You look words up.", budget_tokens=100_000)
    result = await Agent(model, tools=[lookup], request_builder=builder).run("Look up four words.")
    assert result.stop_reason == "completed"
    assert len(model.requests) == 5
    sent = {id(m): m for r in model.requests for m in r.messages}
    # every message of every request counted exactly once (the tool schemas' estimate counts none)
    assert sorted(map(id, counted)) == sorted(sent)
    monkeypatch.undo()
    for r in model.requests:
        assert r.metadata["estimated_tokens"] == estimate_tokens(ChatRequest(r.messages, r.tools))


async def test_the_estimate_of_a_fitted_request_counts_only_the_messages_fitting_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from seamkit._tokens import estimate_tokens
    from seamkit.values import ChatRequest, ToolCall, ToolResult

    builder = RequestBuilder(prompt="p", budget_tokens=400)
    wc = builder.context()
    tail: list[Message] = [Message.user("question")]
    for i in range(6):  # long tool results: fitting condenses the earlier ones (new messages)
        tail.append(Message("assistant", (ToolCall(f"c{i}", "lookup", {"word": f"w{i}"}),)))
        tail.append(Message("tool", (ToolResult(f"c{i}", "lookup", f"result {i} " + "data " * 120),)))
    first = await builder.build(wc, tail)
    assert first.fitting is not None and first.fitting.condensed
    assert first.estimated_tokens == estimate_tokens(ChatRequest(first.messages))
    counted = _counting(monkeypatch)
    again = await builder.build(wc, tail)
    assert again.messages == first.messages and again.estimated_tokens == first.estimated_tokens
    # the transcript's messages were counted before: only the condensed copies made anew are counted
    assert counted and all(m not in tail for m in counted)
    assert not any(m is t for m in counted for t in tail)


def test_message_token_cache_sums_a_growing_log_incrementally(monkeypatch: pytest.MonkeyPatch) -> None:
    from seamkit._tokens import MessageTokenCache, estimate_message_tokens
    from seamkit.values import MessageLog

    log = MessageLog([Message.system("s"), Message.user("u")])
    cache = MessageTokenCache()
    assert cache.messages(log.snapshot()) == sum(map(estimate_message_tokens, log.snapshot()))
    counted = _counting(monkeypatch)
    sums: list[tuple[tuple[Message, ...], int]] = []
    for i in range(20):
        log.append(Message.assistant(f"answer {i}"))
        snap = log.snapshot()
        sums.append((tuple(snap), cache.messages(snap)))
    # each appended message counted once, nothing before it again
    assert [m.text for m in counted] == [f"answer {i}" for i in range(20)]
    monkeypatch.undo()
    for messages, total in sums:
        assert total == sum(estimate_message_tokens(m) for m in messages)
    # a snapshot of another log is summed whole (it does not extend the last one)
    head = MessageLog(sums[0][0][:2]).snapshot()
    assert cache.messages(head) == sum(estimate_message_tokens(m) for m in head)


def test_message_token_cache_forgets_what_no_request_holds_any_more() -> None:
    from seamkit._tokens import MessageTokenCache

    cache = MessageTokenCache()
    kept = [Message.user("kept")]
    for i in range(200):
        cache.message(Message.user(f"one-off {i}"))
    cache.message(kept[0])
    cache.retain(kept)
    assert len(cache) == 1
    assert cache.message(kept[0]) > 0


async def test_requests_of_a_growing_transcript_share_one_log_instead_of_copying_it() -> None:
    from seamkit.values import MessageLog, MessageSnapshot

    builder = RequestBuilder(prompt="p")
    wc = builder.context()
    log = MessageLog([Message.user("task")])
    built = [await builder.build(wc, log.snapshot())]
    for i in range(3):
        log.append(Message.assistant(f"a{i}"))
        log.append(Message.user(f"u{i}"))
        built.append(await builder.build(wc, log.snapshot()))
    for b, n in zip(built, (1, 3, 5, 7), strict=True):
        assert isinstance(b.messages, MessageSnapshot)
        assert b.messages == wc.prefix + tuple(log.snapshot())[:n]  # as a tuple would be
        assert b.tail == tuple(log.snapshot())[:n] and b.prefix == wc.prefix
    # one storage for every request (each turn added its new messages), each request unchanged
    assert len({id(b.messages._items) for b in built}) == 1
    assert [len(b.messages) for b in built] == [2, 4, 6, 8]
    # a tail that does not extend the last one (a list, another log) is joined anew
    other = await builder.build(wc, [Message.user("fresh")])
    assert other.messages == (*wc.prefix, Message.user("fresh"))
    again = await builder.build(wc, MessageLog([Message.user("x")]).snapshot())
    assert again.messages == (*wc.prefix, Message.user("x"))
