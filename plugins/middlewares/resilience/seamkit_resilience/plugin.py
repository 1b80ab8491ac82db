"""Registers the resilience middlewares with seamkit, lazily (module paths only)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_middlewares"]

_PKG = "seamkit_resilience"


@hookimpl
def seamkit_register_middlewares(register: Any) -> None:
    register(
        "retry",
        f"{_PKG}.retry:build",
        config=f"{_PKG}.config:RetryConfig",
        description="Retry transient model failures: full-jitter backoff, Retry-After honoured, never after a token",
    )
    register(
        "circuit_breaker",
        f"{_PKG}.breaker:build",
        config=f"{_PKG}.config:CircuitBreakerConfig",
        description="Fail fast per provider:model after consecutive failures; half-open trial after a pause",
    )
    register(
        "fallback",
        f"{_PKG}.fallback:build",
        config=f"{_PKG}.config:FallbackConfig",
        description="Answer with other models, in order, when the model fails before its first token",
    )
