"""Structured concurrency helpers. ``asyncio.CancelledError`` is never swallowed."""

from __future__ import annotations

import contextvars
import functools
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from seamkit._lazy import lazy_module
from seamkit.errors import Failure

if TYPE_CHECKING:
    import asyncio
else:  # imported on first use: a third of a usable agent's import time (issue 19)
    asyncio = lazy_module("asyncio", globals())

__all__ = ["gather_bounded", "gather_best_effort", "run_sync"]

T = TypeVar("T")


async def gather_bounded(
    factories: Sequence[Callable[[], Awaitable[T]]], *, limit: int = 8
) -> list[T]:
    """Run each factory's awaitable with at most ``limit`` running at once, in a
    ``TaskGroup``. Returns results in input order. The first failure cancels the others and is
    raised as itself (several concurrent failures: an ``ExceptionGroup``).

    Raises ``ValueError`` for ``limit < 1``.
    """
    if limit < 1:
        raise ValueError("limit must be at least 1")
    n = len(factories)
    if n == 0:
        return []
    if n == 1:
        return [await factories[0]()]
    results: list[Any] = [None] * n
    sem = asyncio.Semaphore(limit)

    async def run(i: int) -> None:
        async with sem:
            results[i] = await factories[i]()

    try:
        async with asyncio.TaskGroup() as tg:
            for i in range(n):
                tg.create_task(run(i))
    except BaseExceptionGroup as eg:
        errors = [e for e in eg.exceptions if not isinstance(e, asyncio.CancelledError)]
        if len(errors) == 1:
            raise errors[0] from None
        raise
    return results


async def gather_best_effort(
    factories: Sequence[Callable[[], Awaitable[T]]], *, limit: int = 8
) -> list[T | Failure]:
    """Like :func:`gather_bounded`, but a failing slot holds a :class:`~seamkit.errors.Failure`
    and the others run on. Cancellation of the caller still propagates."""

    async def guarded(f: Callable[[], Awaitable[T]]) -> T | Failure:
        try:
            return await f()
        except Exception as exc:  # CancelledError is a BaseException: not caught
            return Failure.of(exc)

    return await gather_bounded([functools.partial(guarded, f) for f in factories], limit=limit)


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from synchronous code.

    With no running event loop in this thread, uses ``asyncio.run``. Inside a running loop (a
    notebook, a sync callback in async code), runs it on a fresh loop in a worker thread and waits,
    keeping context variables.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}
    ctx = contextvars.copy_context()

    def target() -> None:
        try:
            box["value"] = ctx.run(asyncio.run, coro)
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    t = threading.Thread(target=target, name="seamkit-run-sync", daemon=True)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]
