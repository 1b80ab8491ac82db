"""Config model of ``use: sqlite`` (imports only pydantic and the standard library)."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["SqliteConfig"]


class SqliteConfig(BaseModel):
    """Parameters of ``use: sqlite``."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(
        default=".seamkit/seamkit.db",
        min_length=1,
        description="Database file; a relative path is resolved against the current directory when the "
        "store is built. Missing parent directories are created on first use. ':memory:' keeps "
        "everything in this process only (for tests).",
    )
    busy_timeout_s: float = Field(
        default=5.0,
        ge=0,
        le=3600,
        description="Seconds a write waits for another connection or process holding the write lock "
        "before failing with StoreUnavailable",
    )
    synchronous: Literal["NORMAL", "FULL"] = Field(
        default="NORMAL",
        description="SQLite 'synchronous' setting: NORMAL (with WAL: durable against a process crash, "
        "the last commits may be lost on power loss) or FULL (fsync on every commit)",
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
