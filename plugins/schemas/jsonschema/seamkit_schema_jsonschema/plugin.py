"""Registers the ``jsonschema`` schema flavour with seamkit, lazily (module paths only)."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_schema_adapters"]


@hookimpl
def seamkit_register_schema_adapters(register: Any) -> None:
    register(
        "jsonschema",
        "seamkit_schema_jsonschema.flavour:build",
        description="Typed output as plain JSON data checked against a raw JSON Schema (jsonschema)",
    )
