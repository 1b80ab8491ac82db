"""Config model of ``use: sqlite_vec`` (imports only pydantic and the standard library)."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["VectorSqliteConfig"]


class VectorSqliteConfig(BaseModel):
    """Parameters of ``use: sqlite_vec``."""

    model_config = ConfigDict(extra="forbid")

    dimensions: int = Field(
        ge=1,
        le=8192,
        description="Length of every stored and queried vector (e.g. 384 for all-MiniLM-L6-v2); "
        "vectors of another length are refused. Fixed when the file is created.",
    )
    metric: Literal["cosine", "l2"] = Field(
        default="cosine",
        description="Distance: 'cosine' (score = cosine similarity, 1 - cosine distance, in [-1, 1]) "
        "or 'l2' (score = minus the Euclidean distance, <= 0). Higher score is better in both. "
        "Fixed when the file is created.",
    )
    path: str = Field(
        default=".seamkit/vectors.db",
        min_length=1,
        description="Database file; a relative path is resolved against the current directory when the "
        "store is built. Missing parent directories are created on first use. ':memory:' keeps "
        "everything in this process only (for tests).",
    )
    busy_timeout_s: float = Field(
        default=5.0,
        ge=0,
        le=3600,
        description="Seconds a write waits for another process holding the write lock",
    )

    @field_validator("busy_timeout_s")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("busy_timeout_s must be a finite number of seconds")
        return value

    @field_validator("path")
    @classmethod
    def _no_nul(cls, value: str) -> str:
        if "\x00" in value:
            raise ValueError("path must not contain NUL characters")
        return value
