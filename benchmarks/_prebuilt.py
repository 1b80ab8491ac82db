"""The prebuilt-reply W1/W2 models and the inline ``add`` tool that ``benchmarks/run.py`` used until
issue 19, kept for ``otel_bench.py`` and ``guardrails_bench.py``: they compare a middleware with no
middleware on the same agent, so what matters there is the difference, and the cheapest model makes
it show. ``run.py`` no longer uses them: the peer harness builds the model's stream on every call and
its tool is an ``async def`` (see benchmarks/README.md)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from decimal import Decimal

from seamkit import tool
from seamkit.values import ChatRequest, Delta, LLMResult, ToolCallDelta, Usage

__all__ = ["W1Model", "W2Model", "add"]

FREE = Usage(requests=1, cost=Decimal(0), cost_source="local")


@tool(side_effecting=False, blocking=False)
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first addend
        b: second addend
    """
    return a + b


class _Deltas:
    """An async iterator over precomputed deltas (what a fast provider looks like)."""

    __slots__ = ("_it",)

    def __init__(self, deltas: tuple[Delta, ...]) -> None:
        self._it = iter(deltas)

    def __aiter__(self) -> _Deltas:
        return self

    async def __anext__(self) -> Delta:
        try:
            return next(self._it)
        except StopIteration:
            raise StopAsyncIteration from None


class W1Model:
    provider = "bench"
    model = "bench"

    def __init__(self, tool_name: str = "add") -> None:
        self.turns = (
            (Delta(tool_call=ToolCallDelta(0, "call_1", tool_name, '{"a": 2, "b": 3}')),
             Delta(usage=FREE, finish_reason="tool_calls")),
            (Delta(text="5"), Delta(usage=FREE, finish_reason="stop")),
        )
        self.i = 0

    def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        t = self.turns[self.i & 1]
        self.i += 1
        return _Deltas(t)

    async def chat(self, request: ChatRequest) -> LLMResult:
        raise NotImplementedError


class W2Model:
    """Every turn but the last calls ``add``; the deltas are built up front (a provider's own
    work is not the loop's cost), and each call records when it started."""

    provider = "bench"
    model = "bench"

    def __init__(self, turns: int) -> None:
        self.turns = [
            (Delta(tool_call=ToolCallDelta(0, f"call_{n}", "add", '{"a": 2, "b": 3}')),
             Delta(usage=FREE, finish_reason="tool_calls"))
            for n in range(1, turns)
        ] + [(Delta(text="done"), Delta(usage=FREE, finish_reason="stop"))]
        self.stamps: list[float] = []

    def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        self.stamps.append(time.perf_counter())
        return _Deltas(self.turns[len(self.stamps) - 1])

    async def chat(self, request: ChatRequest) -> LLMResult:
        raise NotImplementedError
