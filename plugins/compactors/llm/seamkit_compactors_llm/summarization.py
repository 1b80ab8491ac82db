"""The ``summarization`` compactor: a model summarises the older middle of a transcript.

When ``transcript_tokens(messages) > budget_tokens`` (estimates of :mod:`seamkit._tokens`):

1. the transcript is split into the leading system message (kept verbatim), the *older* units and
   the ``keep_recent_units`` newest units (kept verbatim; a unit is an assistant tool-call turn with
   all of its tool results, or any other single message, :func:`seamkit._compaction.turn_units`);
2. the older units are rendered as text (reasoning left out, long blocks cut to ``max_block_chars``)
   and sent to ``model`` with ``instructions`` as system prompt and ``max_tokens =
   max_summary_tokens``, through an :class:`~seamkit._runtime.invoker.Invoker` in the run's context
   (its middlewares see it like any chat call, ``meta.purpose == "summarization"``; a run's
   ``tracer`` service gets a ``compaction.summarization`` span; the usage is summed in
   ``ctx.state["seamkit.compaction.usage"]``);
3. the answer becomes one :func:`seamkit._compaction.summary_message` standing where the older units
   were: ``system? + [summary] + recent units``.

An earlier summary among the older units is summarised with them (folded in), so a summary never
grows without bound; older units that are only summaries already are not summarised again.
Nothing (new) older to summarise, or an empty answer: the transcript comes back
unchanged and a warning is noted (``seamkit._compaction`` logger and
``ctx.state["seamkit.compaction.notes"]``, which the ``compaction`` middleware reports). The result
may still exceed the budget when the kept units alone do (noted too). Provider errors propagate.

The ``compaction`` middleware keeps this compactor's summaries per run (``summarizes = True``) so a
span is summarised once, not again on every later turn.
"""

from __future__ import annotations

from collections.abc import Sequence

from seamkit.plugin import LLMPort, Middleware, Registry, RunContext, is_summary, summary_message, transcript_tokens
from seamkit.values import ChatRequest, Message

from seamkit_compactors_llm._llm import Split, build_model, call_model, note, render_units
from seamkit_compactors_llm.config import SummarizationConfig

__all__ = ["SummarizationCompactor", "build"]


class SummarizationCompactor:
    """The ``summarization`` compactor (see the module doc); a
    :class:`~seamkit._compaction.CompactorPort`.

    ``config``: a :class:`~seamkit_compactors_llm.config.SummarizationConfig`. ``model``: the
    :class:`~seamkit._ports.LLMPort` to call (default: built from ``config.model`` through
    ``registry``, raising :class:`~seamkit.errors.ConfigError` located at ``model``).
    ``middlewares``: wrap the summarising call (budget, tracing...), outermost first.
    """

    name = "summarization"
    summarizes = True  # the compaction middleware keeps and reuses its summaries

    def __init__(self, config: SummarizationConfig, *, model: LLMPort | None = None,
                 middlewares: Sequence[Middleware] = (), registry: Registry | None = None) -> None:
        self.config = config
        self.model: LLMPort = model if model is not None else build_model(config.model, registry=registry)
        self.middlewares = tuple(middlewares)

    def __repr__(self) -> str:
        return (f"SummarizationCompactor(model={getattr(self.model, 'provider', '?')}:"
                f"{getattr(self.model, 'model', '?')}, keep_recent_units={self.config.keep_recent_units})")

    def request_for(self, units: Sequence[tuple[Message, ...]], budget_tokens: int,
                    max_tokens: int | None = None) -> ChatRequest:
        """The summarising request for the older ``units``: the summary may take at most
        ``max_tokens`` (default ``max_summary_tokens``) output tokens."""
        cfg = self.config
        cap = cfg.max_summary_tokens if max_tokens is None else max_tokens
        text = render_units(units, limit=cfg.max_block_chars)
        prompt = (
            f"Summarise this earlier part of the conversation ({len(units)} turns). Lines starting with "
            f"an earlier summary are part of it: fold them into yours. Keep it well under "
            f"{cap} tokens.\n\n<conversation>\n{text}\n</conversation>"
        )
        return ChatRequest((Message.system(cfg.instructions), Message.user(prompt)),
                           temperature=cfg.temperature, max_tokens=cap)

    async def compact(self, messages: Sequence[Message], *, budget_tokens: int,
                      ctx: RunContext | None = None) -> tuple[Message, ...]:
        """``messages`` rewritten to fit ``budget_tokens`` (tokens) by summarising the older middle
        (see the module doc); unchanged when they already fit. Raises what the model raises
        (:class:`~seamkit.errors.ProviderError`)."""
        msgs = tuple(messages)
        before = transcript_tokens(msgs)
        if not msgs or before <= budget_tokens:
            return msgs
        sp = Split(msgs, self.config.keep_recent_units)
        if not sp.older:
            note(ctx, f"summarization: nothing to summarise: the transcript ({before} tokens, budget "
                      f"{budget_tokens}) has no unit older than the {self.config.keep_recent_units} kept ones")
            return msgs
        if all(len(u) == 1 and is_summary(u[0]) for u in sp.older):
            note(ctx, f"summarization: nothing new to summarise: the units older than the "
                      f"{self.config.keep_recent_units} kept ones are already a summary ({before} tokens, "
                      f"budget {budget_tokens})")
            return msgs
        # The summary may take what the budget leaves beside the kept units, and never more than
        # half of what it replaces: a longer summary would only grow the request.
        older = before - sp.head_tokens - sp.recent_tokens
        room = budget_tokens - sp.head_tokens - sp.recent_tokens
        cap = max(16, min(self.config.max_summary_tokens, room, older // 2))
        result = await call_model(self.model, self.middlewares, self.request_for(sp.older, budget_tokens, cap),
                                  ctx, "summarization")
        text = result.text.strip()
        if not text:
            note(ctx, f"summarization: the model ({getattr(self.model, 'model', '?')}) answered with an empty "
                      f"summary; the transcript was left unchanged")
            return msgs
        out = sp.assemble((summary_message(text, role=self.config.summary_role),))
        after = transcript_tokens(out)
        if after >= before:
            note(ctx, f"summarization: the summary ({after} tokens in all) is not smaller than what it would "
                      f"replace ({before}); the transcript was left unchanged")
            return msgs
        if after > budget_tokens:
            note(ctx, f"summarization: still over the budget after summarising {len(sp.older)} units "
                      f"({after} > {budget_tokens} tokens; the kept units alone take "
                      f"{sp.head_tokens + sp.recent_tokens})")
        return out


def build(config: SummarizationConfig) -> SummarizationCompactor:
    """Factory of the ``summarization`` component. Raises :class:`~seamkit.errors.ConfigError`
    (located at ``model``) when the model slot names an unknown provider or invalid parameters."""
    return SummarizationCompactor(config)
