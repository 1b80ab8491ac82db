"""Registers the ``postgres`` store with seamkit, lazily (module paths only; nothing heavy is imported)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_stores"]


@hookimpl
def seamkit_register_stores(register: Any) -> None:
    register(
        "postgres",
        "seamkit_postgres.store:build",
        config="seamkit_postgres.config:PostgresConfig",
        description="Key-value store and durable checkpoints on PostgreSQL (run `seamkit stores setup` once)",
    )
