"""Config model of the ``budget`` middleware (imports only pydantic, seamkit._slots and the standard library)."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from seamkit.plugin import ComponentSlot, NestedSlot, parse_usd

from seamkit_budget.units import ceiling_units

__all__ = ["BudgetConfig"]


def _exact_usd(value: Any) -> Any:
    """A USD amount from a string, an integer or a ``Decimal``, greater than 0; floats are refused
    as inexact (:func:`seamkit._pricing.parse_usd`)."""
    return parse_usd(value, "max_cost_usd", positive=True)


class BudgetConfig(BaseModel):
    """Parameters of ``use: budget``.

    ``max_cost_usd``: the ceiling of every run (USD, ``Decimal``; write it as a string). A child
    run has its own ledger with the same ceiling, and its spend also counts against each ancestor's.
    ``allow_unpriced``: admit calls to a model with no known price (``price is None``) instead of
    refusing them; they are not counted and the result records a warning.
    ``default_max_tokens``: the output tokens reserved for a request without ``max_tokens``.
    ``max_tracked_runs``: how many idle run ledgers are kept (least recently used ones are dropped).
    ``store``: a store slot (:class:`~seamkit._slots.ComponentSlot`); set, the ceiling's ledger is
    kept in that store and shared by every process using it (amounts in whole nano-dollars, so the
    ceiling may have at most 9 decimal places). ``ledger``: the shared ledger's key (default: each
    run tree's root run id). ``namespace``: prefix of the store keys.
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

    store: Annotated[NestedSlot, ComponentSlot("store")] | None = Field(
        default=None,
        description="Keep the ledger in this store, shared across processes and machines: {use: <store>, "
        "...params} (e.g. redis, postgres; sqlite for processes on one machine). Default: in memory, "
        "per process",
    )
    ledger: str | None = Field(
        default=None, min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.:@-]+$",
        description="Key of the shared ledger (needs store): every run charging it shares the one "
        "ceiling, e.g. a batch (\"batch-2026-12\"). Default: the root run id of each run tree",
    )
    namespace: str = Field(
        default="budget", min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$",
        description="Prefix of the keys a shared ledger writes to its store",
    )

    @model_validator(mode="after")
    def _shared(self) -> Self:
        if self.ledger is not None and self.store is None:
            raise ValueError("ledger names a shared ledger: set store too (e.g. store: {use: redis, url: ...})")
        if self.store is not None:
            ceiling_units(self.max_cost_usd)  # ValueError: more than 9 decimal places
        return self

    @field_validator("max_cost_usd", mode="before")
    @classmethod
    def _usd(cls, value: Any) -> Any:
        return _exact_usd(value)
