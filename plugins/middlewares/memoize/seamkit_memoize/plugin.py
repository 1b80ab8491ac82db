"""Registers the ``memoize`` middleware with seamkit, lazily (module paths only)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_middlewares"]


@hookimpl
def seamkit_register_middlewares(register: Any) -> None:
    register(
        "memoize",
        "seamkit_memoize.middleware:build",
        config="seamkit_memoize.config:MemoizeConfig",
        description="Answer a repeated model call from a store: stable request key, single-flight, TTL, cost 0",
    )
