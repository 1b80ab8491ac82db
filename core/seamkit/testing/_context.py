"""``make_test_ctx``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from seamkit._runtime.context import RunContext
from seamkit.testing._clock import FakeClock
from seamkit.values import Scope

__all__ = ["make_test_ctx"]


def make_test_ctx(
    *,
    run_id: str = "run_test",
    parent_run_id: str | None = None,
    scope: Scope | None = None,
    services: Mapping[str, Any] | None = None,
    clock: Any = None,
) -> RunContext:
    """A :class:`~seamkit._runtime.context.RunContext` with a fixed run id and a
    :class:`~seamkit.testing.FakeClock` (unless ``clock`` is given)."""
    return RunContext(
        run_id=run_id,
        parent_run_id=parent_run_id,
        scope=scope or Scope(tenant="test"),
        services=dict(services or {}),
        clock=clock if clock is not None else FakeClock(),
    )
