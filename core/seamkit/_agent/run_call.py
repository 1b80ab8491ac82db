"""A run through the middlewares that wrap whole runs (``kinds`` naming ``"run"``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from seamkit._middleware import Call, Middleware, chain, collect_one
from seamkit.values import FrozenDict, Message, RunRequest

if TYPE_CHECKING:
    from seamkit._agent.definition import AgentDefinition
    from seamkit._agent.result import AgentResult
    from seamkit._runtime.context import RunContext

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
    :class:`~seamkit._agent.result.AgentResult`."""
    from seamkit._agent.result import AgentResult

    async def terminal(call: Call) -> AsyncIterator[AgentResult]:
        yield await drive()

    call = Call("run", RunRequest(agent.name, tuple(messages), resumed), ctx, FrozenDict(agent=agent.name),
                agent.invoker.model)
    return await collect_one(chain(middlewares, terminal, kind="run")(call), of=AgentResult)
