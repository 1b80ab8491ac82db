"""The ``clock`` tool: the current time from the run's clock (``ctx.clock``), ISO 8601."""

from __future__ import annotations

import zoneinfo
from datetime import UTC, datetime

from seamkit.plugin import FunctionTool, RunContext, tool

from seamkit_tools_basic.config import ClockConfig
from seamkit_tools_basic.errors import ClockError

__all__ = ["build_clock", "now_in"]


def _zone(name: str) -> zoneinfo.ZoneInfo:
    if not name or "\x00" in name:
        raise ClockError("the time zone must be an IANA name such as 'UTC' or 'Europe/Paris'")
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise ClockError(
            f"unknown time zone {name!r}; use an IANA name such as 'UTC', 'Europe/Paris' or 'America/New_York'"
        ) from None


def now_in(now: datetime, zone: str) -> str:
    """``now`` (a naive value is taken as UTC) converted to the IANA ``zone``, as ISO 8601 with its
    UTC offset (seconds precision). Raises :class:`~seamkit_tools_basic.errors.ClockError` for an
    unknown zone."""
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return now.astimezone(_zone(zone)).isoformat(timespec="seconds")


def build_clock(config: ClockConfig | None = None) -> FunctionTool:
    """The ``clock`` tool (not side-effecting) for ``config``."""
    cfg = config or ClockConfig()
    default = cfg.default_timezone
    _zone(default)

    @tool(side_effecting=False, name="clock", blocking=False)
    def clock(ctx: RunContext, timezone: str | None = None) -> str:
        """Return the current date and time as ISO 8601 with its UTC offset.

        Example result: "2026-01-01T09:30:00+01:00".

        Args:
            timezone: IANA time zone name such as "UTC", "Europe/Paris" or "Asia/Tokyo";
                omit it for the configured default (UTC unless configured otherwise).
        """
        return now_in(ctx.clock.now(), timezone if timezone is not None else default)

    return clock
