"""Registers the ``output_coerce`` middleware with seamkit, lazily (module paths only)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_middlewares"]


@hookimpl
def seamkit_register_middlewares(register: Any) -> None:
    register(
        "output_coerce",
        "seamkit_output_coerce.middleware:build",
        config="seamkit_output_coerce.config:OutputCoerceConfig",
        description="Typed output while streaming: partial objects as they grow, final validation against "
        "the output schema, bounded parse-and-repair",
    )
