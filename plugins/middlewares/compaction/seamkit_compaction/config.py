"""Configuration model of the ``compaction`` middleware (light: pydantic and seamkit._slots only)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator
from seamkit.plugin import ComponentSlot, NestedSlot

__all__ = ["CompactorSlot", "CompactionConfig"]


CompactorSlot = NestedSlot
"""The compactor: ``use`` (a compactor component name), optional ``from`` and that compactor's own parameters."""


class CompactionConfig(BaseModel):
    """``compaction``: compacts a chat request whose estimate (:func:`seamkit._tokens.estimate_tokens`,
    tokens) is over the budget with ``compactor``.

    The budget is ``budget_tokens``, or ``budget_fraction`` of the model's context window
    (``context_tokens``, else the model's ``context_window`` attribute or its config's ``n_ctx``).
    Exactly one of ``budget_tokens`` and ``budget_fraction`` is set. ``compactor`` is a compactor
    slot (:class:`~seamkit._slots.ComponentSlot`): loading a composition resolves it and validates its
    parameters (and the slots nested in them, e.g. a summariser's ``model``), located at
    ``agent.middlewares[i].compactor``."""

    model_config = ConfigDict(extra="forbid")

    compactor: Annotated[CompactorSlot, ComponentSlot("compactor")] = Field(
        ..., description="The compactor: {use: <compactor>, ...params} (or the compactor's name).")
    budget_tokens: int | None = Field(default=None, ge=1,
                                      description="Token budget of the whole request (messages, tool schemas, "
                                                  "output schema), in estimated tokens.")
    budget_fraction: float | None = Field(default=None, gt=0, le=1, allow_inf_nan=False,
                                          description="Budget as a fraction of the model's context window.")
    context_tokens: int | None = Field(default=None, ge=1,
                                       description="The model's context window in tokens, for budget_fraction "
                                                   "(default: read from the model).")
    max_tracked_runs: int = Field(default=1024, ge=1,
                                  description="Runs whose summaries are kept (least recently used dropped first).")

    @model_validator(mode="after")
    def _one_budget(self) -> CompactionConfig:
        if (self.budget_tokens is None) == (self.budget_fraction is None):
            raise ValueError("set exactly one of budget_tokens and budget_fraction")
        if self.context_tokens is not None and self.budget_fraction is None:
            raise ValueError("context_tokens is only used with budget_fraction")
        return self
