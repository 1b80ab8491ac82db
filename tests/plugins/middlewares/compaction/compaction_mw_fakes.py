"""Fakes for the compaction middleware tests: a fixed-answer compactor, a tracer, transcripts of
known size, and a helper running one chat call through the middleware."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from seamkit._accumulate import collect_result
from seamkit._middleware import Call, Middleware, chain
from seamkit._runtime.context import RunContext
from seamkit.values import EMPTY, ChatRequest, LLMResult, Message, ToolCall, ToolResult, freeze


def filler(tokens: int, word: str = "lorem") -> str:
    """Text of about ``tokens`` estimated tokens (one word per token)."""
    return " ".join([word] * tokens)


class FakeCompactor:
    """A compactor answering ``rewrite(messages)``; records ``(messages, budget_tokens, ctx)``."""

    name = "fake"

    def __init__(self, rewrite: Callable[[tuple[Message, ...]], Sequence[Message]],
                 notes: Sequence[str] = ()) -> None:
        self.rewrite = rewrite
        self.notes = list(notes)
        self.calls: list[tuple[tuple[Message, ...], int, RunContext | None]] = []

    async def compact(self, messages: Sequence[Message], *, budget_tokens: int,
                      ctx: RunContext | None = None) -> tuple[Message, ...]:
        msgs = tuple(messages)
        self.calls.append((msgs, budget_tokens, ctx))
        if ctx is not None:
            ctx.state.setdefault("seamkit.compaction.notes", []).extend(self.notes)
        return tuple(self.rewrite(msgs))


class RecordingTracer:
    """A TracePort keeping ``(name, attributes)`` per ended span."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, dict[str, Any]]] = []

    def start_span(self, name: str, attributes: Any) -> Any:
        return (name, dict(attributes))

    def end_span(self, span: Any, *, error: BaseException | None = None) -> None:
        self.spans.append(span)


def unit(i: int, size: int = 100) -> tuple[Message, ...]:
    """Unit ``i``: a user message (even ``i``) or an assistant tool call with its result (odd)."""
    if i % 2 == 0:
        return (Message.user(f"unit {i} " + filler(size)),)
    return (Message("assistant", (ToolCall(f"c{i}", "lookup", freeze({"q": f"topic {i}"})),)),
            Message("tool", (ToolResult(f"c{i}", "lookup", f"unit {i} " + filler(size, "result")),)))


def transcript(n: int, size: int = 100, *, start: int = 0) -> tuple[Message, ...]:
    """Units ``start..start+n-1`` (see :func:`unit`)."""
    return tuple(m for i in range(start, start + n) for m in unit(i, size))


SYSTEM = Message.system("You are terse.")


async def chat_through(mw: Middleware, model: Any, request: ChatRequest, ctx: RunContext) -> LLMResult:
    """One chat call through ``mw`` ending at ``model``; the collected result."""
    nxt = chain([mw], lambda call: model.stream(call.request), kind="chat")
    return await collect_result(nxt(Call("chat", request, ctx, EMPTY, model)), provider=model.provider,
                                model=model.model)
