"""Registers the ``dataclass`` schema flavour with seamkit, lazily (module paths only)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_schema_adapters"]


@hookimpl
def seamkit_register_schema_adapters(register: Any) -> None:
    register(
        "dataclass",
        "seamkit_schema_dataclass.flavour:build",
        description="Typed output for standard-library dataclasses (through pydantic)",
    )
