"""Registers the ``attrs`` schema flavour with seamkit, lazily (module paths only)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_schema_adapters"]


@hookimpl
def seamkit_register_schema_adapters(register: Any) -> None:
    register(
        "attrs",
        "seamkit_schema_attrs.flavour:build",
        description="Typed output for attrs classes (JSON Schema from attrs fields, jsonschema + cattrs)",
    )
