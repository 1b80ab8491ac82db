"""Config models of the basic compactors (light: imports only pydantic)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SlidingWindowConfig", "TruncationConfig", "ToolResultClearingConfig"]


class SlidingWindowConfig(BaseModel):
    """``sliding_window``: keep the ``keep_turns`` most recent turns when over the budget."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    keep_turns: int = Field(
        20,
        ge=1,
        description=(
            "Turns kept, newest first, after the leading system message. A turn is one message, "
            "or an assistant tool-call message together with all of its tool results."
        ),
    )


class TruncationConfig(BaseModel):
    """``truncation``: no parameters; it drops the oldest turns until the estimate fits the
    ``budget_tokens`` it is called with."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolResultClearingConfig(BaseModel):
    """``tool_result_clearing``: clear old tool results, oldest first, until the transcript fits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    keep_recent: int = Field(
        3,
        ge=0,
        description="The most recent tool results (counted one per result) that are never cleared.",
    )
