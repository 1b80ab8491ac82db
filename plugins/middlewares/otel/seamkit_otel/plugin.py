"""Registers the ``otel`` middleware with seamkit, lazily (module paths only)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_middlewares"]


@hookimpl
def seamkit_register_middlewares(register: Any) -> None:
    register(
        "otel",
        "seamkit_otel.middleware:build",
        config="seamkit_otel.config:OtelConfig",
        description="OpenTelemetry GenAI spans and metrics per run, model call and tool call; content capture opt-in",
    )
