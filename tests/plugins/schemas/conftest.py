"""Fixtures shared by the schema-flavour tests: the installed registry and a prefix checker."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from seamkit._plugins.registry import Registry, load_registry
from seamkit._schemas import SchemaAdapter


def consistent(partial: Any, final: Any) -> bool:
    """``partial`` could be what a prefix of ``final``'s JSON text says (see
    tests/core/test_core_schemas.py): members in order, all final except possibly the last, a
    string a prefix of the final one, other scalars equal."""
    if partial is None and final is not None:
        return True
    if isinstance(partial, dict):
        if not isinstance(final, dict):
            return False
        keys = list(partial)
        if keys != list(final)[: len(keys)] or any(partial[k] != final[k] for k in keys[:-1]):
            return False
        return not keys or consistent(partial[keys[-1]], final[keys[-1]])
    if isinstance(partial, list):
        if not isinstance(final, list) or len(partial) > len(final):
            return False
        if any(a != b for a, b in zip(partial[:-1], final, strict=False)):
            return False
        return not partial or consistent(partial[-1], final[len(partial) - 1])
    if isinstance(partial, str):
        return isinstance(final, str) and final.startswith(partial)
    return type(partial) is type(final) and partial == final


@pytest.fixture(scope="session")
def schema_registry() -> Registry:
    """A registry of the installed ``seamkit-schema-*`` distributions (their entry points),
    loaded strictly; other plugins in the environment are left out."""
    from importlib.metadata import entry_points

    mine = [ep for ep in entry_points(group="seamkit")
            if ep.dist is not None and ep.dist.metadata["Name"].startswith("seamkit-schema-")]
    registry = load_registry(strict=True, entry_points=mine)
    assert registry.names("schema_adapter") == ["attrs", "dataclass", "jsonschema", "pydantic"]
    return registry


@pytest.fixture(scope="session")
def check_prefixes() -> Callable[[SchemaAdapter, str, Any], None]:
    """``check(adapter, text, data)``: for every prefix of ``text``, ``partial_parse`` returns a
    value consistent with ``data`` (the complete document's JSON data) and with the previous
    prefix's value, and ``partial_parse(text)`` is consistent too."""

    def check(adapter: SchemaAdapter, text: str, data: Any) -> None:
        previous: Any = None
        for i in range(len(text) + 1):
            got = adapter.partial_parse(text[:i])
            assert consistent(got, data), (text[:i], got)
            assert got is None or consistent(previous, got), (text[:i], previous, got)
            if got is not None:
                previous = got
        if text.rstrip()[-1:] in ("}", "]"):  # a complete object or array: partial_parse has it all
            assert previous == data, (previous, data)

    return check
