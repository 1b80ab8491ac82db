"""Config model of ``use: sqlite`` (imports only pydantic and the standard library)."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

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
        strict=True,  # a number: neither true/false nor text such as "1e3" (YAML 1.1 reads that as text)
        description="Seconds a write waits for another connection or process holding the write lock "
        "before failing with StoreUnavailable",
    )
    synchronous: Literal["NORMAL", "FULL"] = Field(
        default="NORMAL",
        description="SQLite 'synchronous' setting: NORMAL (with WAL: durable against a process crash, "
        "the last commits may be lost on power loss) or FULL (fsync on every commit)",
    )
    saves_on_loop: StrictBool = Field(  # true or false, never 1, "on" or "true"
        default=True,
        description="With synchronous NORMAL: write checkpoint saves from the event loop's thread (no "
        "hand-off to the store's thread, about 60 microseconds less per step; such a write goes to the "
        "OS page cache and never waits for a lock, fsync or WAL checkpoint, which stay on the store's "
        "thread). false: every save on the store's thread, e.g. on a disk so slow that the OS holds "
        "back page-cache writes. With FULL every save is on the store's thread anyway.",
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
