"""A controllable clock for tests."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

__all__ = ["FakeClock"]


class FakeClock:
    """A :class:`~seamkit._ports.ClockPort` whose time moves only when told. ``sleep(s)`` advances
    it by ``s`` seconds at once (and yields to the loop); ``sleeps`` records every requested delay."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._mono = 0.0
        self.sleeps: list[float] = []

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def advance(self, seconds: float) -> None:
        self._mono += seconds
        self._now += timedelta(seconds=seconds)

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.advance(seconds)
        await asyncio.sleep(0)
