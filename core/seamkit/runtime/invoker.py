"""The ``Invoker``: runs chat and tool calls through their middleware chains."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from seamkit.accumulate import Accumulator, checked_stream
from seamkit.errors import UnknownToolError
from seamkit.middleware import Call, Middleware, Next, chain, collect_one
from seamkit.ports import LLMPort
from seamkit.runtime.context import RunContext
from seamkit.tools.registry import ToolRegistry
from seamkit.values import EMPTY, ChatRequest, Delta, FrozenDict, LLMResult, ToolCall, ToolRequest, ToolResult

__all__ = ["Invoker", "render_tool_value"]


def render_tool_value(value: Any) -> str:
    """A tool's return value as tool-result text: ``str`` as is, anything else as JSON (pydantic
    models, dataclasses, ``Decimal``, ``datetime`` included)."""
    t = type(value)
    if t is str:
        return value  # type: ignore[no-any-return]
    if t is int:
        return str(value)
    if t is bool or value is None:
        return json.dumps(value)
    import pydantic_core

    return pydantic_core.to_json(value).decode()


class Invoker:
    """Runs one model binding's chat calls and a tool registry's tool calls through
    ``middlewares`` (outermost first). Chains are built once, here.

    ``stream_chat`` yields deltas; ``chat`` collects them; ``call_tool`` returns a
    :class:`~seamkit.values.ToolResult` and never raises for a tool's own failure (unknown tool,
    invalid arguments, a raising tool: an ``is_error`` result). ``asyncio.CancelledError`` always
    propagates.
    """

    __slots__ = ("_chat", "_tool", "_tool_direct", "has_chat_middleware", "middlewares", "model", "tools")

    def __init__(self, model: LLMPort, tools: ToolRegistry, middlewares: Sequence[Middleware] = ()) -> None:
        self.model = model
        self.tools = tools
        self.middlewares = tuple(middlewares)
        self._chat: Next = chain(self.middlewares, self._chat_terminal, kind="chat")
        self._tool: Next = chain(self.middlewares, self._tool_terminal, kind="tool")
        # With no tool middleware, tool calls skip the envelope and the async generator.
        self._tool_direct = self._tool == self._tool_terminal
        self.has_chat_middleware = self._chat != self._chat_terminal

    def _chat_terminal(self, call: Call) -> AsyncIterator[Delta]:
        # checked here, before any middleware reads a delta: a provider yielding a dict or str is
        # a classified ProviderError naming it, not an AttributeError inside some middleware
        model = self.model
        return checked_stream(model.stream(call.request), model.provider, model.model)  # type: ignore[arg-type]

    async def _tool_terminal(self, call: Call) -> AsyncIterator[ToolResult]:
        req: ToolRequest = call.request  # type: ignore[assignment]
        tc = req.call
        t = self.tools.get(tc.name)
        if t is None:
            raise UnknownToolError(tc.name, self.tools.names)
        args = t.validate(tc.arguments)
        value = await t.invoke(args, call.ctx)
        yield ToolResult(tc.id, tc.name, render_tool_value(value))

    def stream_chat(self, request: ChatRequest, ctx: RunContext, meta: FrozenDict = EMPTY) -> AsyncIterator[Delta]:
        """The deltas of one model call, through the chat chain."""
        return self._chat(Call("chat", request, ctx, meta, self.model))

    async def chat(self, request: ChatRequest, ctx: RunContext, meta: FrozenDict = EMPTY) -> LLMResult:
        """One model call, collected into an :class:`~seamkit.values.LLMResult`."""
        acc = Accumulator(self.model.provider, self.model.model)
        async for d in self._chat(Call("chat", request, ctx, meta, self.model)):
            acc.add(d)
        return acc.result()

    async def call_tool(self, call: ToolCall, ctx: RunContext, meta: FrozenDict = EMPTY) -> ToolResult:
        """Run one tool call through the tool chain; failures become ``is_error`` results that
        name the problem so the model can correct itself."""
        t = self.tools.get(call.name)
        try:
            if self._tool_direct:
                if t is None:
                    raise UnknownToolError(call.name, self.tools.names)
                value = await t.invoke(t.validate(call.arguments), ctx)
                return ToolResult(call.id, call.name, render_tool_value(value))
            req = ToolRequest(call, t.schema if t is not None else None)
            result: ToolResult = await collect_one(self._tool(Call("tool", req, ctx, meta)))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return ToolResult(call.id, call.name, f"{type(exc).__name__}: {exc}", is_error=True)
        return result
