"""A counting fake model for the memoize tests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from decimal import Decimal

from seamkit._accumulate import collect_result
from seamkit._pricing import Price
from seamkit.errors import FailureClass, ProviderError
from seamkit.values import ChatRequest, Delta, FinishReason, LLMResult, Message, ToolCallDelta, Usage

PRICE = Price(Decimal("1.00"), Decimal("2.00"))  # USD per million tokens


def request(text: str = "What is 2 + 2?") -> ChatRequest:
    return ChatRequest(messages=(Message.user(text),), max_tokens=100)


class CountingModel:
    """An LLMPort that counts its calls, waits ``delay`` seconds (so concurrent calls overlap),
    ``gate`` (an event) holds every call until set; ``started`` is set once a call began; ``hold`` holds the rest
    of an answer after its first text delta. It
    answers ``text`` (and a tool call when ``tool``), with ``finish`` and a reported cost of
    $0.001; ``fail`` raises a ProviderError instead, once per listed call number (1-based)."""

    provider = "fake"
    __test__ = False

    def __init__(self, *, text: str = "4", tool: bool = False, finish: FinishReason | None = None,
                 delay: float = 0.05, fail: tuple[int, ...] = (), gate: asyncio.Event | None = None,
                 hold: asyncio.Event | None = None) -> None:
        self.model = "fake-1"
        self.price = PRICE
        self.text = text
        self.tool = tool
        self.finish = finish
        self.delay = delay
        self.fail = fail
        self.calls = 0
        self.gate = gate
        self.hold = hold
        self.started = asyncio.Event()

    async def chat(self, request: ChatRequest) -> LLMResult:
        return await collect_result(self.stream(request), provider=self.provider, model=self.model)

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        self.calls += 1
        n = self.calls
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        await asyncio.sleep(self.delay)
        if n in self.fail:
            raise ProviderError("overloaded", FailureClass.OVERLOADED, provider=self.provider)
        yield Delta(reasoning="think", reasoning_signature="sig")
        yield Delta(text=self.text[:1])
        if self.hold is not None:
            await self.hold.wait()
        if len(self.text) > 1:
            yield Delta(text=self.text[1:])
        if self.tool:
            yield Delta(tool_call=ToolCallDelta(0, "call_1", "calc", json.dumps({"expr": "2+2"})))
        finish = self.finish or ("tool_calls" if self.tool else "stop")
        yield Delta(usage=Usage(120, 30, 20, 0, 5, 1, Decimal("0.001"), "reported"), finish_reason=finish,
                    model="fake-1-2026")
