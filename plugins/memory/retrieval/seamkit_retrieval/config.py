"""Configuration of ``use: vector_memory`` (light: pydantic and seamkit._slots only)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field
from seamkit.plugin import ComponentSlot, NestedSlot

__all__ = ["MemorySlot", "VectorMemoryConfig"]


MemorySlot = NestedSlot
"""A memory component: ``use`` (its name), optional ``from`` and its own parameters."""


class VectorMemoryConfig(BaseModel):
    """Parameters of ``use: vector_memory``.

    ``embeddings``: an embedding component (default ``sentence_transformers``). ``vectors``: a
    vector store component (default ``sqlite_vec`` with 384 dimensions at
    ``.seamkit/vectors.db``). ``index``: glob patterns of Markdown files (relative to the YAML
    file's directory) indexed, by heading, the first time the source is asked in a tenant;
    indexing again replaces chunks by their source key. ``max_chars``: longest chunk.
    """

    model_config = ConfigDict(extra="forbid")

    embeddings: Annotated[MemorySlot, ComponentSlot("memory")] = Field(
        default_factory=lambda: MemorySlot(use="sentence_transformers"),
        description="Embedding component: {use: <name>, ...params} or its name")
    vectors: Annotated[MemorySlot, ComponentSlot("memory")] = Field(
        default_factory=lambda: MemorySlot.model_validate({"use": "sqlite_vec", "dimensions": 384}),
        description="Vector store component: {use: <name>, ...params} or its name")
    index: list[Path] = Field(default_factory=list,
                              description="Glob patterns of Markdown files indexed on first use (e.g. docs/*.md)")
    max_chars: int = Field(default=1500, ge=100, le=100_000, description="Longest chunk, in characters")
