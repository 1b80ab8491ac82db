"""seamkit-conversation: the chat-turn steps (contextualize, recall, remember, compose, complete)
built through the registry from their configs, run in small workflows on scripted models, the real
sqlite-vec store (in memory) and a small deterministic embedder; a chat workflow end to end, and
remember's write exactly once across a crash and resume."""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
import seamkit_conversation.plugin
from seamkit._agent.agent import Agent
from seamkit._durability.checkpointer import Checkpointer
from seamkit._plugins.ports_check import StepShape, port_problems
from seamkit._plugins.registry import get_registry
from seamkit._runtime.context import RunContext
from seamkit._tokens import estimate_message_tokens
from seamkit.errors import ConfigError, RunCancelled, StoreUnavailable
from seamkit.testing._memory_store import MemoryStore
from seamkit.testing._models import ScriptedModel
from seamkit.values import Message, Scope, StreamEvent
from seamkit.workflows import (
    START,
    Step,
    StepContext,
    StepError,
    Workflow,
    WorkflowFailed,
    agent_step,
    function_step,
    resume_workflow,
    run_workflow,
)
from seamkit_conversation.steps import short_title
from seamkit_retrieval.vector_memory import VectorMemory
from seamkit_vector_sqlite.store import SqliteVectorStore

NAMES = ("contextualize", "recall", "remember", "compose", "complete")
DIMS = 64


@pytest.fixture
def build(register_plugin: Callable[..., Any]) -> Iterator[Callable[..., Any]]:
    """``build(name, **params)``: the step function the registered component builds."""
    report = register_plugin(seamkit_conversation.plugin, "conversation", distribution="seamkit-conversation")
    assert report.status == "ok", report.error

    def make(name: str, **params: Any) -> Any:
        return get_registry().build("step", name, params)

    yield make


class WordEmbedder:
    """A real, small EmbeddingPort: a normalized bag of hashed words (shared words -> higher cosine)."""

    dimensions = DIMS

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.gate: asyncio.Event | None = None  # when set, writes (texts starting "Q:") wait for it

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.gate is not None and any(t.startswith("Q:") for t in texts):
            await asyncio.wait_for(self.gate.wait(), 10)  # fails, never hangs, when nothing opens it
        self.texts += texts
        out = []
        for t in texts:
            v = [0.0] * DIMS
            for w in re.findall(r"\w+", t.lower()):
                v[int(hashlib.sha256(w.encode()).hexdigest(), 16) % DIMS] += 1.0
            v[0] += 0.01  # never the zero vector
            n = math.sqrt(sum(x * x for x in v))
            out.append([x / n for x in v])
        return out


class CountingVectors(SqliteVectorStore):
    """The real sqlite-vec store, counting upserts; ``on_upsert`` runs after each write."""

    def __init__(self) -> None:
        super().__init__(":memory:", dimensions=DIMS)
        self.upserts = 0
        self.on_upsert: Callable[[], None] | None = None

    async def upsert(self, scope: Scope, items: Any) -> None:
        await super().upsert(scope, items)
        self.upserts += 1
        if self.on_upsert is not None:
            self.on_upsert()


@pytest.fixture
async def vectors() -> Any:
    store = CountingVectors()
    yield store
    await store.aclose()


class Seen:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.when: dict[tuple[str, str], Callable[[], None]] = {}

    def on_event(self, event: StreamEvent) -> None:
        if event.kind == "step":
            key = (event.data["event"], event.data["name"])
            self.events.append(key)
            if key in self.when:
                self.when[key]()


def one(name: str, fn: Any, *, consumes: Any = START, emits: Any = "out", join: bool = False) -> Workflow:
    return Workflow(name, (Step(name, fn, consumes, emits, join),), outcomes=(emits,))


def durable_remember(build: Callable[..., Any]) -> Workflow:
    return Workflow("mem", (Step("remember", build("remember"), START, "remembered"),), outcomes=("remembered",),
                    checkpointer=Checkpointer(MemoryStore()))


async def run_one(fn: Any, data: Any, services: dict[str, Any] | None = None) -> Any:
    r = await run_workflow(one("step", fn), data, ctx=RunContext(services=services or {}))
    return r.output


def texts(request: Any) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in request.messages]


# --------------------------------------------------------------------------- registration


def test_the_plugin_registers_five_steps_each_validated_by_its_config(build: Callable[..., Any]) -> None:
    registry = get_registry()
    for name in NAMES:
        spec = registry.resolve("step", name)
        assert spec.distribution == "seamkit-conversation" and spec.description
        assert port_problems(build(name), StepShape) == []
    with pytest.raises(ConfigError, match="budget_token"):
        build("compose", budget_token=100)
    with pytest.raises(ConfigError, match="count"):
        build("complete", count=11)


# --------------------------------------------------------------------------- contextualize


async def test_contextualize_without_history_makes_no_model_call(build: Callable[..., Any]) -> None:
    model = ScriptedModel([])
    out = await run_one(build("contextualize"), "How do I reset my   password on the VPN portal?",
                        {"model": model})
    assert model.calls == 0
    assert out == {"query": "How do I reset my   password on the VPN portal?",
                   "title": "How do I reset my password on the VPN portal?",
                   "message": "How do I reset my   password on the VPN portal?", "history": []}
    out = await run_one(build("contextualize", title_chars=20), {"message": "How do I reset my password?"})
    assert out["title"] == "How do I reset my\u2026"


async def test_contextualize_rewrites_the_query_from_history_and_titles_the_thread(
        build: Callable[..., Any]) -> None:
    model = ScriptedModel(['```json\n{"query": "How much does the Pro plan cost per year?", '
                           '"title": "Pro plan pricing"}\n```'])
    history = [{"role": "user", "text": "Tell me about the Pro plan."},
               {"role": "assistant", "text": "The Pro plan adds SSO and audit logs."}]
    r = await run_workflow(one("ctx", build("contextualize")), {"message": "And per year?", "history": history},
                           ctx=RunContext(services={"model": model}))
    assert r.output == {"query": "How much does the Pro plan cost per year?", "title": "Pro plan pricing",
                        "message": "And per year?", "history": history}
    [request] = model.requests
    system, user = texts(request)
    assert system[0] == "system" and '"title"' in system[1]
    assert user == ("user", "Conversation so far:\nuser: Tell me about the Pro plan.\n"
                            "assistant: The Pro plan adds SSO and audit logs.\n\nLatest message:\nAnd per year?")
    assert request.output_schema is not None and request.output_schema["required"] == ["query", "title"]
    assert r.usage.requests == 1  # the model call counts as the workflow's


async def test_contextualize_keeps_a_title_and_reads_a_plain_reply_as_the_query(build: Callable[..., Any]) -> None:
    model = ScriptedModel(["  What is the Pro plan's yearly price?  "])
    history = [{"role": "user", "text": "a"}, {"role": "assistant", "text": "b"}, {"role": "user", "text": "c"}]
    out = await run_one(build("contextualize", max_history=2),
                        {"message": "yearly?", "history": history, "title": "Pricing"}, {"model": model})
    assert (out["query"], out["title"]) == ("What is the Pro plan's yearly price?", "Pricing")
    system, user = texts(model.requests[0])
    assert '"title"' not in system[1]  # titled already: not asked for
    assert user[1].startswith("Conversation so far:\nassistant: b\nuser: c\n")  # the newest max_history


async def test_contextualize_refuses_a_malformed_history(build: Callable[..., Any]) -> None:
    with pytest.raises(WorkflowFailed) as info:
        await run_one(build("contextualize"), {"message": "hi", "history": [{"role": "robot", "text": "x"}]})
    assert isinstance(info.value.__cause__, StepError) and info.value.__cause__.code == "INVALID_STEP_INPUT"
    assert "history[0] must be {'role': 'user' | 'assistant', 'text': str}" in str(info.value)


def test_short_titles_cut_at_a_word() -> None:
    assert short_title("  \n ", 10) is None
    assert short_title("Reset the VPN password, please", 16) == "Reset the VPN\u2026"
    assert short_title("Supercalifragilistic", 10) == "Supercali\u2026"


# --------------------------------------------------------------------------- recall / remember


async def test_recall_with_memory_off_is_empty_and_a_join_waiting_for_it_goes_on(build: Callable[..., Any]) -> None:
    w = Workflow("gather", (
        Step("recall", build("recall"), "question", "memory"),
        Step("ctx", build("contextualize"), START, "question"),
        Step("compose", build("compose"), ("question", "memory"), "composed"),
    ), outcomes=("composed",))
    r = await run_workflow(w, "hello")
    assert [a.step for a in r.steps] == ["ctx", "recall", "compose"]
    assert r.output["messages"] == [{"role": "user", "text": "hello"}] and r.output["blocks"] == []
    assert await run_one(build("remember"), {"question": "q", "answer": "a"}) == {}


async def test_half_a_memory_is_a_configuration_mistake(build: Callable[..., Any], vectors: Any) -> None:
    for step in (build("recall"), build("remember")):
        with pytest.raises(WorkflowFailed, match="MEMORY_INCOMPLETE: the run has service 'vectors' but no "
                                                 "'embeddings'"):
            await run_one(step, {"question": "q", "answer": "a", "query": "q"}, {"vectors": vectors})
    with pytest.raises(WorkflowFailed, match=r"SERVICE_MISMATCH: service 'embeddings' \(str\) does not satisfy "
                                             r"the embedding port"):
        await run_one(build("recall"), "q", {"vectors": vectors, "embeddings": "minilm"})


async def test_remember_stores_the_exchange_and_recall_finds_it_in_the_same_tenant_only(
        build: Callable[..., Any], vectors: Any) -> None:
    embedder = WordEmbedder()
    memory = {"vectors": vectors, "embeddings": embedder}
    question = {"query": "Which port does the billing service listen on?", "title": None,
                "message": "which port?", "history": []}
    w = one("remember", build("remember"))
    r = await run_workflow(w, {"question": question, "answer": "The billing service listens on 8443."},
                           ctx=RunContext(services=memory))
    key = r.output["id"]
    assert r.output == {"id": key, "source": key} and key.startswith("exchange:")
    await run_workflow(w, {"question": "What colour is the logo?", "answer": "Teal."},
                       ctx=RunContext(services=memory, scope=Scope(tenant="other")))

    out = await run_one(build("recall", k=1), {"query": "billing service port"}, memory)
    [block] = out["blocks"]
    assert block["text"] == ("Q: Which port does the billing service listen on?\n"
                             "A: The billing service listens on 8443.")
    assert (block["source"], block["origin"]) == (key, "inferred") and block["id"].startswith("s")
    assert 0 < block["score"] <= 1
    # the layout VectorMemory (the vector_memory grounding source) reads
    [item] = await VectorMemory(embedder, vectors).retrieve("billing port", scope=Scope(), k=1)
    assert (item.source, item.origin, item.citation_id) == (key, "inferred", block["id"])
    assert await run_one(build("recall"), "", memory) == {"blocks": []}
    assert await run_one(build("recall", min_score=0.99), "billing service port", memory) == {"blocks": []}
    other = await run_workflow(one("r", build("recall")), "billing service port",
                               ctx=RunContext(services=memory, scope=Scope(tenant="other")))
    assert [b["text"] for b in other.output["blocks"]] == ["Q: What colour is the logo?\nA: Teal."]


async def test_remember_names_the_keys_it_needs(build: Callable[..., Any], vectors: Any) -> None:
    memory = {"vectors": vectors, "embeddings": WordEmbedder()}
    with pytest.raises(WorkflowFailed, match=r"remember takes \{'question': \.\.\., \.\.\.\}.*the input has: str"):
        await run_one(build("remember"), "just text", memory)
    out = await run_one(build("remember", question="q", answer="a"), {"q": "Why?", "a": {"text": "Because."}}, memory)
    assert out["id"].startswith("exchange:") and vectors.upserts == 1
    assert await run_one(build("remember"), {"question": "Why?", "answer": "  "}, memory) == {}


async def test_remember_writes_exactly_once_when_the_workflow_is_cut_off_after_the_write(
        build: Callable[..., Any], vectors: Any) -> None:
    embedder = WordEmbedder()
    ctx = RunContext(services={"vectors": vectors, "embeddings": embedder})
    # the process is cut off right after the write, before the step is recorded as finished
    vectors.on_upsert = lambda: ctx.cancellation.cancel("killed")
    w = durable_remember(build)
    with pytest.raises(RunCancelled):
        await run_workflow(w, {"question": "Where are backups?", "answer": "In S3."}, ctx=ctx)
    snap = await w.checkpointer.latest(ctx.run_id)
    [active] = snap.state["workflow_state"].active
    assert active.step == "remember" and active.status == "running"  # it runs again on resume
    vectors.on_upsert = None
    r = await resume_workflow(w, ctx.run_id, ctx=RunContext(services=ctx.services))
    assert r.output == {"id": f"exchange:{active.run_id}", "source": f"exchange:{active.run_id}"}
    assert (vectors.upserts, len(embedder.texts)) == (1, 1)  # the ledger's receipt: not written again
    assert await vectors.count(Scope()) == 1


async def test_a_write_interrupted_midway_is_retried_and_leaves_one_item(
        build: Callable[..., Any], vectors: Any) -> None:
    embedder = WordEmbedder()
    fail = [True]

    def broken() -> None:
        if fail[0]:
            raise StoreUnavailable("the connection dropped after the write was sent")

    vectors.on_upsert = broken  # written, but the step cannot know it
    services = {"vectors": vectors, "embeddings": embedder}
    w = durable_remember(build)
    ctx = RunContext(services=services)
    with pytest.raises(WorkflowFailed, match="STEP_FAILED"):
        await run_workflow(w, {"question": "Where are backups?", "answer": "In S3."}, ctx=ctx)
    fail[0] = False
    # an uncertain outcome is not a reason to hold back: the upsert is keyed by the activation's run id
    r = await resume_workflow(w, ctx.run_id, allow_finished=True, ctx=RunContext(services=services))
    assert r.output["id"].startswith("exchange:")
    assert vectors.upserts == 2 and await vectors.count(Scope()) == 1


# --------------------------------------------------------------------------- compose


def _tokens(role: str, text: str) -> int:
    return estimate_message_tokens(Message(role, (Message.user(text).content[0],)))  # type: ignore[arg-type]


async def test_compose_puts_blocks_behind_the_system_message_then_the_turns_then_the_message(
        build: Callable[..., Any]) -> None:
    history = [{"role": "user", "text": "Tell me about Pro."}, {"role": "assistant", "text": "It adds SSO."}]
    question = {"query": "Pro yearly price?", "title": "Pro", "message": "yearly?", "history": history}
    out = await run_one(build("compose", system="Answer briefly."), {
        "question": question,
        "memory": {"blocks": [{"id": "s1a2b3c", "text": "Q: Pro monthly?\nA: $10.", "score": 0.8}]},
        "files": {"blocks": [{"text": "pricing.md: Pro is $100 a year."}]},
    })
    context = ("Context gathered for this message (cite a block by its [id]):\n[s1a2b3c] Q: Pro monthly?\nA: $10.\n"
               f"[b{hashlib.sha256(b'pricing.md: Pro is $100 a year.').hexdigest()[:6]}] "
               "pricing.md: Pro is $100 a year.")
    assert out["messages"] == [{"role": "system", "text": "Answer briefly."}, {"role": "system", "text": context},
                               *history, {"role": "user", "text": "yearly?"}]
    assert (out["dropped_turns"], out["dropped_blocks"], out["query"], out["title"]) == (0, 0, "Pro yearly price?",
                                                                                         "Pro")
    assert out["tokens"] == sum(_tokens(m["role"], m["text"]) for m in out["messages"])


async def test_a_text_payload_of_another_event_is_one_block(build: Callable[..., Any]) -> None:
    # a gather-mode agent's output is its context block, as text
    out = await run_one(build("compose"), {"question": {"message": "what time is it?"},
                                           "gathered": "Gathered context (1 tool call):\n[1] clock {} -> 12:00",
                                           "empty": ""})
    [context] = [m["text"] for m in out["messages"] if m["text"].startswith("Context gathered")]
    assert "clock {} -> 12:00" in context and out["messages"][-1] == {"role": "user", "text": "what time is it?"}


async def test_older_turns_give_way_first_then_the_last_blocks(build: Callable[..., Any]) -> None:
    history = [{"role": "user" if i % 2 == 0 else "assistant", "text": f"turn {i} " + "words " * 20}
               for i in range(6)]
    blocks = [{"id": f"k{i}", "text": f"block {i} " + "facts " * 15} for i in range(3)]
    data = {"question": {"message": "and now?", "history": history}, "memory": {"blocks": blocks}}
    full = await run_one(build("compose", budget_tokens=100_000), data)
    assert full["dropped_turns"] == 0
    context, msg = full["messages"][0], full["messages"][-1]
    fixed = _tokens("system", context["text"]) + _tokens("user", msg["text"])
    two_turns = sum(_tokens(t["role"], t["text"]) for t in history[-2:])

    out = await run_one(build("compose", budget_tokens=fixed + two_turns + 1), data)
    assert out["messages"] == [context, *history[-2:], msg]  # the newest two turns, every block
    assert (out["dropped_turns"], out["dropped_blocks"]) == (4, 0) and out["tokens"] <= fixed + two_turns + 1

    out = await run_one(build("compose", budget_tokens=fixed - 1), data)
    assert out["dropped_turns"] == 6 and out["dropped_blocks"] == 1
    assert [b["id"] for b in out["blocks"]] == ["k0", "k1"] and out["messages"][-1] == msg
    assert out["tokens"] <= fixed - 1

    long = {"role": "user", "text": "why " * 100}
    out = await run_one(build("compose", budget_tokens=64), {**data, "question": {**data["question"],
                                                                                  "message": long["text"]}})
    assert out["messages"] == [long] and out["dropped_blocks"] == 3  # over the budget alone: kept anyway
    assert out["tokens"] > 64


async def test_compose_as_a_join_of_a_fan_out_and_without_a_conversation(build: Callable[..., Any]) -> None:
    async def sources(ctx: StepContext, data: Any) -> list[dict[str, Any]]:
        return [{"question": data, "blocks": [{"id": f"f{i}", "text": f"file {i}"}]} for i in range(3)]

    w = Workflow("fan", (Step("sources", sources, START, "found"),
                         Step("compose", build("compose"), "found", "composed", join=True)), outcomes=("composed",))
    r = await run_workflow(w, {"message": "hi"})
    assert [b["id"] for b in r.output["blocks"]] == ["f0", "f1", "f2"]
    with pytest.raises(WorkflowFailed, match="compose found no conversation in its input"):
        await run_one(build("compose"), {"blocks": [{"text": "x"}]})
    with pytest.raises(WorkflowFailed, match="holds 2 different conversations"):
        await run_one(build("compose"), [{"message": "a"}, {"message": "b"}])


# --------------------------------------------------------------------------- complete


async def test_complete_asks_for_followups_and_keeps_count_distinct_ones(build: Callable[..., Any]) -> None:
    model = ScriptedModel(['{"followups": ["Is there a discount?", "Is there a discount?", "Can I pay monthly?", '
                           '"What about SSO?"]}', "1. Can I cancel?\n- How do refunds work?\n\n* Is VAT included?"])
    data = {"question": {"query": "Pro price?", "message": "price?"}, "answer": "Pro is $100 a year."}
    out = await run_one(build("complete", count=2), data, {"model": model})
    assert out == {"followups": ["Is there a discount?", "Can I pay monthly?"], "answer": "Pro is $100 a year."}
    assert texts(model.requests[0])[1] == ("user", "Question:\nPro price?\n\nAnswer:\nPro is $100 a year.")
    out = await run_one(build("complete"), "Pro is $100 a year.", {"model": model})  # a plain-text reply
    assert out["followups"] == ["Can I cancel?", "How do refunds work?", "Is VAT included?"]
    assert model.calls == 2
    assert await run_one(build("complete"), "Pro is $100.") == {"followups": [], "answer": "Pro is $100."}
    assert (await run_one(build("complete", count=0), "Pro.", {"model": model}))["followups"] == []
    assert model.calls == 2


# --------------------------------------------------------------------------- the chat workflow


def chat(build: Callable[..., Any], answer: Agent, seen: Seen, cp: Checkpointer) -> Workflow:
    async def files(ctx: StepContext, question: Any) -> dict[str, Any]:
        return {"blocks": [{"id": "f1", "text": "pricing.md: Pro costs $100 a year, billed annually."}]}

    return Workflow("chat", (
        Step("contextualize", build("contextualize"), START, "question"),
        Step("recall", build("recall", k=2), "question", "memory"),
        function_step(files, consumes="question", emits="files"),
        Step("compose", build("compose", budget_tokens=2000), ("question", "memory", "files"), "composed"),
        agent_step("answer", answer, consumes="composed", emits="answer"),
        Step("complete", build("complete", count=2), ("question", "answer"), "turn"),
        Step("remember", build("remember"), ("question", "answer"), "remembered"),
    ), outcomes=("turn", "remembered"), observers=(seen,), checkpointer=cp)


async def test_a_chat_turn_end_to_end_on_scripted_models(build: Callable[..., Any], vectors: Any) -> None:
    embedder = WordEmbedder()
    store = MemoryStore()
    services = {"vectors": vectors, "embeddings": embedder}
    # turn 1: no history (no contextualize call); the answer is remembered
    model = ScriptedModel(['{"followups": ["Can I pay monthly?"]}'])
    agent = Agent(ScriptedModel(["Pro costs $100 a year."]), name="answer", prompt="You answer from the context.")
    seen = Seen()
    r1 = await run_workflow(chat(build, agent, seen, Checkpointer(store)), "How much is the Pro plan?",
                            ctx=RunContext(services={**services, "model": model}))
    assert r1.outcomes[0].payload == {"followups": ["Can I pay monthly?"], "answer": "Pro costs $100 a year."}
    assert model.calls == 1 and vectors.upserts == 1

    # turn 2: with history; the query is rewritten, memory recalls turn 1, the agent answers
    model = ScriptedModel(['{"query": "How much is the Pro plan per month?", "title": "Pro pricing"}',
                           '{"followups": ["Is there a yearly discount?", "Can I cancel?"]}'])
    answer_model = ScriptedModel(["$10 a month, or $100 a year [f1]."])
    agent = Agent(answer_model, name="answer", prompt="You answer from the context.")
    seen = Seen()
    history = [{"role": "user", "text": "How much is the Pro plan?"},
               {"role": "assistant", "text": "Pro costs $100 a year."}]
    r2 = await run_workflow(chat(build, agent, seen, Checkpointer(store)),
                            {"message": "and monthly?", "history": history},
                            ctx=RunContext(services={**services, "model": model}))
    turn = next(e.payload for e in r2.outcomes if e.type == "turn")
    assert turn == {"followups": ["Is there a yearly discount?", "Can I cancel?"],
                    "answer": "$10 a month, or $100 a year [f1]."}
    [request] = answer_model.requests
    roles = texts(request)
    assert [role for role, _ in roles] == ["system", "system", "user", "assistant", "user"]
    assert roles[0] == ("system", "You answer from the context.")  # the agent's own prompt first
    assert "Q: How much is the Pro plan?\nA: Pro costs $100 a year." in roles[1][1]
    assert "[f1] pricing.md: Pro costs $100 a year" in roles[1][1]
    assert roles[2:] == [("user", "How much is the Pro plan?"), ("assistant", "Pro costs $100 a year."),
                         ("user", "and monthly?")]
    assert [e for e in seen.events if e[0] == "started"][:1] == [("started", "contextualize")]
    assert {e[1] for e in seen.events if e[0] == "finished"} == {
        "contextualize", "recall", "files", "compose", "answer", "complete", "remember"}
    assert r2.usage.requests == 3  # contextualize, the answer, complete
    assert vectors.upserts == 2 and await vectors.count(Scope()) == 2


async def test_remember_runs_off_the_answers_path(build: Callable[..., Any], vectors: Any) -> None:
    # the write cannot start until complete has finished: if anything waited for remember, this would fail
    embedder = WordEmbedder()
    embedder.gate = asyncio.Event()
    seen = Seen()
    seen.when[("finished", "complete")] = embedder.gate.set
    model = ScriptedModel(['{"followups": ["Why?"]}'])
    agent = Agent(ScriptedModel(["Because."]), name="answer", prompt="Answer.")
    r = await run_workflow(chat(build, agent, seen, Checkpointer(MemoryStore())), "Why is the sky blue?",
                           ctx=RunContext(services={"vectors": vectors, "embeddings": embedder, "model": model}))
    finished = [step for what, step in seen.events if what == "finished"]
    assert finished.index("answer") < finished.index("complete") < finished.index("remember")
    assert r.status == "done" and vectors.upserts == 1


@pytest.mark.slow
async def test_recall_finds_a_remembered_exchange_by_meaning_with_the_real_components(
        build: Callable[..., Any]) -> None:
    from seamkit.testing._network import block_network

    registry = get_registry()
    embeddings = registry.build("memory", "sentence_transformers", {})
    vectors = registry.build("memory", "sqlite_vec", {"dimensions": 384, "path": ":memory:"})
    memory = {"vectors": vectors, "embeddings": embeddings}
    try:
        with block_network():
            for q, a in (("Which port does the billing service listen on?", "It listens on 8443."),
                         ("What colour is our logo?", "Teal."),
                         ("Who approves holiday requests?", "Your team lead, in the HR portal.")):
                await run_one(build("remember"), {"question": q, "answer": a}, memory)
            out = await run_one(build("recall", k=1), "vacation approval", memory)
        [block] = out["blocks"]
        assert block["text"].startswith("Q: Who approves holiday requests?")
    finally:
        await vectors.aclose()


CHAT_YAML = """\
seamkit: 1
agent:
  name: helper
  model: {use: scripted, turns: ['{"query": "How much is Pro per month?", "title": "Pro pricing"}',
                                 '{"followups": ["Is there a yearly discount?"]}']}
  checkpoints: null
agents:
  answer:
    model: {use: scripted, turns: ["$10 a month."]}
    prompt: You answer from the context.
    checkpoints: null
workflow:
  name: chat
  outcomes: [turn, remembered]
  steps:
    contextualize: {use: contextualize, emits: [question]}
    recall: {use: recall, k: 2, consumes: [question], emits: [memory]}
    compose: {use: compose, budget_tokens: 2000, system: Be brief., consumes: [question, memory], emits: [composed]}
    answer: {agent: answer, consumes: [composed], emits: [answer]}
    complete: {use: complete, count: 1, consumes: [question, answer], emits: [turn]}
    remember: {use: remember, consumes: [question, answer], emits: [remembered]}
"""


async def test_the_chat_workflow_from_yaml(build: Callable[..., Any], vectors: Any) -> None:
    from seamkit.composition import build_workflow, loads_composition

    w = build_workflow(loads_composition(CHAT_YAML))
    history = [{"role": "user", "text": "Tell me about Pro."}, {"role": "assistant", "text": "It adds SSO."}]
    # memory is the caller's here: build_workflow gives step components model, agents and store only
    r = await run_workflow(w, {"message": "per month?", "history": history},
                           ctx=RunContext(services={"vectors": vectors, "embeddings": WordEmbedder()}))
    turn = next(e.payload for e in r.outcomes if e.type == "turn")
    assert turn == {"followups": ["Is there a yearly discount?"], "answer": "$10 a month."}
    answer_model = w.services["agents"]["answer"].model
    assert [(m.role, m.text) for m in answer_model.requests[0].messages] == [
        ("system", "You answer from the context."), ("system", "Be brief."), *[(t["role"], t["text"]) for t in history],
        ("user", "per month?")]
    assert await vectors.count(Scope()) == 1
