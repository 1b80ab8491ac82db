"""The ``dataclass`` schema flavour: standard-library dataclasses, described and validated through
pydantic's ``TypeAdapter`` (which understands them natively; nested dataclasses, ``Optional``,
lists, enums and dates included). Pydantic dataclasses belong to the ``pydantic`` flavour, which
:func:`seamkit._schemas.adapt` asks first."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pydantic
from pydantic.dataclasses import is_pydantic_dataclass
from seamkit.errors import OutputValidationError
from seamkit.plugin import BaseSchemaAdapter, raw_text

__all__ = ["DataclassFlavour", "DataclassSchemaAdapter", "build"]


class DataclassSchemaAdapter(BaseSchemaAdapter):
    """A :class:`~seamkit._schemas.SchemaAdapter` for one dataclass.

    ``validate``: JSON data (a ``dict``) or an instance to an instance; raises
    :class:`~seamkit.errors.OutputValidationError` with one ``"path: message"`` problem per error.
    ``serialize``: an instance to JSON data (dates as ISO strings, enums as values).
    """

    name = "dataclass"

    def __init__(self, tp: type) -> None:
        self.python_type = tp
        self._ta: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(tp)
        self._schema: dict[str, Any] | None = None

    def json_schema(self) -> dict[str, Any]:
        if self._schema is None:
            self._schema = self._ta.json_schema()
        return copy.deepcopy(self._schema)

    def validate(self, value: Any) -> Any:
        try:
            return self._ta.validate_python(value)
        except pydantic.ValidationError as exc:
            problems = [f"{'/'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()]
            raise OutputValidationError(problems, raw_text(value)) from None

    def serialize(self, value: Any) -> Any:
        return self._ta.dump_python(value, mode="json")


class DataclassFlavour:
    """Supports standard-library dataclass classes (not instances, not pydantic dataclasses)."""

    name = "dataclass"
    priority = 30

    def supports(self, tp: Any) -> bool:
        return isinstance(tp, type) and dataclasses.is_dataclass(tp) and not is_pydantic_dataclass(tp)

    def adapter(self, tp: Any) -> DataclassSchemaAdapter:
        """Raises ``TypeError`` for anything but a dataclass class, and pydantic's
        ``PydanticSchemaGenerationError`` (a ``TypeError``) for a field type it cannot describe."""
        if not self.supports(tp):
            raise TypeError(f"the dataclass flavour adapts dataclass classes, not {tp!r}")
        return DataclassSchemaAdapter(tp)


def build() -> DataclassFlavour:
    """The ``dataclass`` ``schema_adapter`` component (no parameters)."""
    return DataclassFlavour()
