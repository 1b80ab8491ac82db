"""The ``Invoker``: runs chat and tool calls through their middleware chains."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextvars import ContextVar
from typing import Any

from seamkit.accumulate import Accumulator, checked_stream
from seamkit.errors import EffectNotApplied, UnknownToolError
from seamkit.middleware import Call, Middleware, Next, chain, collect_one
from seamkit.ports import LLMPort
from seamkit.runtime.context import RunContext
from seamkit.tools.registry import ToolRegistry
from seamkit.values import EMPTY, ChatRequest, Delta, FrozenDict, LLMResult, ToolCall, ToolRequest, ToolResult

__all__ = ["Invoker", "render_tool_value"]


class _Entered:
    """Set when a tool's own code is entered; until then its call certainly changed nothing."""

    __slots__ = ("entered",)

    def __init__(self) -> None:
        self.entered = False


# The marker of the side-effecting call in flight in this task (contexts copied for tasks a
# middleware starts share the marker object, so the terminal's mark is seen here).
_ENTERED: ContextVar[_Entered | None] = ContextVar("seamkit_tool_entered", default=None)


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
    invalid arguments, a raising tool: an ``is_error`` result); ``call_effect`` (for the effect
    ledger) raises them instead, telling a call that never started from one whose outcome is
    unknown. ``asyncio.CancelledError`` always propagates.
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
        marker = _ENTERED.get()
        if marker is not None:
            marker.entered = True
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

    async def call_effect(self, call: ToolCall, ctx: RunContext, meta: FrozenDict = EMPTY) -> ToolResult:
        """Run one side-effecting tool call through the tool chain, for the effect ledger: unlike
        :meth:`call_tool`, a failure raises, so the ledger records what is known about the effect.

        Raises :class:`~seamkit.errors.EffectNotApplied` (the original error as ``__cause__`` and
        in the message) when the call failed before the tool's own code was entered (unknown tool,
        invalid arguments, a middleware refusing the call): it certainly changed nothing. Once the
        tool was entered, its exception propagates unchanged (an ``EffectNotApplied`` it raises
        says it changed nothing; anything else leaves the outcome unknown)."""
        marker = _Entered()
        token = _ENTERED.set(marker)
        try:
            if self._tool_direct:
                t = self.tools.get(call.name)
                if t is None:
                    raise UnknownToolError(call.name, self.tools.names)
                args = t.validate(call.arguments)
                marker.entered = True
                value = await t.invoke(args, ctx)
                return ToolResult(call.id, call.name, render_tool_value(value))
            t = self.tools.get(call.name)
            req = ToolRequest(call, t.schema if t is not None else None)
            result: ToolResult = await collect_one(self._tool(Call("tool", req, ctx, meta)))
            return result
        except Exception as exc:
            if marker.entered or isinstance(exc, EffectNotApplied):
                raise
            raise EffectNotApplied(f"{type(exc).__name__}: {exc}") from exc
        finally:
            _ENTERED.reset(token)
