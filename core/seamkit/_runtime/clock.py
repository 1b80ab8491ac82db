"""The clock port and the real clock.

``ClockPort`` lives here rather than in :mod:`seamkit._ports` (which re-exports it) because the run
context, which every port call receives, holds a clock: the context sits below the ports.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from seamkit._lazy import lazy_module

if TYPE_CHECKING:
    import asyncio
else:  # imported on first use: a third of a usable agent's import time (issue 19)
    asyncio = lazy_module("asyncio", globals())

__all__ = ["ClockPort", "SystemClock", "SYSTEM_CLOCK"]


@runtime_checkable
class ClockPort(Protocol):
    """Time, injectable so tests control it. ``now()`` is timezone-aware UTC; ``monotonic()`` and
    ``sleep()`` are in seconds."""

    def now(self) -> datetime: ...

    def monotonic(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """Wall time in UTC, ``time.monotonic()`` and ``asyncio.sleep``."""

    __slots__ = ()

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


SYSTEM_CLOCK = SystemClock()
