"""The ``attrs`` schema flavour: attrs classes, and type expressions containing them
(``list[Point]``, ``Point | None``, ``dict[str, Point]``).

pydantic does not describe attrs classes (``TypeAdapter`` raises ``PydanticSchemaGenerationError``
for them), so this flavour builds the JSON Schema itself from ``attrs.fields`` (each attrs class a
``$defs`` entry, containers and unions mapped structurally, every other leaf type described by
pydantic's ``TypeAdapter``), validates JSON data against that schema with ``jsonschema`` (strict
JSON types: cattrs alone would turn ``5.7`` into ``5`` for an ``int``), then builds the instances
with cattrs' JSON converter (which also runs attrs validators).
"""

from __future__ import annotations

import collections.abc as cabc
import copy
import json
import re
import types
import typing
from typing import Any

import attrs
import cattrs
import jsonschema
import referencing
from cattrs.preconf.json import make_converter
from seamkit.errors import OutputValidationError
from seamkit.plugin import BaseSchemaAdapter, raw_text
from seamkit.values import thaw

__all__ = ["AttrsFlavour", "AttrsSchemaAdapter", "build", "contains_attrs", "attrs_json_schema"]

_SEQUENCES = {list, cabc.Sequence, cabc.MutableSequence, cabc.Iterable, cabc.Collection}
_SETS = {set, frozenset, cabc.Set, cabc.MutableSet}
_MAPPINGS = {dict, cabc.Mapping, cabc.MutableMapping}
_MAX_DEPTH = 64


def contains_attrs(tp: Any, depth: int = 0) -> bool:
    """Whether ``tp`` is an attrs class or a type expression with one inside."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(tp, type) and attrs.has(tp):
        return True
    return any(contains_attrs(a, depth + 1) for a in typing.get_args(tp))


def attrs_json_schema(tp: Any) -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) for ``tp``: each attrs class an object with its fields as
    properties (attribute names), the fields without a default ``required``, a field's
    ``metadata["description"]`` as its description, simple defaults as ``default``. Nested attrs
    classes go to ``$defs``; the root class is inlined unless it refers to itself.

    Raises ``TypeError`` naming the class when an annotation cannot be resolved, and pydantic's
    ``PydanticSchemaGenerationError`` (a ``TypeError``) for a leaf type nothing describes.
    """
    builder = _SchemaBuilder()
    root = builder.schema(tp, 0)
    defs = builder.defs
    ref = root.get("$ref") if isinstance(root, dict) else None
    if isinstance(ref, str) and len(root) == 1:
        name = ref.rsplit("/", 1)[-1]
        if json.dumps(ref) not in json.dumps(defs):  # not self-referential: inline the root class
            root = defs.pop(name)
    if defs:
        root = {**root, "$defs": defs}
    return root


class _SchemaBuilder:
    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}
        self.names: dict[type, str] = {}

    def schema(self, tp: Any, depth: int) -> dict[str, Any]:
        if depth > _MAX_DEPTH:
            raise TypeError(f"type nested too deeply to describe: {tp!r}")
        if tp is Any or tp is object:
            return {}
        if tp is None or tp is type(None):
            return {"type": "null"}
        if isinstance(tp, type) and attrs.has(tp):
            return {"$ref": f"#/$defs/{self._define(tp, depth)}"}
        if not contains_attrs(tp):
            return self._leaf(tp)
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)
        if origin is typing.Annotated:
            return self.schema(args[0], depth + 1)
        if origin is typing.Union or origin is types.UnionType:
            branches = [self.schema(a, depth + 1) for a in args]
            return {"anyOf": branches}
        if origin in _SEQUENCES:
            return {"type": "array", "items": self.schema(args[0], depth + 1) if args else {}}
        if origin in _SETS:
            return {"type": "array", "uniqueItems": True, "items": self.schema(args[0], depth + 1) if args else {}}
        if origin is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                return {"type": "array", "items": self.schema(args[0], depth + 1)}
            items = [self.schema(a, depth + 1) for a in args]
            return {"type": "array", "prefixItems": items, "items": False, "minItems": len(items),
                    "maxItems": len(items)}
        if origin in _MAPPINGS:
            if args and args[0] is not str:
                raise TypeError(f"JSON object keys are strings; cannot describe {tp!r}")
            return {"type": "object", "additionalProperties": self.schema(args[1], depth + 1) if args else {}}
        raise TypeError(f"the attrs flavour cannot describe {tp!r}")

    def _define(self, cls: type, depth: int) -> str:
        name = self.names.get(cls)
        if name is not None:
            return name
        base = cls.__name__
        name = base
        n = 1
        while name in self.defs:
            n += 1
            name = f"{base}_{n}"
        self.names[cls] = name
        self.defs[name] = {}  # placeholder: a class referring to itself stops here
        try:
            attrs.resolve_types(cls)
        except Exception as exc:
            raise TypeError(f"cannot resolve the annotations of attrs class {cls.__qualname__}: {exc}") from None
        props: dict[str, Any] = {}
        required: list[str] = []
        for f in attrs.fields(cls):
            if not f.init:
                continue
            if f.type is None:
                raise TypeError(f"attrs class {cls.__qualname__}: field {f.name!r} has no type annotation")
            sub = dict(self.schema(f.type, depth + 1))
            description = f.metadata.get("description") if f.metadata else None
            if isinstance(description, str):
                sub = {**sub, "description": description} if "$ref" not in sub else {
                    "allOf": [sub], "description": description}
            if f.default is attrs.NOTHING:
                required.append(f.name)
            elif not isinstance(f.default, attrs.Factory) and isinstance(  # type: ignore[arg-type]
                    f.default, (str, int, float, bool, type(None))):
                sub["default"] = f.default
            props[f.name] = sub
        schema: dict[str, Any] = {"type": "object", "title": cls.__name__, "properties": props}
        if required:
            schema["required"] = required
        doc = cls.__doc__
        if doc and not doc.startswith(f"{cls.__name__}("):  # attrs' generated docstring says nothing
            schema["description"] = doc.strip()
        self.defs[name] = schema
        return name

    def _leaf(self, tp: Any) -> dict[str, Any]:
        import pydantic

        schema = pydantic.TypeAdapter(tp).json_schema()
        defs = schema.pop("$defs", None)
        if isinstance(defs, dict):
            for key, value in defs.items():
                self.defs.setdefault(key, value)
        return schema


class AttrsSchemaAdapter(BaseSchemaAdapter):
    """A :class:`~seamkit._schemas.SchemaAdapter` for an attrs class (or a type expression with
    attrs classes inside).

    ``validate``: JSON data to instances; raises :class:`~seamkit.errors.OutputValidationError`
    listing every schema error as ``"path: message"``, or what cattrs / an attrs validator refused.
    An instance of the adapted class is returned as it is. ``serialize``: cattrs' JSON
    unstructuring (dates as ISO strings, enums as values).
    """

    name = "attrs"

    def __init__(self, tp: Any) -> None:
        self.python_type = tp
        self._schema = attrs_json_schema(tp)
        self._validator = jsonschema.Draft202012Validator(self._schema, registry=referencing.Registry())
        self._converter = make_converter()

    def json_schema(self) -> dict[str, Any]:
        return copy.deepcopy(self._schema)

    def validate(self, value: Any) -> Any:
        tp = self.python_type
        if isinstance(tp, type) and isinstance(value, tp):
            return value
        data = thaw(value)
        errors = sorted(self._validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
        if errors:
            problems = [f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}" for e in errors]
            raise OutputValidationError(problems, raw_text(data))
        try:
            return self._converter.structure(data, tp)
        except (cattrs.ClassValidationError, cattrs.IterableValidationError) as exc:
            problems = [_cattrs_problem(line) for line in cattrs.transform_error(exc, format_exception=_format)]
            raise OutputValidationError(problems, raw_text(data)) from None
        except Exception as exc:  # an attrs validator or converter refusing the value
            raise OutputValidationError([f"(root): {type(exc).__name__}: {exc}"], raw_text(data)) from None

    def serialize(self, value: Any) -> Any:
        return _jsonable(self._converter.unstructure(value, unstructure_as=self.python_type))


def _jsonable(value: Any) -> Any:
    # cattrs leaves tuples (and frozensets/sets) as they are; JSON data has lists
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    return value


def _format(exc: BaseException, tp: Any) -> str:
    if isinstance(exc, (ValueError, TypeError)) and str(exc):  # attrs validators say what was wrong
        return f"{type(exc).__name__}: {exc}"
    return cattrs.v.format_exception(exc, tp)


_CATTRS_PATH = re.compile(r"\.([^.\[]+)|\[['\"]?([^\]'\"]*)['\"]?\]")


def _cattrs_problem(line: str) -> str:
    """cattrs' ``"message @ $.a[0].b"`` as ``"a/0/b: message"`` like the other flavours."""
    message, sep, path = line.rpartition(" @ $")
    if not sep:
        return line
    parts = [m.group(1) or m.group(2) for m in _CATTRS_PATH.finditer(path)]
    return f"{'/'.join(parts) or '(root)'}: {message}"


class AttrsFlavour:
    """Supports attrs classes and type expressions containing them."""

    name = "attrs"
    priority = 20

    def supports(self, tp: Any) -> bool:
        return contains_attrs(tp)

    def adapter(self, tp: Any) -> AttrsSchemaAdapter:
        """Raises ``TypeError`` for a type without attrs classes or one it cannot describe."""
        if not contains_attrs(tp):
            raise TypeError(f"the attrs flavour adapts attrs classes, not {tp!r}")
        return AttrsSchemaAdapter(tp)


def build() -> AttrsFlavour:
    """The ``attrs`` ``schema_adapter`` component (no parameters)."""
    return AttrsFlavour()
