"""Small helpers for reading decoded wire JSON."""

from __future__ import annotations

from typing import Any

__all__ = ["json_kind"]


def json_kind(value: Any) -> str:
    """The JSON type name of a decoded value (``null``, ``boolean``, ``string``, ``number``,
    ``array``, ``object``), for "malformed chunk" messages that must not echo the value itself."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "array"
    return "object"
