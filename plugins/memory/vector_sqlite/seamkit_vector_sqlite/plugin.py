"""Registers the sqlite-vec vector store with seamkit, lazily (module paths only)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_memory"]


@hookimpl
def seamkit_register_memory(register: Any) -> None:
    register(
        "sqlite_vec",
        "seamkit_vector_sqlite.store:build",
        config="seamkit_vector_sqlite.config:VectorSqliteConfig",
        description="Vector store on SQLite + sqlite-vec (exact KNN, per-tenant, metadata filters)",
    )
