"""Registers the SQLite store with seamkit, lazily (module paths only; nothing heavy is imported)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_stores"]


@hookimpl
def seamkit_register_stores(register: Any) -> None:
    register(
        "sqlite",
        "seamkit_sqlite.store:build",
        config="seamkit_sqlite.config:SqliteConfig",
        description="Store and checkpoints in one SQLite file (WAL; default .seamkit/seamkit.db)",
    )
