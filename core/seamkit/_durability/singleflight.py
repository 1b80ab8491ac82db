"""Single-flight: concurrent callers asking for one key share one computation."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

__all__ = ["SingleFlight"]


class SingleFlight:
    """``await flight.run(key, fn)``: the first caller for ``key`` runs ``fn``; callers arriving
    while it runs await the same result (or the same exception). Nothing is remembered afterwards:
    a later call runs ``fn`` again. For one event loop at a time (stores use it for ``get_or_set``)."""

    __slots__ = ("_inflight",)

    def __init__(self) -> None:
        self._inflight: dict[Hashable, asyncio.Future[Any]] = {}

    async def run(self, key: Hashable, fn: Callable[[], Awaitable[Any]]) -> Any:
        fut = self._inflight.get(key)
        if fut is not None:
            return await asyncio.shield(fut)
        fut = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        try:
            value = await fn()
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                fut.cancel()
            else:
                fut.set_exception(exc)
                fut.exception()  # retrieved: no 'never retrieved' warning when nobody waited
            raise
        else:
            fut.set_result(value)
            return value
        finally:
            del self._inflight[key]
