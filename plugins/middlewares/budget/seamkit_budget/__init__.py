"""seamkit-budget: the ``budget`` middleware (a USD ceiling per run, see :mod:`seamkit_budget.middleware`).

Importing this package is cheap; the middleware module loads on first attribute access."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from seamkit_budget.config import BudgetConfig
    from seamkit_budget.middleware import BudgetMiddleware, LedgerView, build

__all__ = ["BudgetConfig", "BudgetMiddleware", "LedgerView", "build"]


def __getattr__(name: str) -> Any:
    if name == "BudgetConfig":
        from seamkit_budget.config import BudgetConfig

        return BudgetConfig
    if name in ("BudgetMiddleware", "LedgerView", "build"):
        from seamkit_budget import middleware

        return getattr(middleware, name)
    raise AttributeError(f"module 'seamkit_budget' has no attribute {name!r}")
