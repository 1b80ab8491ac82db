"""Fake priced models and helpers for the budget middleware tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from decimal import Decimal
from typing import Any

from seamkit._accumulate import collect_result
from seamkit._middleware import Call, Middleware, chain
from seamkit._pricing import Price
from seamkit._runtime.context import RunContext
from seamkit.errors import FailureClass, ProviderError
from seamkit.testing import make_test_ctx
from seamkit.values import ChatRequest, Delta, LLMResult, Message, ToolCallDelta, Usage

PRICE = Price(Decimal("1.00"), Decimal("2.00"))  # USD per million tokens


def request(text: str = "What is the capital of France?", max_tokens: int | None = 1000) -> ChatRequest:
    return ChatRequest(messages=(Message.user(text),), max_tokens=max_tokens)


class PricedModel:
    """A slow fake LLMPort with a price. Every stream counts one dispatch, waits ``delay`` seconds
    (real asyncio time, so concurrent calls overlap), yields ``text`` then a final delta whose usage
    reports ``cost`` (``None``: tokens only, unpriced usage; ``"none"``: no usage at all).
    ``fail``: ``"before"`` raises before any delta, ``"after_text"`` raises after the text,
    ``"after_partial_usage"`` reports a partial usage, then text, then raises."""

    provider = "fake"

    def __init__(self, *, price: Price | None = PRICE, cost: Decimal | str | None = Decimal("0.001"),
                 delay: float = 0.02, model: str = "fake-1", fail: str | None = None,
                 input_tokens: int = 100, output_tokens: int = 50, gate: asyncio.Event | None = None,
                 tool_first: str | None = None) -> None:
        self.price = price
        self.model = model
        self.cost = cost
        self.delay = delay
        self.fail = fail
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.gate = gate
        self.tool_first = tool_first
        self.dispatched = 0
        self.in_flight = 0
        self.max_in_flight = 0

    async def chat(self, request: ChatRequest) -> LLMResult:
        return await collect_result(self.stream(request), provider=self.provider, model=self.model)

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        self.dispatched += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.gate is not None:
                await self.gate.wait()
            else:
                await asyncio.sleep(self.delay)
            if self.fail == "before":
                raise ProviderError("upstream broke", FailureClass.SERVER_ERROR, provider=self.provider, status=500)
            cost = None if self.cost in (None, "none") else Decimal(self.cost)
            if self.tool_first is not None and self.dispatched == 1:
                yield Delta(tool_call=ToolCallDelta(0, "call_1", self.tool_first, "{}"))
                usage = Usage(self.input_tokens, self.output_tokens, requests=1, cost=cost,
                              cost_source="reported" if cost is not None else "unpriced")
                yield Delta(finish_reason="tool_calls", usage=usage)
                return
            if self.fail == "after_partial_usage":  # e.g. Anthropic's message_start usage, then an error event
                yield Delta(usage=Usage(self.input_tokens, 1, requests=1, cost=Decimal("0.0000001"),
                                        cost_source="estimated"))
            yield Delta(text="Paris")
            if self.fail in ("after_text", "after_partial_usage"):
                raise ProviderError("connection dropped", FailureClass.SERVER_ERROR, provider=self.provider)
            if self.cost == "none":
                yield Delta(finish_reason="stop")
                return
            usage = Usage(self.input_tokens, self.output_tokens, requests=1, cost=cost,
                          cost_source="reported" if cost is not None else "unpriced")
            yield Delta(finish_reason="stop", usage=usage)
        finally:
            self.in_flight -= 1


class LocalModel:
    """A fake local model: no ``price`` attribute at all."""

    provider = "local"
    model = "tiny"

    def __init__(self) -> None:
        self.dispatched = 0

    async def chat(self, request: ChatRequest) -> LLMResult:
        return await collect_result(self.stream(request), provider=self.provider, model=self.model)

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        self.dispatched += 1
        yield Delta(text="hi")
        yield Delta(finish_reason="stop", usage=Usage(10, 2, requests=1, cost=Decimal(0), cost_source="local"))


def terminal(call: Call) -> AsyncIterator[Any]:
    return call.model.stream(call.request)  # type: ignore[no-any-return]


def runner(mw: Middleware) -> Callable[..., Any]:
    """``await run(model, ctx=..., req=...)`` -> the list of deltas through ``mw``."""
    nxt = chain([mw], terminal, kind="chat")

    async def run(model: Any, *, ctx: RunContext | None = None, req: ChatRequest | None = None) -> list[Delta]:
        call = Call("chat", req or request(), ctx or make_test_ctx(), model=model)
        return [d async for d in nxt(call)]

    return run


def warnings_of(deltas: Sequence[Delta]) -> list[str]:
    return [d.warning for d in deltas if d.warning is not None]
