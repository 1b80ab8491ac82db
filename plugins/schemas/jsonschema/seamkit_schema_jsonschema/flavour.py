"""The ``jsonschema`` schema flavour: output described by a raw JSON Schema (draft 2020-12) and
returned as plain JSON data, validated with ``jsonschema``.

The schema is checked once, when the adapter is built, with
:meth:`seamkit._agent.output.OutputSpec.from_json_schema` (metaschema, ``pattern`` regexes, every
``$ref`` resolvable inside the schema itself). Validation uses an empty ``referencing`` registry,
so a remote ``$ref`` is never fetched.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import jsonschema
import referencing
from seamkit import OutputSpec
from seamkit.errors import OutputValidationError
from seamkit.plugin import BaseSchemaAdapter, raw_text
from seamkit.values import thaw

__all__ = ["JsonSchemaAdapter", "JsonSchemaFlavour", "build"]


class JsonSchemaAdapter(BaseSchemaAdapter):
    """A :class:`~seamkit._schemas.SchemaAdapter` for a raw JSON Schema; ``python_type`` is the
    schema (a plain ``dict``).

    ``validate`` returns the JSON data itself when it conforms, else raises
    :class:`~seamkit.errors.OutputValidationError` listing every error as ``"path: message"``
    (``(root)`` for the document). ``serialize`` returns a plain deep copy (frozen values thawed).

    Raises ``ValueError`` at construction for an invalid schema or a ``$ref`` that cannot be
    resolved within it (remote references are refused, never fetched).
    """

    name = "jsonschema"

    def __init__(self, schema: Mapping[str, Any]) -> None:
        OutputSpec.from_json_schema(schema)  # raises ValueError naming the problem
        plain: dict[str, Any] = thaw(dict(schema))
        self.python_type = plain
        self._schema = plain
        self._validator = jsonschema.Draft202012Validator(plain, registry=referencing.Registry())

    def json_schema(self) -> dict[str, Any]:
        return copy.deepcopy(self._schema)

    def validate(self, value: Any) -> Any:
        data = thaw(value)
        errors = sorted(self._validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
        if errors:
            problems = [f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}" for e in errors]
            raise OutputValidationError(problems, raw_text(data)) from None
        return data

    def serialize(self, value: Any) -> Any:
        return thaw(value)


class JsonSchemaFlavour:
    """Supports mappings: a JSON Schema given as the output type."""

    name = "jsonschema"
    priority = 40

    def supports(self, tp: Any) -> bool:
        return isinstance(tp, Mapping)

    def adapter(self, tp: Any) -> JsonSchemaAdapter:
        """Raises ``TypeError`` for a non-mapping, ``ValueError`` for an invalid schema."""
        if not isinstance(tp, Mapping):
            raise TypeError(f"the jsonschema flavour adapts a JSON Schema mapping, not {tp!r}")
        return JsonSchemaAdapter(tp)


def build() -> JsonSchemaFlavour:
    """The ``jsonschema`` ``schema_adapter`` component (no parameters)."""
    return JsonSchemaFlavour()
