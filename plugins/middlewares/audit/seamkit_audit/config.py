"""Config model of the ``audit`` middleware (imports only pydantic and seamkit.slots)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field
from seamkit.slots import ComponentSlot, NestedSlot

__all__ = ["AuditConfig", "StoreSlot"]

StoreSlot = NestedSlot
"""The store: ``use`` (a store component name), optional ``from`` and that store's own parameters."""


class AuditConfig(BaseModel):
    """Parameters of ``use: audit``.

    ``store``: a store slot (:class:`~seamkit.slots.ComponentSlot`), resolved and validated when the
    composition loads; absent: the run's checkpoint store (``ctx.effects.store``), and nothing is
    recorded (a warning is logged once) when the run has none. ``namespace``: prefix of the store
    keys (one list per run: ``<namespace>:<run id>``).
    """

    model_config = ConfigDict(extra="forbid")

    store: Annotated[StoreSlot, ComponentSlot("store")] | None = Field(
        default=None,
        description="The store records are appended to: {use: <store>, ...params}. Default: the agent's "
        "checkpoint store (nothing is recorded with checkpoints: null)",
    )
    namespace: str = Field(default="audit", min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$",
                           description="Prefix of the keys written to the store")
