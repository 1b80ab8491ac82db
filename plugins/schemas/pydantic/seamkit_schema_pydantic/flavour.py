"""The ``pydantic`` schema flavour: pydantic models, pydantic dataclasses and any other type
pydantic's ``TypeAdapter`` describes (``TypedDict``, ``list[Model]``, unions, ``Literal``, enums,
scalars), except plain standard-library dataclasses, left to the ``dataclass`` flavour."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Any

import pydantic
from pydantic.dataclasses import is_pydantic_dataclass
from seamkit.errors import OutputValidationError
from seamkit.plugin import BaseSchemaAdapter, raw_text

__all__ = ["PydanticFlavour", "PydanticSchemaAdapter", "build", "problems_of"]


def problems_of(exc: pydantic.ValidationError) -> list[str]:
    """One ``"path: message"`` line per error (``(root)`` for the value itself)."""
    return [f"{'/'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()]


class PydanticSchemaAdapter(BaseSchemaAdapter):
    """A :class:`~seamkit._schemas.SchemaAdapter` over a pydantic ``TypeAdapter``.

    ``validate`` takes JSON data (lax mode: ISO date strings, enum values, lists for tuples) and
    returns the typed value; ``serialize`` is ``dump_python(mode="json")``. Errors:
    :class:`~seamkit.errors.OutputValidationError`, one ``"path: message"`` problem per error.
    """

    def __init__(self, tp: Any, type_adapter: pydantic.TypeAdapter[Any] | None = None, *,
                 name: str = "pydantic") -> None:
        self.name = name
        self.python_type = tp
        self._ta: pydantic.TypeAdapter[Any] = type_adapter or pydantic.TypeAdapter(tp)
        self._schema: dict[str, Any] | None = None

    def json_schema(self) -> dict[str, Any]:
        if self._schema is None:
            self._schema = self._ta.json_schema()
        return copy.deepcopy(self._schema)

    def validate(self, value: Any) -> Any:
        try:
            return self._ta.validate_python(value)
        except pydantic.ValidationError as exc:
            raise OutputValidationError(problems_of(exc), raw_text(value)) from None

    def serialize(self, value: Any) -> Any:
        """JSON data for ``value``. Raises ``pydantic.PydanticSerializationError`` for a value of
        another type than the adapted one that pydantic cannot serialize."""
        return self._ta.dump_python(value, mode="json")


class PydanticFlavour:
    """Supports what pydantic can describe, except standard-library dataclasses (their own
    flavour) and mappings (raw JSON Schemas: the ``jsonschema`` flavour)."""

    name = "pydantic"
    priority = 10

    def __init__(self) -> None:
        self._last: tuple[Any, pydantic.TypeAdapter[Any]] | None = None

    def supports(self, tp: Any) -> bool:
        if isinstance(tp, Mapping) or tp is None:
            return False
        if isinstance(tp, type):
            if issubclass(tp, pydantic.BaseModel) or is_pydantic_dataclass(tp):
                return True
            if dataclasses.is_dataclass(tp):
                return False
        try:
            ta: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(tp)
        except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError, TypeError, ValueError,
                AttributeError, NameError):
            return False
        self._last = (tp, ta)
        return True

    def explain(self, tp: Any) -> str | None:
        """Why pydantic refuses ``tp`` when the cause is a usage mistake pydantic names (such as
        ``typing.TypedDict`` on Python < 3.12); ``None`` otherwise."""
        if isinstance(tp, Mapping):
            return None
        try:
            pydantic.TypeAdapter(tp)
        except pydantic.PydanticUserError as exc:
            return f"pydantic: {str(exc).splitlines()[0]}"
        except Exception:
            return None
        return None

    def adapter(self, tp: Any) -> PydanticSchemaAdapter:
        """Raises pydantic's ``PydanticSchemaGenerationError`` (a ``TypeError``) for a type pydantic
        cannot describe."""
        last = self._last
        if last is not None and last[0] is tp:
            self._last = None
            return PydanticSchemaAdapter(tp, last[1])
        return PydanticSchemaAdapter(tp)


def build() -> PydanticFlavour:
    """The ``pydantic`` ``schema_adapter`` component (no parameters)."""
    return PydanticFlavour()
