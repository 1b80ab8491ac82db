"""Fakes for the LLM compactor tests: a recording middleware, a recording tracer and helpers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from hypothesis import strategies as st
from seamkit._compaction import split_leading_system, transcript_tokens, turn_units
from seamkit._middleware import Call, Next
from seamkit.values import Message


class RecordingMiddleware:
    """A chat middleware recording every call it sees (``calls``: (meta, run_id))."""

    kinds = frozenset({"chat"})

    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, Any], str]] = []

    async def __call__(self, call: Call, nxt: Next) -> AsyncIterator[Any]:
        self.calls.append((dict(call.meta), call.ctx.run_id))
        async for d in nxt(call):
            yield d


class RecordingTracer:
    """A :class:`~seamkit._ports.TracePort` keeping ``(name, attributes, error)`` per ended span."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, dict[str, Any], BaseException | None]] = []

    def start_span(self, name: str, attributes: Any) -> Any:
        return (name, dict(attributes))

    def end_span(self, span: Any, *, error: BaseException | None = None) -> None:
        self.spans.append((span[0], span[1], error))


def budgets(msgs: tuple[Message, ...]) -> st.SearchStrategy[int]:
    """Budgets from below zero to above the transcript's size, often at a unit boundary."""
    total = transcript_tokens(msgs)
    system, rest = split_leading_system(msgs)
    base = transcript_tokens([system]) if system else 0
    edges, acc = [], base
    for u in reversed(turn_units(rest)):
        acc += transcript_tokens(u)
        edges += [acc - 1, acc]
    return st.one_of(st.integers(-5, total + 5), st.sampled_from([base, total, *edges]))


def filler(tokens: int, word: str = "lorem") -> str:
    """Text of about ``tokens`` estimated tokens (one word per token)."""
    return " ".join([word] * tokens)
