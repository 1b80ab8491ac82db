"""Registers the ``pydantic`` schema flavour with seamkit, lazily (module paths only)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_schema_adapters"]


@hookimpl
def seamkit_register_schema_adapters(register: Any) -> None:
    register(
        "pydantic",
        "seamkit_schema_pydantic.flavour:build",
        description="Typed output for pydantic models, pydantic dataclasses and other types pydantic describes",
    )
