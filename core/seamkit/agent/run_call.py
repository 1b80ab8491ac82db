"""A run through the middlewares that wrap whole runs (``kinds`` naming ``"run"``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from seamkit.errors import SeamkitError
from seamkit.middleware import Call, Middleware, chain
from seamkit.values import FrozenDict, Message, RunRequest

if TYPE_CHECKING:
    from seamkit.agent.definition import AgentDefinition
    from seamkit.agent.result import AgentResult
    from seamkit.runtime.context import RunContext

__all__ = ["drive_through"]


async def drive_through(
    middlewares: Sequence[Middleware],
    agent: AgentDefinition,
    ctx: RunContext,
    messages: Sequence[Message],
    drive: Callable[[], Awaitable[AgentResult]],
    *,
    resumed: bool,
) -> AgentResult:
    """Run ``drive()`` inside the ``run`` chain of ``middlewares`` (outermost first) and return the
    result the chain yields. Raises what ``drive`` raises, and
    :class:`~seamkit.errors.SeamkitError` when a middleware yields anything but one
    :class:`~seamkit.agent.result.AgentResult`."""
    from seamkit.agent.result import AgentResult

    async def terminal(call: Call) -> AsyncIterator[AgentResult]:
        yield await drive()

    call = Call("run", RunRequest(agent.name, tuple(messages), resumed), ctx, FrozenDict(agent=agent.name),
                agent.invoker.model)
    items = [item async for item in chain(middlewares, terminal, kind="run")(call)]
    if len(items) != 1 or not isinstance(items[0], AgentResult):
        got = ", ".join(type(i).__name__ for i in items) or "nothing"
        raise SeamkitError(f"a run middleware must yield exactly one AgentResult, yielded {got}")
    return items[0]
