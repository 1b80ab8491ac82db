"""What both LLM compactors share: building the model from its slot, calling it through an
:class:`~seamkit._runtime.invoker.Invoker` with the run's context, splitting a transcript into
head / older units / recent units, rendering units as text, and reporting notes."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from seamkit import Invoker, ToolRegistry
from seamkit.plugin import (
    LLMPort,
    Middleware,
    Registry,
    RunContext,
    build_nested,
    split_leading_system,
    transcript_tokens,
    turn_units,
)
from seamkit.values import (
    ChatRequest,
    FrozenDict,
    ImageBlock,
    LLMResult,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCall,
    ToolResult,
    Usage,
    thaw,
)

from seamkit_compactors_llm.config import ModelSlot

__all__ = ["NOTES_KEY", "USAGE_KEY", "Split", "build_model", "call_model", "note", "render_units", "split"]

logger = logging.getLogger("seamkit.compaction")  # the host's compactors log there too

NOTES_KEY = "seamkit.compaction.notes"
"""``ctx.state`` key: a list of strings, the warnings compactors raised in this run (the
``compaction`` middleware moves them onto the call's result)."""

USAGE_KEY = "seamkit.compaction.usage"
"""``ctx.state`` key: the summed :class:`~seamkit.values.Usage` of the compactors' model calls in
this run."""

Unit = tuple[Message, ...]


def build_model(slot: ModelSlot, *, at: str = "model", registry: Registry | None = None) -> LLMPort:
    """Build the provider named by ``slot`` (:func:`seamkit._slots.build_nested`). Raises
    :class:`~seamkit.errors.ConfigError` located at ``at`` (unknown provider, invalid parameters)
    or :class:`~seamkit.errors.PluginError` (it cannot be built)."""
    model: LLMPort = build_nested("provider", slot, at=at, registry=registry)
    return model


def note(ctx: RunContext | None, message: str) -> None:
    """Record a compactor warning: logged on ``seamkit._compaction`` and, with a ``ctx``, appended
    to ``ctx.state[NOTES_KEY]``."""
    logger.warning("%s", message)
    if ctx is not None:
        ctx.state.setdefault(NOTES_KEY, []).append(message)


async def call_model(model: LLMPort, middlewares: Sequence[Middleware], request: ChatRequest,
                     ctx: RunContext | None, purpose: str) -> LLMResult:
    """One model call through an :class:`~seamkit._runtime.invoker.Invoker` (so ``middlewares``,
    e.g. budget or tracing ones, see it like any chat call, with ``meta={"purpose": purpose}``),
    in the run's ``ctx`` (a fresh context when ``None``). When the run has a ``tracer`` service
    (:class:`~seamkit._ports.TracePort`) the call is wrapped in a span ``compaction.<purpose>``.
    Its usage is added to ``ctx.state[USAGE_KEY]``. Provider errors propagate."""
    run_ctx = ctx if ctx is not None else RunContext()
    invoker = Invoker(model, ToolRegistry(), middlewares)
    tracer = run_ctx.services.get("tracer") if run_ctx.services else None
    span = None
    if tracer is not None:
        span = tracer.start_span(f"compaction.{purpose}", {
            "provider": getattr(model, "provider", "?"), "model": getattr(model, "model", "?"),
            "messages": len(request.messages)})
    try:
        result = await invoker.chat(request, run_ctx, FrozenDict(purpose=purpose))
    except BaseException as exc:
        if span is not None:
            tracer.end_span(span, error=exc)  # type: ignore[union-attr]
        raise
    if span is not None:
        tracer.end_span(span)  # type: ignore[union-attr]
    if ctx is not None:
        prev: Usage = ctx.state.get(USAGE_KEY, Usage())
        ctx.state[USAGE_KEY] = prev + result.usage
    return result


class Split:
    """A transcript split for an LLM compactor: ``head`` (the leading system message, or empty),
    ``older`` (the units a model may rewrite or drop) and ``recent`` (the ``keep`` newest units,
    always kept). ``head_tokens`` / ``recent_tokens`` are their estimates (tokens)."""

    __slots__ = ("head", "head_tokens", "older", "recent", "recent_tokens")

    def __init__(self, messages: Sequence[Message], keep: int) -> None:
        system, rest = split_leading_system(messages)
        self.head: tuple[Message, ...] = (system,) if system is not None else ()
        units = turn_units(rest)
        cut = max(0, len(units) - keep)
        self.older: list[Unit] = units[:cut]
        self.recent: list[Unit] = units[cut:]
        self.head_tokens = transcript_tokens(self.head)
        self.recent_tokens = sum(transcript_tokens(u) for u in self.recent)

    def assemble(self, middle: Sequence[Message]) -> tuple[Message, ...]:
        """``head + middle + recent`` as one transcript."""
        return (*self.head, *middle, *(m for u in self.recent for m in u))


def split(messages: Sequence[Message], keep: int) -> Split:
    """See :class:`Split`."""
    return Split(messages, keep)


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]} [... {len(text) - 2 * half} characters left out ...] {text[len(text) - half:]}"


def _render_message(m: Message, limit: int) -> list[str]:
    lines: list[str] = []
    for b in m.content:
        t = type(b)
        if t is TextBlock:
            lines.append(f"{m.role}: {_clip(b.text, limit)}")  # type: ignore[union-attr]
        elif t is ToolCall:
            args = json.dumps(thaw(b.arguments), ensure_ascii=False)  # type: ignore[union-attr]
            lines.append(f"{m.role} called tool {b.name} (id {b.id}) with {_clip(args, limit)}")  # type: ignore[union-attr]
        elif t is ToolResult:
            kind = "error" if b.is_error else "result"  # type: ignore[union-attr]
            lines.append(f"tool {b.name} {kind} (id {b.call_id}): {_clip(b.content, limit)}")  # type: ignore[union-attr]
        elif t is ReasoningBlock:
            continue  # private to the model that wrote it; never shown to another model
        elif t is ImageBlock:
            lines.append(f"{m.role}: [an image]")
    return lines


def render_units(units: Sequence[Unit], *, limit: int, numbered: bool = False) -> str:
    """``units`` as plain text, one line per block (reasoning left out, each block's text cut to
    ``limit`` characters). ``numbered``: each unit starts with ``[i] (N tokens)``."""
    out: list[str] = []
    for i, unit in enumerate(units):
        lines = [line for m in unit for line in _render_message(m, limit)]
        if numbered:
            out.append(f"[{i}] ({transcript_tokens(unit)} tokens)")
            out.extend("    " + line for line in lines)
        else:
            out.extend(lines)
    return "\n".join(out)


def dump_any(value: Any) -> str:
    """``value`` as compact JSON (for warnings)."""
    try:
        return json.dumps(value, ensure_ascii=False)[:200]
    except (TypeError, ValueError):
        return repr(value)[:200]
