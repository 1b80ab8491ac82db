"""Config model of the ``memory`` store component (light: imports only pydantic)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["MemoryStoreConfig"]


class MemoryStoreConfig(BaseModel):
    """Parameters of ``use: memory`` (a store): none. Data lives in the process and is lost with it."""

    model_config = ConfigDict(extra="forbid")
