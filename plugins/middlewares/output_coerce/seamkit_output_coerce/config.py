"""Config model of the ``output_coerce`` middleware (imports only pydantic)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["OutputCoerceConfig"]


class OutputCoerceConfig(BaseModel):
    """Parameters of ``use: output_coerce``.

    ``max_repairs``: corrective model calls made, within one model turn, when the final answer
    does not validate against the request's ``output_schema`` (0 to 3; 0 never re-calls).
    ``partial_min_growth``: the buffer is partial-parsed again only once it has grown by at least
    this fraction of its length at the previous parse (0: after every text delta). The total
    parse work is then at most about ``(1 + g) / g`` times the final length, whatever the number
    of deltas.
    """

    model_config = ConfigDict(extra="forbid")

    max_repairs: int = Field(
        default=1,
        ge=0,
        le=3,
        description="Corrective re-calls of the model when the final answer does not validate against the "
        "output schema (0 to 3). While repairs are possible the answer's text is held back until it "
        "validates; with 0 it streams through at once",
    )
    partial_min_growth: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description="Partial-parse the streamed text again only once it has grown by this fraction of its "
        "length at the previous parse (0: after every text delta). Bounds the parse work to about "
        "(1 + g) / g times the final length; the complete text is always parsed at the end",
    )
