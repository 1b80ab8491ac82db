"""Helpers shared by the resilience middlewares."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from seamkit.plugin import RunContext
from seamkit.values import Delta

__all__ = ["is_token", "aclose", "sleep_unless_cancelled", "model_label"]


def is_token(d: Delta) -> bool:
    """``True`` when ``d`` carries model output the caller may already have shown or acted on:
    text, reasoning (or its signature) or a tool-call fragment. Warnings, usage, the model name
    and the finish reason alone are not tokens."""
    return bool(d.text or d.reasoning or d.reasoning_signature or d.tool_call is not None)


async def aclose(stream: AsyncIterator[Any]) -> None:
    """Close ``stream`` when it can be closed (async generators, provider iterators), so the
    underlying HTTP response is released."""
    close = getattr(stream, "aclose", None)
    if close is not None:
        await close()


async def sleep_unless_cancelled(ctx: RunContext, seconds: float) -> None:
    """``await ctx.clock.sleep(seconds)``, cut short when the run's cancellation token fires.

    Raises :class:`~seamkit.errors.RunCancelled` when the run is (or gets) cancelled;
    ``asyncio.CancelledError`` propagates.
    """
    token = ctx.cancellation
    token.raise_if_cancelled()
    sleeper = asyncio.ensure_future(ctx.clock.sleep(seconds))
    waiter = asyncio.ensure_future(token.wait())
    try:
        await asyncio.wait({sleeper, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (sleeper, waiter):
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    token.raise_if_cancelled()
    sleeper.result()  # re-raise a failing clock


def model_label(model: Any) -> str:
    """``provider:model`` of an :class:`~seamkit._ports.LLMPort` (``?`` for missing parts)."""
    return f"{getattr(model, 'provider', None) or '?'}:{getattr(model, 'model', None) or '?'}"
