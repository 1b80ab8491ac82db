"""The real clock (a :class:`~seamkit.ports.ClockPort`)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

__all__ = ["SystemClock", "SYSTEM_CLOCK"]


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
