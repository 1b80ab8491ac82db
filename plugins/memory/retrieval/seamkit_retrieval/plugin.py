"""Registers the ``vector_memory`` memory component (cheap to import)."""

from __future__ import annotations

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_memory"]


@hookimpl
def seamkit_register_memory(register):  # type: ignore[no-untyped-def]
    register(
        "vector_memory",
        "seamkit_retrieval.memory:build",
        config="seamkit_retrieval.config:VectorMemoryConfig",
        description="Grounding source: an embedding model + a vector store, indexing Markdown files by heading",
    )
