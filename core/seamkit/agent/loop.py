"""The agent loop. It owns control flow: model turn, tool batch, output validation, stop.

Capabilities (retry, budgets, compaction, ...) are middlewares around the calls it makes; they
never drive it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from seamkit.accumulate import Accumulator
from seamkit.agent.result import AgentResult, StopReason
from seamkit.errors import OutputValidationError
from seamkit.middleware import Call
from seamkit.runtime.concurrency import gather_bounded
from seamkit.runtime.context import RunContext
from seamkit.values import (
    EMPTY,
    ChatRequest,
    FrozenDict,
    Message,
    StreamEvent,
    TextBlock,
    ToolCall,
    ToolResult,
    Usage,
)

if TYPE_CHECKING:
    from seamkit.agent.agent import Agent

__all__ = ["Run", "CORRECTIVE_TEMPLATE"]

CORRECTIVE_TEMPLATE = (
    "Your answer did not match the required output format:\n{problems}\n"
    "Reply again with only a JSON value that satisfies the schema."
)


class Run:
    """One run of an agent. ``drive()`` runs it; ``emit`` (optional) receives stream events."""

    __slots__ = ("agent", "ctx", "emit", "step", "transcript", "usage", "warnings")

    def __init__(self, agent: Agent, ctx: RunContext, transcript: list[Message]) -> None:
        self.agent = agent
        self.ctx = ctx
        self.transcript = transcript
        self.usage = Usage()
        self.step = 0
        self.emit: Callable[[StreamEvent], None] | None = None
        self.warnings: list[str] = []

    def _event(self, kind: str, **fields: object) -> None:
        emit = self.emit
        if emit is not None:
            emit(StreamEvent(kind, self.ctx.run_id, self.step, **fields))  # type: ignore[arg-type]

    def _finish(self, output: object, reason: StopReason) -> AgentResult:
        result = AgentResult(
            output,
            tuple(self.transcript),
            self.usage,
            reason,
            self.ctx.run_id,
            self.ctx.parent_run_id,
            self.step,
            tuple(self.warnings),
        )
        if self.emit is not None:
            self._event(
                "run_finished",
                data=FrozenDict(stop_reason=reason, result=result),
            )
        return result

    async def drive(self) -> AgentResult:
        agent = self.agent
        ctx = self.ctx
        invoker = agent.invoker
        spec = agent.output_spec
        schemas = invoker.tools.schemas
        tool_choice = agent.tool_choice if schemas else "none"
        output_schema = spec.schema if spec is not None else None
        corrected = False
        emit = self.emit
        cancellation = ctx.cancellation
        model = agent.model
        if emit is not None:
            self._event("run_started", data=FrozenDict(agent=agent.name))
        chat = invoker._chat
        direct = not invoker.has_chat_middleware and not invoker.middlewares
        meta = EMPTY

        while self.step < agent.max_steps:
            if cancellation.cancelled:
                cancellation.raise_if_cancelled()
            self.step += 1
            step = self.step
            request = ChatRequest(
                tuple(self.transcript),
                schemas,
                tool_choice,
                output_schema,
                agent.temperature,
                agent.max_tokens,
                agent.seed,
                (),
                agent.model_extra,
            )
            if direct:
                stream = model.stream(request)
            else:
                meta = FrozenDict(step=step)
                stream = chat(Call("chat", request, ctx, meta))
            acc = Accumulator(model.provider, model.model)
            async for d in stream:
                acc.add(d)
                if emit is not None:
                    if d.text:
                        self._event("text", text=d.text)
                    if d.reasoning:
                        self._event("reasoning", text=d.reasoning)
            result = acc.result()
            self.usage = self.usage + result.usage
            if result.warnings:
                self.warnings.extend(result.warnings)
            self.transcript.append(result.message)
            if emit is not None:
                self._event("model_result", result=result)

            calls = result.message.tool_calls
            if calls:
                results = await self._run_tools(calls, meta)
                self.transcript.append(Message("tool", results))
                if agent.reset_tool_choice and tool_choice not in ("auto", "none"):
                    tool_choice = "auto"
                continue

            text = result.message.text
            if spec is None:
                return self._finish(text, "completed")
            try:
                output = spec.parse(text)
            except OutputValidationError as exc:
                if corrected:
                    raise
                corrected = True
                problems = "\n".join(f"- {p}" for p in exc.problems)
                self.transcript.append(Message("user", (TextBlock(CORRECTIVE_TEMPLATE.format(problems=problems)),)))
                continue
            if emit is not None:
                self._event("output", output=output)
            return self._finish(output, "completed")
        return self._finish(None, "max_steps")

    async def _run_tools(self, calls: tuple[ToolCall, ...], meta: FrozenDict) -> tuple[ToolResult, ...]:
        invoker = self.agent.invoker
        ctx = self.ctx
        emit = self.emit
        if emit is not None:
            for c in calls:
                self._event("tool_call", tool_call=c)
        if len(calls) == 1:
            results: tuple[ToolResult, ...] = (await invoker.call_tool(calls[0], ctx, meta),)
        else:
            results = tuple(
                await gather_bounded(
                    [partial(invoker.call_tool, c, ctx, meta) for c in calls],
                    limit=self.agent.max_parallel_tools,
                )
            )
        if emit is not None:
            for r in results:
                self._event("tool_result", tool_result=r)
        return results


