"""Compile a canonical JSON Schema (draft 2020-12) to OpenAI's strict Structured Outputs dialect.

Public API (stable):

- :func:`to_strict(schema, *, provider=None, model=None) -> dict`: the strict schema.
- :func:`compile_strict(...) -> StrictSchema`: the strict schema plus ``relaxed``: one line per
  validation keyword that strict mode does not accept and that was dropped (the reply is validated
  against the canonical schema afterwards, so dropping only loosens decoding, never the contract).
- :func:`plan_schema(schema, *, strict, tool=False, what=..., ...) -> SchemaPlan`: how a canonical
  schema goes on the wire, never refused: its root rewritten into an object when the dialect needs
  one (:mod:`seamkit._schema_wrap`), strict-compiled when asked and possible, else sent as written
  with ``strict: false`` and one warning naming the construct and its JSON path.
- :func:`schema_name(schema) -> str`: a ``response_format.json_schema.name`` / ``text.format.name``
  for the schema (its ``title`` reduced to ``[A-Za-z0-9_-]{1,64}``, else ``"output"``).

Rules (OpenAI "Structured Outputs" guide, section "Supported schemas"):

- The root is an object (not ``anyOf``, not a ``$ref``).
- Every object gets ``additionalProperties: false`` and lists every property in ``required``;
  a property the canonical schema left optional becomes nullable (``type: [T, "null"]``, ``null``
  added to an ``enum``, or ``anyOf: [..., {"type": "null"}]`` around a ``$ref`` / ``anyOf``).
  An absent optional property and ``null`` then mean the same: callers drop the nulls of optional
  properties before validating against the canonical schema (:func:`drop_optional_nulls`).
- Supported: ``type`` string/number/integer/boolean/object/array/null, ``enum``, ``const``
  (sent as a one-value ``enum``), ``anyOf``, ``$defs``/``definitions`` with local ``$ref``
  (recursion included), ``description``/``title``; string ``pattern`` and ``format`` (date-time,
  time, date, duration, email, hostname, ipv4, ipv6, uuid); number ``minimum``, ``maximum``,
  ``exclusiveMinimum``, ``exclusiveMaximum``, ``multipleOf``; array ``items``, ``minItems``,
  ``maxItems``. ``oneOf`` is sent as ``anyOf`` (relaxed); a one-element ``allOf`` is inlined.
- Dropped and reported in ``relaxed``: ``minLength``, ``maxLength``, ``minProperties``,
  ``maxProperties``, ``uniqueItems``, other ``format`` values, ``contentEncoding``,
  ``contentMediaType``, unknown keywords. Dropped silently (annotations): ``$schema``, ``$id`` at
  the root, ``$comment``, ``examples``, ``default``, ``deprecated``, ``readOnly``, ``writeOnly``,
  ``discriminator`` (an OpenAPI annotation pydantic writes beside a tagged union's ``oneOf``).
- :func:`compile_strict` refuses with :class:`StrictSchemaError` (a
  :class:`~seamkit.errors.UnsupportedFeature`; ``feature`` = ``"<path>: <keyword>"``, e.g.
  ``"$.properties.tags: patternProperties"``): ``patternProperties``, ``additionalProperties``
  other than ``false``, an object without ``properties`` (a free-form map), ``propertyNames``,
  ``unevaluatedProperties``/``unevaluatedItems`` (other than ``false``), ``dependentRequired``,
  ``dependentSchemas``, ``if``/``then``/``else``, ``not``, an ``allOf`` of several schemas,
  ``prefixItems``, ``additionalItems``, ``contains`` (and ``minContains``/``maxContains``),
  ``$dynamicRef``/``$anchor``/``$recursiveRef``, a non-local or dangling ``$ref``, ``$ref`` with
  sibling constraints, a schema without a type (``{}`` or ``true``), an array without ``items``,
  more than 5000 properties in all, more than 10 levels of nesting, more than 1000 enum values.
  :func:`plan_schema` turns each of these into the non-strict form (``strict: false``; the OpenAI
  API still requires an object root, so a root union is wrapped either way).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from seamkit.errors import UnsupportedFeature
from seamkit.plugin import RootWrap, canonical_path, drop_absent_nulls, normalize_root, plain_schema, wrap_root

__all__ = ["StrictSchema", "StrictSchemaError", "SchemaPlan", "compile_strict", "plan_schema", "to_strict", "wrap_key",
           "schema_name", "drop_optional_nulls", "STRICT_FORMATS"]

STRICT_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})
MAX_PROPERTIES = 5000
MAX_NESTING = 10
MAX_ENUM_VALUES = 1000

_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
_REFUSED = (
    "patternProperties",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "if",
    "then",
    "else",
    "not",
    "prefixItems",
    "additionalItems",
    "contains",
    "minContains",
    "maxContains",
    "$dynamicRef",
    "$dynamicAnchor",
    "$anchor",
    "$recursiveRef",
    "$recursiveAnchor",
)
_RELAXED = frozenset(
    {"minLength", "maxLength", "minProperties", "maxProperties", "uniqueItems", "contentEncoding", "contentMediaType"}
)
_SILENT = frozenset({"$schema", "$comment", "examples", "default", "deprecated", "readOnly", "writeOnly",
                     "discriminator"})
_ANNOTATIONS = frozenset({"title", "description"})
_KEPT = {
    "string": ("pattern",),
    "number": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
    "integer": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
    "array": ("minItems", "maxItems"),
}
_HANDLED = frozenset(
    {"type", "enum", "const", "properties", "required", "additionalProperties", "items", "anyOf", "oneOf",
     "allOf", "$ref", "$defs", "definitions", "format", "unevaluatedProperties", "unevaluatedItems", "$id"}
) | {k for ks in _KEPT.values() for k in ks}


@dataclass(frozen=True, slots=True)
class StrictSchema:
    """A compiled strict schema (``schema``), the keywords dropped on the way (``relaxed``:
    ``"<path>: <keyword> dropped ..."`` lines) and the count of optional properties made nullable."""

    schema: dict[str, Any]
    relaxed: tuple[str, ...] = ()
    optional_made_nullable: int = 0
    """How many optional properties were made required-and-nullable (0: strict mode changes nothing
    about which documents are valid, beyond ``relaxed``)."""


class StrictSchemaError(UnsupportedFeature):
    """What strict mode cannot express: ``path`` (``$...``), ``construct`` (the keyword or construct)
    and ``why``; ``feature`` is ``"<path>: <construct>"``."""

    def __init__(self, path: str, construct: str, why: str, *, provider: str | None,
                 model: str | None) -> None:
        self.path = path
        self.construct = construct
        self.why = why
        super().__init__(f"OpenAI strict structured output cannot express {construct} at {path}: {why}",
                         provider=provider, model=model, feature=f"{path}: {construct}")


class _Compiler:
    def __init__(self, root: Mapping[str, Any], provider: str | None, model: str | None) -> None:
        self.root = root
        self.provider = provider
        self.model = model
        self.relaxed: list[str] = []
        self.properties = 0
        self.enum_values = 0
        self.nullable = 0

    def fail(self, path: str, construct: str, why: str) -> StrictSchemaError:
        return StrictSchemaError(path, construct, why, provider=self.provider, model=self.model)

    def relax(self, path: str, keyword: str, why: str = "not supported in strict mode") -> None:
        self.relaxed.append(f"{path}: {keyword} dropped ({why}; the reply is still validated against it)")

    # -- refs ---------------------------------------------------------------------------------

    def check_ref(self, ref: Any, path: str) -> None:
        if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
            raise self.fail(path, "$ref", f"only local references (#/$defs/...) are supported, got {ref!r}")
        node: Any = self.root
        for part in ref[2:].split("/") if ref != "#" else ():
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                raise self.fail(path, "$ref", f"{ref!r} points to nothing")
            node = node[part]

    # -- nodes --------------------------------------------------------------------------------

    def node(self, s: Any, path: str, *, nullable: bool, depth: int) -> dict[str, Any]:
        if isinstance(s, bool):
            what = "true (any value)" if s else "false (no value)"
            raise self.fail(path, f"the schema {what}", "strict mode needs a typed schema")
        if not isinstance(s, Mapping):
            raise self.fail(path, "a non-object schema", f"got {type(s).__name__}")
        if depth > MAX_NESTING:
            raise self.fail(path, "nesting", f"more than {MAX_NESTING} levels of nesting")
        for kw in _REFUSED:
            if kw in s:
                raise self.fail(path, kw, "not supported in strict mode")
        for kw in ("unevaluatedProperties", "unevaluatedItems"):
            if kw in s and s[kw] is not False:
                raise self.fail(path, kw, "not supported in strict mode")
        if "$id" in s and path != "$":
            raise self.fail(path, "$id", "nested schema ids are not supported")

        if "allOf" in s:
            parts = s["allOf"]
            if not isinstance(parts, Sequence) or len(parts) != 1 or not isinstance(parts[0], Mapping):
                raise self.fail(path, "allOf", "only a one-element allOf can be inlined")
            rest = {k: v for k, v in s.items() if k != "allOf"}
            clash = (set(rest) & set(parts[0])) - _ANNOTATIONS
            if clash:
                raise self.fail(path, "allOf", f"keywords {sorted(clash)} appear both inside and beside it")
            return self.node({**parts[0], **rest}, path, nullable=nullable, depth=depth)

        out: dict[str, Any] = {}
        for k in ("title", "description"):
            if k in s:
                out[k] = s[k]
        for k in s:
            if k in _SILENT or k in _ANNOTATIONS or k in _HANDLED:
                continue
            if k in _RELAXED:
                self.relax(path, k)
            else:
                self.relax(path, k, "unknown keyword")

        if "$ref" in s:
            extra = set(s) - _ANNOTATIONS - _SILENT - {"$ref"}
            if extra:
                raise self.fail(path, "$ref", f"sibling keywords {sorted(extra)} beside a $ref")
            self.check_ref(s["$ref"], path)
            if nullable:
                return {**out, "anyOf": [{"$ref": s["$ref"]}, {"type": "null"}]}
            return {**out, "$ref": s["$ref"]}

        for defs in ("$defs", "definitions"):
            if defs in s:
                if path != "$":
                    # Nested definitions are legal JSON Schema but hard to reference: keep them valid.
                    pass
                d = s[defs]
                if not isinstance(d, Mapping):
                    raise self.fail(path, defs, "must be an object of schemas")
                out[defs] = {
                    name: self.node(sub, f"{path}.{defs}.{name}", nullable=False, depth=0) for name, sub in d.items()
                }

        if "anyOf" in s or "oneOf" in s:
            if "anyOf" in s and "oneOf" in s:
                raise self.fail(path, "oneOf", "anyOf and oneOf together")
            key = "anyOf" if "anyOf" in s else "oneOf"
            if key == "oneOf":
                self.relax(path, "oneOf", "sent as anyOf")
            branches = s[key]
            if not isinstance(branches, Sequence) or isinstance(branches, str) or not branches:
                raise self.fail(path, key, "must be a non-empty list of schemas")
            if path == "$":
                raise self.fail(path, key, "the root must be an object, not a union")
            extra = set(s) - _ANNOTATIONS - _SILENT - _RELAXED - {key, "$defs", "definitions"}
            if extra:
                raise self.fail(path, key, f"sibling keywords {sorted(extra)} beside a union")
            out["anyOf"] = [
                self.node(b, f"{path}.{key}[{i}]", nullable=False, depth=depth) for i, b in enumerate(branches)
            ]
            if nullable and not any(b.get("type") == "null" for b in out["anyOf"]):
                out["anyOf"].append({"type": "null"})
            return out

        enum: list[Any] | None = None
        if "const" in s:
            enum = [s["const"]]
        if "enum" in s:
            values = s["enum"]
            if not isinstance(values, Sequence) or isinstance(values, str) or not values:
                raise self.fail(path, "enum", "must be a non-empty list")
            enum = [v for v in values if enum is None or v in enum]
        if enum is not None:
            self.enum_values += len(enum)
            if self.enum_values > MAX_ENUM_VALUES:
                raise self.fail(path, "enum", f"more than {MAX_ENUM_VALUES} enum values in all")

        types: list[str] = []
        if "type" in s:
            t = s["type"]
            types = [t] if isinstance(t, str) else list(t) if isinstance(t, Sequence) else []
            if not types or any(x not in _TYPES for x in types):
                raise self.fail(path, "type", f"unsupported type {t!r}")
        elif enum is not None:
            types = sorted({_json_type(v) for v in enum})
        else:
            raise self.fail(path, "a schema without a type", "strict mode needs type, enum, const, anyOf or $ref")

        if "object" in types:
            self.object(s, path, out, depth)
        elif "properties" in s or "additionalProperties" in s or "required" in s:
            pass  # object keywords on a non-object type have no effect: drop them
        if "array" in types:
            if "items" not in s:
                raise self.fail(path, "array without items", "strict mode needs the item schema")
            items = s["items"]
            if isinstance(items, Sequence):
                raise self.fail(path, "items", "tuple items (a list of schemas) are not supported")
            out["items"] = self.node(items, f"{path}.items", nullable=False, depth=depth + 1)
        for t in types:
            for k in _KEPT.get(t, ()):
                if k in s:
                    out[k] = s[k]
        if "format" in s:
            if "string" in types and s["format"] in STRICT_FORMATS:
                out["format"] = s["format"]
            else:
                self.relax(path, f"format {s['format']!r}")

        if nullable and "null" not in types:
            types.append("null")
            if enum is not None and None not in enum:
                enum.append(None)
        out["type"] = types[0] if len(types) == 1 else types
        if enum is not None:
            out["enum"] = enum
        return out

    def object(self, s: Mapping[str, Any], path: str, out: dict[str, Any], depth: int) -> None:
        addl = s.get("additionalProperties", False)
        if addl is not False:
            raise self.fail(path, "additionalProperties", "strict mode needs additionalProperties: false, so "
                            "a map with arbitrary keys cannot be expressed")
        props = s.get("properties")
        if props is None:
            if "additionalProperties" not in s:
                raise self.fail(path, "an object without properties", "a free-form object cannot be expressed; "
                                "list its properties")
            props = {}
        if not isinstance(props, Mapping):
            raise self.fail(path, "properties", "must be an object of schemas")
        required = s.get("required", [])
        if not isinstance(required, Sequence) or isinstance(required, str):
            raise self.fail(path, "required", "must be a list of names")
        missing = [r for r in required if r not in props]
        if missing:
            raise self.fail(path, "required", f"names properties that are not defined: {missing}")
        self.properties += len(props)
        if self.properties > MAX_PROPERTIES:
            raise self.fail(path, "properties", f"more than {MAX_PROPERTIES} properties in all")
        self.nullable += sum(1 for name in props if name not in required)
        out["properties"] = {
            name: self.node(sub, f"{path}.properties.{name}", nullable=name not in required, depth=depth + 1)
            for name, sub in props.items()
        }
        out["required"] = list(props)
        out["additionalProperties"] = False


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, Mapping):
        return "object"
    return "array"


def compile_strict(schema: Mapping[str, Any], *, provider: str | None = None,
                   model: str | None = None) -> StrictSchema:
    """Compile ``schema`` (see the module doc). Raises :class:`StrictSchemaError` (a
    :class:`~seamkit.errors.UnsupportedFeature`) naming the construct and its JSON path for what strict
    mode cannot express."""
    root = plain_schema(schema)
    c = _Compiler(root, provider, model)
    if not isinstance(root, dict):
        raise c.fail("$", "a non-object schema", "the root must be a JSON object schema")
    if root.get("type") != "object" or "anyOf" in root or "oneOf" in root or "$ref" in root:
        raise c.fail("$", "a root that is not an object", "the root schema must have type: object")
    out = c.node(root, "$", nullable=False, depth=1)
    return StrictSchema(out, tuple(c.relaxed), c.nullable)


def to_strict(schema: Mapping[str, Any], *, provider: str | None = None, model: str | None = None) -> dict[str, Any]:
    """The strict form of ``schema`` (see :func:`compile_strict`)."""
    return compile_strict(schema, provider=provider, model=model).schema


@dataclass(frozen=True, slots=True)
class SchemaPlan:
    """How one canonical schema goes on the wire (:func:`plan_schema`).

    ``schema``: the schema to send. ``strict``: send it with ``strict: true``. ``wrap_key``: the one
    property the canonical value is wrapped in (the root was rewritten; unwrap the reply with
    :func:`seamkit._schema_wrap.unwrap_deltas`), else ``None``. ``warnings``: explicit degradations,
    canonical JSON paths: the dropped keywords of a strict compilation (one line each) and at most one
    line for a root rewrite and/or the non-strict fallback. ``optional_made_nullable``: as in
    :class:`StrictSchema` (0 when not strict)."""

    schema: dict[str, Any]
    strict: bool
    wrap_key: str | None = None
    warnings: tuple[str, ...] = ()
    optional_made_nullable: int = 0
    exact: bool = False
    """Strict, and the compilation changed nothing: no keyword dropped, no optional property made
    nullable (the strict schema accepts exactly what the canonical one does)."""


def _wrap(plain: Any, *, strict: bool, tool: bool) -> RootWrap | None:
    if not isinstance(plain, dict) or not (strict or tool):
        return None
    return wrap_root(plain, tool=tool)


def wrap_key(schema: Mapping[str, Any], *, strict: bool, tool: bool = False) -> str | None:
    """The key :func:`plan_schema` wraps ``schema``'s canonical value in (same arguments), or
    ``None``; cheap (no compilation), for unwrapping a reply."""
    wrap = _wrap(plain_schema(schema), strict=strict, tool=tool)
    return wrap.key if wrap is not None else None


def plan_schema(schema: Mapping[str, Any], *, strict: bool, tool: bool = False, what: str = "structured output",
                provider: str | None = None, model: str | None = None) -> SchemaPlan:
    """The wire form of ``schema``; never raises for a schema construct.

    - The root: for a tool's parameters (``tool``) or a strict output schema, a root that is not a
      plain object schema (``anyOf`` / ``oneOf`` / ``allOf`` / ``$ref``, an array or scalar type) is
      wrapped (:func:`seamkit._schema_wrap.wrap_root`): OpenAI's "Supported schemas": "Root objects
      must not be anyOf and must be an object", and function ``parameters`` must be ``type:
      object`` in any mode. A non-strict output schema (an OpenAI-compatible server) is sent as
      written.
    - ``strict``: :func:`compile_strict`; where it refuses, the (wrapped) canonical schema goes with
      ``strict: false`` and one warning names the construct, its canonical JSON path and why.

    ``what`` starts each warning (``"structured output"``, ``"tool 'search'"``). The reply must be
    validated against the canonical schema (strict: after :func:`drop_optional_nulls`)."""
    candidate = plain_schema(schema)
    wrap = _wrap(candidate, strict=strict, tool=tool)
    if wrap is not None:
        candidate = wrap.schema
    elif isinstance(candidate, dict) and (strict or tool):
        candidate = normalize_root(candidate, tool=tool)
    key = wrap.key if wrap is not None else None

    def path(p: str) -> str:
        return canonical_path(p, key) if key is not None else p

    if not strict:
        return SchemaPlan(candidate, False, key, (wrap.warning(what, "OpenAI"),) if wrap is not None else ())
    try:
        compiled = compile_strict(candidate, provider=provider, model=model)
    except StrictSchemaError as exc:
        degraded = (f"{exc.construct} at {path(exc.path)} cannot be expressed in OpenAI strict mode ({exc.why}); "
                    "sent with strict: false")
        if wrap is None:
            line = f"{what}: {degraded}; the reply is validated against the schema"
        else:
            line = (f"{what}: {wrap.construct} at the root ($) sent as an object with one property {key!r} "
                    f"(unwrapped from the reply; OpenAI needs an object root), and {degraded}; the reply is "
                    "validated against the schema")
        return SchemaPlan(candidate, False, key, (line,))
    relaxed = [f"{what}: {path(r.split(': ', 1)[0])}: {r.split(': ', 1)[1]}" if ": " in r else f"{what}: {r}"
               for r in compiled.relaxed]
    if wrap is not None:
        relaxed.insert(0, wrap.warning(what, "OpenAI"))
    exact = not compiled.relaxed and compiled.optional_made_nullable == 0
    return SchemaPlan(compiled.schema, True, key, tuple(relaxed), compiled.optional_made_nullable, exact)


_NAME_BAD = re.compile(r"[^A-Za-z0-9_-]+")


def schema_name(schema: Mapping[str, Any]) -> str:
    """A name for the schema as the API wants it (``^[A-Za-z0-9_-]{1,64}$``): its ``title``
    with other characters replaced by ``_``, or ``"output"``."""
    title = schema.get("title") if isinstance(schema, Mapping) else None
    if isinstance(title, str):
        name = _NAME_BAD.sub("_", title).strip("_")[:64]
        if name:
            return name
    return "output"


def drop_optional_nulls(value: Any, schema: Mapping[str, Any]) -> Any:
    """``value`` (decoded from a strict reply) with ``null`` removed from each object property that
    ``schema`` (the canonical one) leaves optional and that does not itself allow ``null``, so the
    canonical schema validates what strict mode produced. The host does this before validating any
    typed output (:func:`seamkit._agent.output.drop_absent_nulls`); this is that function."""
    return drop_absent_nulls(plain_schema(value), plain_schema(schema))
