"""Registers the ``compaction`` middleware with seamkit, lazily (module paths only)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_middlewares"]


@hookimpl
def seamkit_register_middlewares(register: Any) -> None:
    register(
        "compaction",
        "seamkit_compaction.middleware:build",
        config="seamkit_compaction.config:CompactionConfig",
        description="Compact a chat request over its token budget with a compactor; reuse summaries across turns",
    )
