"""Registers the ``sentence_transformers`` memory component (cheap to import: torch and
sentence-transformers load on the first ``embed`` call)."""

from __future__ import annotations

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_memory"]


@hookimpl
def seamkit_register_memory(register):  # type: ignore[no-untyped-def]
    register(
        "sentence_transformers",
        "seamkit_embeddings_st.embeddings:build",
        config="seamkit_embeddings_st.config:SentenceTransformersConfig",
        description="Local sentence-transformers embeddings on the CPU (offline; default all-MiniLM-L6-v2, 384-d)",
    )
