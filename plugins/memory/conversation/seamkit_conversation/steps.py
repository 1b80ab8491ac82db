"""The steps of a chat turn, as workflow step factories (each gets its validated config from
:mod:`seamkit_conversation.config` and returns ``async fn(ctx, input) -> result``; data shapes in
:mod:`seamkit_conversation.shapes`)::

    contextualize -> recall  \\
                  -> files    > compose (waits for all) -> answer (agent) -> complete
                  -> ...     /                                    \\-> remember

Services, read from the step's run (``ctx.run.services``), by the names the configs give:
``model`` (an :class:`~seamkit._ports.LLMPort`: ``contextualize`` and ``complete``), ``vectors``
(a :class:`~seamkit._ports.VectorPort`) and ``embeddings`` (an
:class:`~seamkit._ports.EmbeddingPort`: ``recall`` and ``remember``, through
:class:`seamkit_retrieval.VectorMemory`'s metadata layout, so what ``remember`` stores is what a
``vector_memory`` grounding source over the same store retrieves). A step whose service is absent
has nothing to do and says so with an empty result, never an error, so a step waiting for it never
hangs: ``recall`` -> ``{"blocks": []}``, ``remember`` -> ``{}``, ``complete`` ->
``{"followups": [], ...}``, ``contextualize`` -> the message as the query. Half a memory (a vector
store without embeddings, or the reverse) is a configuration mistake and raises.

Every step returns a mapping, never a list: a list would fan out (see
:mod:`seamkit.workflows._model`).

Model calls go through an :class:`~seamkit._runtime.invoker.Invoker` in the step's run (``meta``
``{"purpose": "conversation.<step>"}``) and their usage counts as the workflow's
(:meth:`~seamkit.workflows.StepContext.add_usage`). Provider errors fail the step (the workflow
resumes it); a reply that is not the JSON asked for is read as plain text (see each step).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from seamkit import Invoker, ToolRegistry
from seamkit.plugin import EmbeddingPort, LLMPort, Port, VectorPort, estimate_message_tokens, port_problems
from seamkit.values import ChatRequest, FrozenDict, Message, freeze, thaw
from seamkit.workflows import StepContext, StepError
from seamkit_retrieval.vector_memory import VectorMemory

from seamkit_conversation.config import (
    CompleteConfig,
    ComposeConfig,
    ContextualizeConfig,
    MemoryServices,
    RecallConfig,
    RememberConfig,
)
from seamkit_conversation.shapes import (
    as_blocks,
    as_conversation,
    query_of,
    text_of,
    turn,
)

__all__ = ["build_complete", "build_compose", "build_contextualize", "build_recall", "build_remember",
           "short_title"]

Step = Callable[[StepContext, Any], Any]

CONTEXTUALIZE_INSTRUCTIONS = (
    "You prepare a search for a chat assistant. Rewrite the person's latest message as one standalone "
    "question that can be understood without the conversation (resolve pronouns and references; keep "
    "the person's language; do not answer it).{title} Reply with JSON only: {shape}"
)
COMPLETE_INSTRUCTIONS = (
    "Suggest {count} short follow-up questions the person might ask next, in the person's language, each "
    "answerable from the topic at hand and different from the question already asked. Reply with JSON "
    'only: {{"followups": ["...", ...]}}'
)
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s*")


# -- shared helpers -----------------------------------------------------------------------------


def short_title(text: str, limit: int) -> str | None:
    """``text`` on one line, at most ``limit`` characters (cut at a word, ending with an
    ellipsis); ``None`` for blank text."""
    line = " ".join(text.split())
    if not line:
        return None
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    if " " in cut[limit // 2:]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,.;:") + "\u2026"


def _model(ctx: StepContext, service: str) -> LLMPort | None:
    model = ctx.run.services.get(service) if ctx.run.services else None
    if model is None:
        return None
    problems = port_problems(model, LLMPort)
    if problems:
        raise StepError("SERVICE_MISMATCH", f"service {service!r} ({type(model).__name__}) is not a model "
                        f"(LLMPort): {'; '.join(problems)}")
    return model  # type: ignore[no-any-return]


async def _ask(ctx: StepContext, model: LLMPort, system: str, user: str, *, max_tokens: int,
               schema: Mapping[str, Any], purpose: str) -> str:
    request = ChatRequest((Message.system(system), Message.user(user)), output_schema=freeze(schema),
                          max_tokens=max_tokens)
    result = await Invoker(model, ToolRegistry()).chat(request, ctx.run, FrozenDict(purpose=f"conversation.{purpose}"))
    ctx.add_usage(result.usage)
    return result.text


def _json_object(text: str) -> dict[str, Any] | None:
    """The JSON object a reply holds (also inside a Markdown code fence), or ``None``."""
    m = _FENCE.match(text)
    raw = m.group(1) if m else text.strip()
    try:
        value = json.loads(raw)
    except ValueError:
        start, end = raw.find("{"), raw.rfind("}")
        if start < 0 or end <= start:
            return None
        try:
            value = json.loads(raw[start:end + 1])
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


def _render(history: Any) -> str:
    return "\n".join(f"{t['role']}: {t['text']}" for t in history)


def _memory(ctx: StepContext, cfg: MemoryServices) -> VectorMemory | None:
    """The run's memory (see the module doc): ``None`` when neither service is there. Raises
    :class:`~seamkit.workflows.StepError` ``MEMORY_INCOMPLETE`` when only one is, and
    ``SERVICE_MISMATCH`` for a service that is not the port it should be."""
    services = ctx.run.services or FrozenDict()
    vectors, embeddings = services.get(cfg.vectors_service), services.get(cfg.embeddings_service)
    if vectors is None and embeddings is None:
        return None
    if vectors is None or embeddings is None:
        have, lack = ((cfg.vectors_service, cfg.embeddings_service) if embeddings is None
                      else (cfg.embeddings_service, cfg.vectors_service))
        raise StepError("MEMORY_INCOMPLETE", f"the run has service {have!r} but no {lack!r}: memory needs both a "
                        "vector store and embeddings (or neither, for memory off)")
    for name, value, port in ((cfg.vectors_service, vectors, Port("the vector port (VectorPort)", VectorPort)),
                              (cfg.embeddings_service, embeddings,
                               Port("the embedding port (EmbeddingPort)", EmbeddingPort))):
        problems = port_problems(value, port)
        if problems:
            raise StepError("SERVICE_MISMATCH", f"service {name!r} ({type(value).__name__}) does not satisfy "
                            f"{port.label}: {'; '.join(problems)}")
    return VectorMemory(embeddings, vectors)


# -- contextualize ------------------------------------------------------------------------------


def build_contextualize(cfg: ContextualizeConfig) -> Step:
    """``use: contextualize``. Input: a conversation (``str``, or ``{"message", "history"?,
    "title"?}``). Output: a question, ``{"query": str, "title": str | None, "message": str,
    "history": [turn, ...]}``.

    With history and a model, one model call rewrites the message as a standalone ``query`` (from
    the newest ``max_history`` messages) and, for an untitled thread with ``title`` on, titles it;
    the reply asked for is ``{"query": ..., "title": ...}`` (a reply that is not JSON is taken
    whole as the query). With no history, or no model, there is no model call: the query is the
    message, and an untitled thread is titled with the message, cut to ``title_chars``. A title
    the input has is kept. Raises :class:`~seamkit.workflows.StepError` ``INVALID_STEP_INPUT``
    for another input shape; provider errors propagate."""

    async def contextualize(ctx: StepContext, data: Any) -> dict[str, Any]:
        conv = as_conversation(data)
        history = list(conv.history)
        title = conv.title
        want_title = cfg.title and not title
        query = conv.message
        model = _model(ctx, cfg.model_service) if history else None
        if model is not None:
            shape = '{"query": "...", "title": "..."}' if want_title else '{"query": "..."}'
            hint = (f" Also give the conversation a short title (at most {cfg.title_chars} characters)."
                    if want_title else "")
            system = cfg.instructions or CONTEXTUALIZE_INSTRUCTIONS.format(title=hint, shape=shape)
            props: dict[str, Any] = {"query": {"type": "string"}}
            if want_title:
                props["title"] = {"type": "string"}
            reply = await _ask(ctx, model, system,
                               f"Conversation so far:\n{_render(history[-cfg.max_history:])}\n\n"
                               f"Latest message:\n{conv.message}",
                               max_tokens=cfg.max_tokens, purpose="contextualize",
                               schema={"type": "object", "properties": props, "required": list(props)})
            got = _json_object(reply)
            if got is None:
                query = reply.strip() or conv.message
            else:
                if isinstance(got.get("query"), str) and got["query"].strip():
                    query = got["query"].strip()
                if want_title and isinstance(got.get("title"), str):
                    title = short_title(got["title"], cfg.title_chars)
        if want_title and not title:
            title = short_title(conv.message, cfg.title_chars)
        return {"query": query, "title": title, "message": conv.message, "history": history}

    return contextualize


# -- recall / remember --------------------------------------------------------------------------


def build_recall(cfg: RecallConfig) -> Step:
    """``use: recall``. Input: a query (``str``) or a question (its ``query``). Output:
    ``{"blocks": [{"id": citation id, "text", "score", "source", "origin"}, ...]}``, at most ``k``,
    best first (the vector store's score; below ``min_score`` left out), from the run's scope
    (tenant). Memory off (no vector store, no embeddings) or a blank query: ``{"blocks": []}``
    without touching anything. Raises :class:`~seamkit.workflows.StepError` ``MEMORY_INCOMPLETE``
    / ``SERVICE_MISMATCH`` (see the module doc), ``INVALID_STEP_INPUT``; store and embedding
    errors propagate."""

    async def recall(ctx: StepContext, data: Any) -> dict[str, Any]:
        query = query_of(data)
        memory = _memory(ctx, cfg)
        if memory is None or not query.strip():
            return {"blocks": []}
        items = await memory.retrieve(query, scope=ctx.run.scope, k=cfg.k)
        return {"blocks": [
            {"id": it.citation_id, "text": it.content, "score": it.score, "source": it.source, "origin": it.origin}
            for it in items if cfg.min_score is None or (it.score is not None and it.score >= cfg.min_score)]}

    return recall


def _field(data: Any, key: str, what: str) -> Any:
    if not isinstance(data, Mapping) or key not in data:
        have = ", ".join(map(str, data)) if isinstance(data, Mapping) else type(data).__name__
        raise StepError("INVALID_STEP_INPUT", f"remember takes {{{what!r}: ..., ...}} (the events it consumes, by "
                        f"type; configure 'question' / 'answer' to rename); the input has: {have}")
    return data[key]


def build_remember(cfg: RememberConfig) -> Step:
    """``use: remember``. Input: a mapping with the question under ``question`` (a ``str`` or a
    question: its standalone ``query``, else its ``message``) and the answer under ``answer`` (a
    ``str``, a mapping's ``"answer"`` / ``"text"``, or a typed output as JSON): what a step
    consuming the ``question`` and ``answer`` events receives. Output: ``{"id": item id,
    "source": item id}`` once stored, ``{}`` when memory is off or the answer is blank.

    Stores ``"Q: <question>\\nA: <answer>"`` (cut to ``max_chars``) as one vector item, id and
    source ``exchange:<the activation's run id>``, with ``origin: "inferred"`` (a model wrote the
    answer: grounding filters that treat recorded facts apart see it as such) and
    ``kind: "exchange"``; ``recall`` and ``vector_memory`` retrieve it.

    **Exactly once, durably.** The write (embed + upsert) runs through the run's effect ledger
    under ``<activation run id>:remember``: the workflow records the activation (and its run id)
    before it starts, so after a crash the rerun finds the completed receipt and writes nothing.
    The upsert is keyed by that same run id, so it is idempotent: a crash *during* the write
    (receipt left ``prepared``) is retried instead of being reported uncertain, and still leaves
    one item. Without a checkpointer the ledger lives in the process: nothing is durable then.

    **In the background** means off the answer's path, not detached: put ``remember`` where
    nothing waits for what it emits (it consumes ``question`` and ``answer``; ``complete`` and the
    workflow's outcome do not consume its event). The engine runs it as its own activation next to
    ``complete``; the answer is out (the answer step's ``finished`` event) before the write starts
    and the follow-ups do not wait for it. The workflow's run ends only when the write has, which
    is what makes it durable and its failure visible: a task left running after the step returned
    would be lost with the process and its error seen by nobody.

    Raises :class:`~seamkit.workflows.StepError` ``INVALID_STEP_INPUT``, ``MEMORY_INCOMPLETE``,
    ``SERVICE_MISMATCH``; :class:`~seamkit.errors.EffectUncertain` is never raised for this
    write (it is idempotent); store and embedding errors propagate (the step fails and is rerun
    on resume)."""

    async def remember(ctx: StepContext, data: Any) -> dict[str, Any]:
        q = _field(data, cfg.question, cfg.question)
        question = query_of(q)
        answer = text_of(_field(data, cfg.answer, cfg.answer), "the answer")
        memory = _memory(ctx, cfg)
        if memory is None or not answer.strip():
            return {}
        key = f"exchange:{ctx.run.run_id}"  # the activation's run id: the same when it runs again
        text = f"Q: {question.strip()}\nA: {answer.strip()}"[: cfg.max_chars]
        scope = ctx.run.scope

        async def write() -> str:
            (vector,) = await memory.embedder.embed([text])
            await memory.vectors.upsert(scope, [(key, vector, {
                "source": key, "content": text, "origin": "inferred", "kind": "exchange",
                "workflow_run_id": ctx.workflow_run_id})])
            return key

        ledger = ctx.run.effects
        if ledger is not None:
            await ledger.run(f"{ctx.run.run_id}:remember", write, idempotent=True)
        else:
            await ctx.run_effect("remember", write)
        return {"id": key, "source": key}

    return remember


# -- compose ------------------------------------------------------------------------------------


def _as_message(m: Mapping[str, str]) -> Message:
    return {"system": Message.system, "user": Message.user, "assistant": Message.assistant}[m["role"]](m["text"])


def build_compose(cfg: ComposeConfig) -> Step:
    """``use: compose`` (a join: it consumes the question and every gathering step's event, or,
    declared ``join``, a fan-out's branches). Input: anything :func:`~seamkit_conversation.shapes.as_blocks`
    reads: the question (or conversation) and ``{"blocks": [...]}`` payloads, by event type or in
    a list. Output::

        {"messages": [{"role": "system" | "user" | "assistant", "text": str}, ...],
         "blocks": [the blocks kept], "dropped_turns": int, "dropped_blocks": int,
         "tokens": int, "budget_tokens": int, "query": str, "title": str | None}

    ``messages``: the ``system`` message (when configured), then one system message with the
    gathered blocks (``heading``, then ``[id] text`` per block; none when there are no blocks),
    then the history turns kept, then the person's message: the task an ``agent_step`` answers
    (its own prompt comes first). ``tokens`` is the :func:`seamkit._tokens.estimate_message_tokens`
    sum of ``messages`` (``tokenizer_model``'s tokenizer when registered).

    Within ``budget_tokens``, older turns give way first: the newest turns are kept while they fit
    (a contiguous run ending at the message); then, with no turn left, the last blocks go (the
    order is the consumed events', each source's best first). The system messages and the
    person's message are never dropped: when they alone exceed the budget, ``tokens`` says by how
    much and the answering agent's own context handling decides. Raises
    :class:`~seamkit.workflows.StepError` ``INVALID_STEP_INPUT`` without a conversation, for two
    different ones, or for a payload it cannot read."""

    def count(messages: list[dict[str, str]]) -> int:
        return sum(estimate_message_tokens(_as_message(m), model=cfg.tokenizer_model) for m in messages)

    def context_message(blocks: list[dict[str, Any]]) -> list[dict[str, str]]:
        if not blocks:
            return []
        lines = [cfg.heading, *(f"[{b['id']}] {str(b['text']).strip()}" for b in blocks)]
        return [turn("system", "\n".join(lines))]

    async def compose(ctx: StepContext, data: Any) -> dict[str, Any]:
        blocks, conv = as_blocks(thaw(data))
        if conv is None:
            raise StepError("INVALID_STEP_INPUT", "compose found no conversation in its input (a mapping with "
                            "'message', e.g. contextualize's question): consume that event too")
        head = [turn("system", cfg.system)] if cfg.system else []
        tail = [turn("user", conv.message)]
        history = list(conv.history)
        fixed = count(head) + count(tail)
        # blocks first: the history only gets what they leave
        kept_blocks = list(blocks)
        while kept_blocks and fixed + count(context_message(kept_blocks)) > cfg.budget_tokens:
            kept_blocks.pop()
        used = fixed + count(context_message(kept_blocks))
        kept: list[dict[str, str]] = []
        for t in reversed(history):
            cost = count([t])
            if used + cost > cfg.budget_tokens:
                break
            kept.insert(0, t)
            used += cost
        messages = [*head, *context_message(kept_blocks), *kept, *tail]
        return {"messages": messages, "blocks": kept_blocks, "dropped_turns": len(history) - len(kept),
                "dropped_blocks": len(blocks) - len(kept_blocks), "tokens": count(messages),
                "budget_tokens": cfg.budget_tokens, "query": conv.query or conv.message, "title": conv.title}

    return compose


# -- complete -----------------------------------------------------------------------------------


def _lines(text: str) -> list[str]:
    return [_BULLET.sub("", line).strip().strip('"') for line in text.splitlines() if line.strip()]


def build_complete(cfg: CompleteConfig) -> Step:
    """``use: complete``. Input: the answer (a ``str``, or a mapping with it under ``"answer"``
    / ``"text"``); with several events consumed, a mapping whose ``"answer"`` is the answer and
    whose ``"question"``, when there, is the question (for context). Output ``{"followups": [str,
    ...], "answer": str}``: at most ``count`` distinct questions of at most ``max_chars``
    characters, and the answer passed on (so this step can end a chat workflow with both).

    One model call asks for ``{"followups": [...]}``; a reply that is not JSON is read one
    question per line (bullets and numbers dropped). No model service, ``count: 0`` or a blank
    answer: no call, ``[]``. Raises :class:`~seamkit.workflows.StepError` ``INVALID_STEP_INPUT``;
    provider errors propagate."""

    async def complete(ctx: StepContext, data: Any) -> dict[str, Any]:
        question: str | None = None
        # several events consumed: {"answer": payload, "question": payload, ...}
        source = data["answer"] if isinstance(data, Mapping) and "answer" in data else data
        if isinstance(data, Mapping) and "question" in data and data["question"] is not None:
            question = query_of(data["question"])
        answer = text_of(source, "the answer: a str or {'answer': str}")
        model = _model(ctx, cfg.model_service)
        if model is None or cfg.count == 0 or not answer.strip():
            return {"followups": [], "answer": answer}
        system = cfg.instructions or COMPLETE_INSTRUCTIONS.format(count=cfg.count)
        user = (f"Question:\n{question}\n\n" if question else "") + f"Answer:\n{answer}"
        reply = await _ask(ctx, model, system, user, max_tokens=cfg.max_tokens, purpose="complete", schema={
            "type": "object", "required": ["followups"],
            "properties": {"followups": {"type": "array", "items": {"type": "string"}, "maxItems": cfg.count}}})
        got = _json_object(reply)
        items = got.get("followups") if got is not None else None
        raw = [str(x) for x in items if isinstance(x, str)] if isinstance(items, list) else _lines(reply)
        out: list[str] = []
        for q in raw:
            q = " ".join(q.split())[: cfg.max_chars]
            if q and q not in out and q != question:
                out.append(q)
        return {"followups": out[: cfg.count], "answer": answer}

    return complete
