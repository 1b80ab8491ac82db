"""Config model of the ``budget`` middleware (imports only pydantic and the standard library)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from seamkit.pricing import parse_usd

__all__ = ["BudgetConfig"]


def _exact_usd(value: Any) -> Any:
    """A USD amount from a string, an integer or a ``Decimal``, greater than 0; floats are refused
    as inexact (:func:`seamkit.pricing.parse_usd`)."""
    return parse_usd(value, "max_cost_usd", positive=True)


class BudgetConfig(BaseModel):
    """Parameters of ``use: budget``.

    ``max_cost_usd``: the ceiling of every run (USD, ``Decimal``; write it as a string). A child
    run has its own ledger with the same ceiling, and its spend also counts against each ancestor's.
    ``allow_unpriced``: admit calls to a model with no known price (``price is None``) instead of
    refusing them; they are not counted and the result records a warning.
    ``default_max_tokens``: the output tokens reserved for a request without ``max_tokens``.
    ``max_tracked_runs``: how many idle run ledgers are kept (least recently used ones are dropped).
    """

    model_config = ConfigDict(extra="forbid")

    max_cost_usd: Decimal = Field(
        description="Ceiling per run in US dollars, as a string (e.g. \"0.50\"); floats are refused "
        "as inexact. A call is admitted while spend plus reservations is under the ceiling, so the "
        "ceiling is overshot by at most one in-flight reservation (a first call whose reservation alone "
        "exceeds the ceiling is admitted)",
    )
    allow_unpriced: bool = Field(
        default=False,
        description="Admit calls to models whose price is unknown (they are not counted; a warning is "
        "recorded) instead of refusing them with BudgetExceeded",
    )
    default_max_tokens: int = Field(
        default=4096,
        ge=1,
        le=10_000_000,
        description="Output tokens reserved for a request that sets no max_tokens (tokens)",
    )
    max_tracked_runs: int = Field(
        default=100_000,
        ge=1,
        description="Most run ledgers kept in memory; the least recently used idle ones are dropped "
        "(a dropped run starts a fresh ledger if it calls again)",
    )

    @field_validator("max_cost_usd", mode="before")
    @classmethod
    def _usd(cls, value: Any) -> Any:
        return _exact_usd(value)
