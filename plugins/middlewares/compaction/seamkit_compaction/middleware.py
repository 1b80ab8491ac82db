"""The ``compaction`` middleware: compacts a chat request that is over its token budget.

For each chat call (tool calls are not wrapped):

1. **Check.** The request's estimate (:func:`seamkit._tokens.estimate_tokens`: messages, tool
   schemas, output schema) is compared with the budget (``budget_tokens``, or ``budget_fraction``
   of the model's context window). Within it: the request goes on unchanged.
2. **Reuse.** When this run has a stored summary (see 4) and the request's messages after the
   leading system message start with the span it stands for, that span is replaced by the summary.
   Now within the budget: this request goes on.
3. **Compact.** Otherwise the compactor rewrites the messages with a budget of the budget minus
   what is not messages (tool schemas, output schema, reply priming), in the run's context. The
   rewrite is checked with :func:`seamkit._compaction.check_invariants`; an empty rewrite, or one that
   breaks an invariant, is **refused**: the request goes on as it was before the compactor (step 2
   applied) and the result carries ``Delta(warning="compaction refused: ...")`` saying why.
   Exceptions of the compactor (a summariser's provider error) propagate.
4. **Remember.** With a summarising compactor (``summarizes = True``, e.g. ``summarization``), a new
   summary in the rewrite is stored for the run, with the original messages it stands for (an
   earlier summary it folded in expands to its own span), so the next turn reuses it (step 2) and
   only what is new gets compacted. Summaries are kept in this middleware instance, keyed by run
   id, for the ``max_tracked_runs`` most recently used runs.

What it did is recorded on the result, before the first model delta, as
``Delta(warning="compacted 42 messages (81,234 -> 3,900 tokens) with truncation")`` (the message
count is the original messages not sent verbatim; the tokens are request estimates; a compactor
that changed nothing gives ``"compaction: <name> left the request as it was (...)"``), plus
``"compaction: <note>"`` for each warning the compactor noted in
``ctx.state["seamkit.compaction.notes"]`` during the call. A run's ``tracer`` service
(:class:`~seamkit._ports.TracePort`) gets one ``compaction`` span per compaction, with its outcome.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from seamkit.errors import ConfigError, ConfigIssue
from seamkit.plugin import (
    Call,
    CompactorPort,
    Next,
    Registry,
    RunContext,
    build_nested,
    check_invariants,
    estimate_tokens,
    is_summary,
    middleware,
    split_leading_system,
    transcript_tokens,
)
from seamkit.values import ChatRequest, Delta, Message

from seamkit_compaction.config import CompactionConfig

__all__ = ["Compaction", "StoredSummary", "build", "NOTES_KEY"]

NOTES_KEY = "seamkit.compaction.notes"
"""``ctx.state`` key where compactors append their warnings (a list of strings); this middleware
moves the ones added during a call onto that call's result."""


@dataclass(frozen=True, slots=True)
class StoredSummary:
    """A run's kept summary: ``summary`` (the message sent instead of ``span``) and ``span``, the
    original messages (right after the leading system message) it stands for."""

    span: tuple[Message, ...]
    summary: Message


def _context_window(model: Any) -> int | None:
    for value in (getattr(model, "context_window", None),
                  getattr(getattr(model, "config", None), "n_ctx", None)):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _changed(before: Sequence[Message], after: Sequence[Message]) -> int:
    """How many messages of ``before`` are not in ``after`` verbatim (as a multiset)."""
    left = Counter(after)
    n = 0
    for m in before:
        if left[m] > 0:
            left[m] -= 1
        else:
            n += 1
    return n


class Compaction:
    """The ``compaction`` middleware (see the module doc). ``config``: a :class:`CompactionConfig`.
    ``compactor``: the :class:`~seamkit._compaction.CompactorPort` to use (default: built from
    ``config.compactor`` through ``registry``, the process-wide one by default). Raises
    :class:`~seamkit.errors.ConfigError` located at ``compactor`` when it names an unknown
    compactor or invalid parameters."""

    def __init__(self, config: CompactionConfig, *, compactor: CompactorPort | None = None,
                 registry: Registry | None = None) -> None:
        self.config = config
        self.compactor: CompactorPort = compactor if compactor is not None else self._build(config, registry)
        self._summaries: OrderedDict[str, StoredSummary] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _build(config: CompactionConfig, registry: Registry | None) -> CompactorPort:
        built: CompactorPort = build_nested("compactor", config.compactor, at="compactor", registry=registry)
        return built

    def __repr__(self) -> str:
        budget = (f"budget_tokens={self.config.budget_tokens}" if self.config.budget_tokens is not None
                  else f"budget_fraction={self.config.budget_fraction}")
        return f"Compaction(compactor={getattr(self.compactor, 'name', '?')}, {budget})"

    # -- kept summaries ---------------------------------------------------------------------

    def summary(self, run_id: str) -> StoredSummary | None:
        """The summary kept for ``run_id``, if any."""
        with self._lock:
            return self._summaries.get(run_id)

    def _store(self, run_id: str, stored: StoredSummary) -> None:
        with self._lock:
            self._summaries[run_id] = stored
            self._summaries.move_to_end(run_id)
            while len(self._summaries) > self.config.max_tracked_runs:
                self._summaries.popitem(last=False)

    def _reuse(self, run_id: str, head: tuple[Message, ...], rest: tuple[Message, ...]
               ) -> tuple[tuple[Message, ...], StoredSummary | None]:
        with self._lock:
            stored = self._summaries.get(run_id)
            if stored is not None:
                self._summaries.move_to_end(run_id)
        if stored is None or len(stored.span) > len(rest) or rest[:len(stored.span)] != stored.span:
            return (*head, *rest), None
        return (*head, stored.summary, *rest[len(stored.span):]), stored

    def _remember(self, run_id: str, head_len: int, given: tuple[Message, ...], out: tuple[Message, ...],
                  reused: StoredSummary | None) -> None:
        """Store the new summary of ``out`` (a rewrite of ``given``): ``out == head + [summary] +
        tail`` with ``tail`` a suffix of ``given``."""
        if len(out) <= head_len or not is_summary(out[head_len]):
            return
        summary = out[head_len]
        tail = out[head_len + 1:]
        if len(tail) > len(given) - head_len or given[len(given) - len(tail):] != tail:
            return
        covered = given[head_len:len(given) - len(tail)]
        if not covered or covered == (summary,):
            return
        span: list[Message] = []
        for m in covered:
            if reused is not None and m == reused.summary:
                span.extend(reused.span)
            elif is_summary(m):
                return  # a summary this middleware did not make: its span is unknown
            else:
                span.append(m)
        self._store(run_id, StoredSummary(tuple(span), summary))

    # -- the middleware ---------------------------------------------------------------------

    def budget_for(self, model: Any) -> int:
        """The request budget in tokens for ``model``. Raises :class:`~seamkit.errors.ConfigError`
        when ``budget_fraction`` is set but the context window is unknown."""
        cfg = self.config
        if cfg.budget_tokens is not None:
            return cfg.budget_tokens
        window = cfg.context_tokens or _context_window(model)
        if window is None:
            label = f"{getattr(model, 'provider', '?')}:{getattr(model, 'model', '?')}"
            raise ConfigError([ConfigIssue(
                f"budget_fraction needs the model's context window, and {label} does not say it "
                f"(no context_window attribute nor config.n_ctx): set context_tokens or use budget_tokens",
                "context_tokens")])
        assert cfg.budget_fraction is not None
        return max(1, int(window * cfg.budget_fraction))

    async def rewrite(self, request: ChatRequest, ctx: RunContext, model: Any = None
                      ) -> tuple[ChatRequest, list[str]]:
        """The request to send instead of ``request`` and the warnings to record (see the module
        doc). Raises what the compactor raises."""
        warnings: list[str] = []
        budget = self.budget_for(model)
        original = request.messages
        before_tokens = estimate_tokens(request)
        if not original or before_tokens <= budget:
            return request, warnings
        system, rest = split_leading_system(original)
        head: tuple[Message, ...] = (system,) if system is not None else ()
        given, reused = self._reuse(ctx.run_id, head, rest)
        working = request if reused is None else request.replace(messages=given)
        working_tokens = estimate_tokens(working)
        name = getattr(self.compactor, "name", type(self.compactor).__name__)
        reuse_note = (f"; reused the summary of {len(reused.span)} earlier messages"
                      if reused is not None else "")
        if working_tokens <= budget:
            if reused is not None:
                warnings.append(f"compacted {_changed(original, given)} messages ({before_tokens:,} -> "
                                f"{working_tokens:,} tokens) with {name}{reuse_note}")
            return working, warnings
        overhead = working_tokens - transcript_tokens(given)
        message_budget = max(1, budget - overhead)
        notes: list[Any] = ctx.state.setdefault(NOTES_KEY, [])
        seen = len(notes)
        tracer = ctx.services.get("tracer") if ctx.services else None
        out = tuple(await self.compactor.compact(given, budget_tokens=message_budget, ctx=ctx))
        noted = [f"compaction: {n}" for n in ctx.state.get(NOTES_KEY, [])[seen:]]
        problems = check_invariants(given, out, budget_tokens=message_budget)
        if problems:
            why = ("the compactor returned an empty transcript" if not out
                   else f"the rewrite breaks the compaction invariants: {'; '.join(problems)}")
            warnings.append(f"compaction refused: {name}: {why}; the request was sent unchanged "
                            f"({working_tokens:,} tokens, budget {budget:,}){reuse_note}")
            self._trace(tracer, {"compactor": name, "outcome": "refused", "reason": why,
                                 "tokens_before": before_tokens, "budget": budget})
            return working, warnings + noted
        final = working.replace(messages=out)
        after_tokens = estimate_tokens(final)
        if getattr(self.compactor, "summarizes", False):
            self._remember(ctx.run_id, len(head), given, out, reused)
        changed = _changed(original, out)
        if changed:
            warnings.append(f"compacted {changed} messages ({before_tokens:,} -> {after_tokens:,} "
                            f"tokens) with {name}{reuse_note}")
        else:
            warnings.append(f"compaction: {name} left the request as it was ({before_tokens:,} tokens, "
                            f"budget {budget:,})")
        warnings.extend(noted)
        if changed and after_tokens > budget:
            warnings.append(f"compaction: the request is still over the budget ({after_tokens:,} > {budget:,} "
                            f"tokens) after {name}")
        self._trace(tracer, {"compactor": name, "outcome": "compacted", "tokens_before": before_tokens,
                             "tokens_after": after_tokens, "budget": budget})
        return final, warnings

    @staticmethod
    def _trace(tracer: Any, attributes: dict[str, Any]) -> None:
        if tracer is not None:
            tracer.end_span(tracer.start_span("compaction", attributes))

    async def __call__(self, call: Call, nxt: Next) -> AsyncIterator[Any]:
        if call.kind != "chat":
            async for item in nxt(call):
                yield item
            return
        request: ChatRequest = call.request  # type: ignore[assignment]
        new, warnings = await self.rewrite(request, call.ctx, call.model)
        if new is not request:
            call = call.replace(request=new)
        for w in warnings:
            yield Delta(warning=w)
        async for item in nxt(call):
            yield item


def build(config: CompactionConfig) -> Compaction:
    """Factory of the ``compaction`` component: a :class:`Compaction` for chat calls only. Raises
    :class:`~seamkit.errors.ConfigError` (located at ``compactor``) for an unknown compactor or
    invalid compactor parameters."""
    return middleware(kinds=("chat",))(Compaction(config))  # type: ignore[return-value]
