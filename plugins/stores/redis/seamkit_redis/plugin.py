"""Registers the ``redis`` store with seamkit, lazily (module paths only; redis-py is not imported)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_stores"]


@hookimpl
def seamkit_register_stores(register: Any) -> None:
    register(
        "redis",
        "seamkit_redis.store:build",
        config="seamkit_redis.config:RedisConfig",
        description="Redis store and checkpoints (native TTL, atomic version checks in Lua)",
    )
