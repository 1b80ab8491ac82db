"""Config model of the ``memoize`` middleware (imports only pydantic and seamkit._slots)."""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator
from seamkit.plugin import ComponentSlot, NestedSlot

__all__ = ["MemoizeConfig", "StoreSlot"]

StoreSlot = NestedSlot
"""The store: ``use`` (a store component name), optional ``from`` and that store's own parameters."""


class MemoizeConfig(BaseModel):
    """Parameters of ``use: memoize``.

    ``store``: a store slot (:class:`~seamkit._slots.ComponentSlot`), resolved and validated when the
    composition loads; absent: the run's checkpoint store (``ctx.effects.store``, set when the
    agent has ``checkpoints:``), and calls pass through uncached when the run has none.
    ``ttl``: seconds an answer is kept (``None``: until deleted). ``namespace``: prefix of the
    store keys, to keep several caches apart in one store.
    """

    model_config = ConfigDict(extra="forbid")

    store: Annotated[StoreSlot, ComponentSlot("store")] | None = Field(
        default=None,
        description="The store answers are kept in: {use: <store>, ...params}. Default: the agent's "
        "checkpoint store (no caching when the agent has checkpoints: null)",
    )
    ttl: float | None = Field(
        default=None, gt=0, allow_inf_nan=False,
        description="Seconds a cached answer is kept (default: until deleted)",
    )
    namespace: str = Field(default="memoize", min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$",
                           description="Prefix of the keys written to the store")

    @field_validator("ttl", mode="before")
    @classmethod
    def _not_bool(cls, value: object) -> object:
        # pydantic reads true as 1.0: 'ttl: yes' would silently keep answers for one second
        if isinstance(value, bool):
            raise ValueError("ttl is a number of seconds, not true or false")
        return value

    @field_validator("ttl")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("ttl must be a finite number of seconds")
        return value
