"""Compile a canonical JSON Schema into the dialect Claude's structured outputs accept.

Follows "Structured outputs" -> "JSON Schema limitations" (platform.claude.com, read 2026-11-30):

- supported: the basic types (``object``, ``array``, ``string``, ``integer``, ``number``,
  ``boolean``, ``null``, also as a list), ``enum`` of primitives, ``const``, ``anyOf``, ``allOf``
  (not combined with ``$ref``), local ``$ref`` into ``$defs`` / ``definitions``, ``required``,
  ``additionalProperties: false`` (added to every object that does not say it), ``default``,
  ``description``, string ``format`` (date-time, time, date, duration, email, hostname, uri, ipv4,
  ipv6, uuid), ``pattern``, array ``items`` with ``minItems`` 0 or 1;
- not supported, refused with :class:`~seamkit.errors.UnsupportedFeature` naming the construct and
  its JSON path before anything is sent: recursive schemas, numeric constraints (``minimum``,
  ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``, ``multipleOf``), string length
  constraints (``minLength``, ``maxLength``), array constraints beyond ``minItems`` 0/1
  (``maxItems``, ``uniqueItems``, ``contains``, ``prefixItems``...), ``additionalProperties`` other
  than ``false``, complex values in ``enum``, external ``$ref``, and every keyword not listed above
  (``oneOf``, ``not``, ``if``/``then``/``else``, ``patternProperties``, ``dependentRequired``...).
- annotation-only keywords (``title``, ``$schema``, ``$id``, ``$comment``, ``examples``,
  ``deprecated``, ``readOnly``, ``writeOnly``) are dropped: they never change which values are
  valid, and the caller validates the answer against the canonical schema anyway.

:func:`to_tool_schema` is the lighter check for the forced-tool route (a tool's ``input_schema``
takes any JSON Schema object): the root must be an object schema.

Nothing is refused on the way to the wire (``request.py`` chooses the route):

- :func:`native_plan` compiles for ``output_config.format`` after rewriting a root that is not an
  object (``A | B``: a root ``anyOf``; a list; a scalar) into an object with one property
  (:mod:`seamkit._schema_wrap`); what the dialect still cannot express raises
  :class:`AnthropicSchemaError` naming the construct and its canonical JSON path, and the caller
  falls back to the forced-tool route (or, where forced tool use is impossible, to the schema in
  the system prompt).
- :func:`tool_input_plan` gives a tool's ``input_schema`` (a real tool's or the forced answer
  tool's): the canonical schema, its root rewritten when it is not a plain object (the tools API
  requires ``type: object`` and answers 400 "input_schema does not support oneOf, allOf, or anyOf at
  the top level").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from seamkit.errors import UnsupportedFeature
from seamkit.plugin import canonical_path, normalize_root, plain_schema, wrap_root

__all__ = ["to_native", "to_tool_schema", "native_plan", "tool_input_plan", "SchemaPlan", "AnthropicSchemaError",
           "SUPPORTED_FORMATS"]

SUPPORTED_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
_ANNOTATIONS = frozenset({"title", "$schema", "$id", "$comment", "examples", "deprecated", "readOnly", "writeOnly"})
_KEPT = frozenset(
    {"type", "enum", "const", "anyOf", "allOf", "$ref", "required", "properties", "additionalProperties",
     "default", "description", "format", "pattern", "items", "minItems", "$defs", "definitions"}
)
_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})


def _path(parent: str, key: str) -> str:
    return f"{parent}.{key}" if key.isidentifier() else f"{parent}[{key!r}]"


class AnthropicSchemaError(UnsupportedFeature):
    """What Claude's structured outputs cannot express: ``path`` (``$...``), ``construct`` and
    ``why``; ``feature`` is ``"<path>: <construct>"``."""

    def __init__(self, path: str, construct: str, why: str, *, provider: str | None, model: str | None) -> None:
        self.path = path
        self.construct = construct
        self.why = why
        super().__init__(
            f"structured output: {path}: {construct} {why} (Claude structured outputs, 'JSON Schema limitations')",
            provider=provider, model=model, feature=f"{path}: {construct}",
        )


class _Compiler:
    def __init__(self, root: Mapping[str, Any], provider: str | None, model: str | None) -> None:
        self.root = root
        self.provider = provider
        self.model = model

    def fail(self, path: str, construct: str, why: str) -> AnthropicSchemaError:
        return AnthropicSchemaError(path, construct, why, provider=self.provider, model=self.model)

    def resolve(self, ref: str, path: str) -> tuple[str, Mapping[str, Any]]:
        if not ref.startswith("#/"):
            raise self.fail(path, "$ref", f"{ref!r} is external; only local references (#/$defs/...) are supported")
        node: Any = self.root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                raise self.fail(path, "$ref", f"{ref!r} does not resolve inside the schema")
            node = node[part]
        if not isinstance(node, Mapping):
            raise self.fail(path, "$ref", f"{ref!r} does not point at a schema object")
        return ref, node

    def check_recursion(self, node: Any, path: str, stack: tuple[str, ...]) -> None:
        if isinstance(node, Mapping):
            ref = node.get("$ref")
            if isinstance(ref, str):
                if ref in stack:
                    raise self.fail(path, "$ref", f"{ref!r} is recursive; recursive schemas are not supported")
                _, target = self.resolve(ref, path)
                self.check_recursion(target, "$" + ref[1:].replace("/", "."), (*stack, ref))
            for k, v in node.items():
                if k in ("$defs", "definitions", "enum", "const", "default", "examples"):
                    continue
                self.check_recursion(v, _path(path, str(k)), stack)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                self.check_recursion(v, f"{path}[{i}]", stack)

    def compile(self, node: Any, path: str) -> Any:
        if isinstance(node, bool):
            raise self.fail(path, f"boolean schema {str(node).lower()}", "is not supported; write an object schema")
        if not isinstance(node, Mapping):
            raise self.fail(path, "schema", f"must be an object, got {type(node).__name__}")
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _ANNOTATIONS:
                continue
            if key not in _KEPT:
                raise self.fail(path, key, "is not supported")
            sub = _path(path, key)
            if key == "type":
                listed = value if isinstance(value, list) else [value]
                bad = [t for t in listed if t not in _TYPES]
                if bad:
                    raise self.fail(path, "type", f"{bad[0]!r} is not a JSON Schema type")
                out[key] = list(value) if isinstance(value, list) else value
            elif key == "enum":
                if not isinstance(value, list) or not value:
                    raise self.fail(path, "enum", "must be a non-empty list")
                for v in value:
                    if isinstance(v, dict | list):
                        raise self.fail(path, "enum", "with complex (object or array) values is not supported")
                out[key] = list(value)
            elif key == "const":
                if isinstance(value, dict | list):
                    raise self.fail(path, "const", "with a complex (object or array) value is not supported")
                out[key] = value
            elif key in ("anyOf", "allOf"):
                if not isinstance(value, list) or not value:
                    raise self.fail(path, key, "must be a non-empty list of schemas")
                if key == "allOf" and any(isinstance(s, Mapping) and "$ref" in s for s in value):
                    raise self.fail(path, "allOf", "combined with $ref is not supported")
                out[key] = [self.compile(s, f"{sub}[{i}]") for i, s in enumerate(value)]
            elif key == "$ref":
                if not isinstance(value, str):
                    raise self.fail(path, "$ref", "must be a string")
                self.resolve(value, path)
                out[key] = value
            elif key in ("$defs", "definitions"):
                if not isinstance(value, Mapping):
                    raise self.fail(path, key, "must be an object of schemas")
                out[key] = {str(n): self.compile(s, _path(sub, str(n))) for n, s in value.items()}
            elif key == "properties":
                if not isinstance(value, Mapping):
                    raise self.fail(path, "properties", "must be an object of schemas")
                out[key] = {str(n): self.compile(s, _path(sub, str(n))) for n, s in value.items()}
            elif key == "additionalProperties":
                if value is not False:
                    raise self.fail(path, "additionalProperties", "other than false is not supported")
                out[key] = False
            elif key == "items":
                if not isinstance(value, Mapping):
                    raise self.fail(path, "items", "must be a single schema (tuple forms are not supported)")
                out[key] = self.compile(value, sub)
            elif key == "minItems":
                if value not in (0, 1) or isinstance(value, bool):
                    raise self.fail(path, "minItems", f"{value!r} is not supported (only 0 or 1)")
                out[key] = value
            elif key == "format":
                if value not in SUPPORTED_FORMATS:
                    known = ", ".join(sorted(SUPPORTED_FORMATS))
                    raise self.fail(path, "format", f"{value!r} is not supported (supported: {known})")
                out[key] = value
            elif key == "required":
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise self.fail(path, "required", "must be a list of property names")
                out[key] = list(value)
            else:  # default, description, pattern
                out[key] = value
        declared: Any = out.get("type")
        types = declared
        is_object = types == "object" or (isinstance(types, list) and "object" in types) or "properties" in out
        if is_object and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out


def _object_root(schema: Mapping[str, Any], c: _Compiler) -> None:
    if not isinstance(schema, Mapping):
        raise c.fail("$", "schema", "must be a JSON Schema object")
    t = schema.get("type")
    if t != "object":
        raise c.fail("$", "root type", f"{t!r} is not supported; the root must be {{\"type\": \"object\"}}")


def to_native(schema: Mapping[str, Any], *, provider: str | None = None, model: str | None = None) -> dict[str, Any]:
    """``schema`` compiled for ``output_config.format`` (``{"type": "json_schema", "schema": ...}``
    takes the returned dict). Raises :class:`~seamkit.errors.UnsupportedFeature` whose ``feature``
    is ``"<json path>: <construct>"`` for anything the dialect cannot express (an
    :class:`AnthropicSchemaError`)."""
    plain = plain_schema(schema)
    c = _Compiler(plain, provider, model)
    _object_root(plain, c)
    c.check_recursion(plain, "$", ())
    compiled: dict[str, Any] = c.compile(plain, "$")
    return compiled


def to_tool_schema(
    schema: Mapping[str, Any], *, provider: str | None = None, model: str | None = None
) -> dict[str, Any]:
    """``schema`` as a tool ``input_schema`` for the forced-tool route: a plain copy (annotations
    kept) whose root must be ``{"type": "object"}``. Raises :class:`~seamkit.errors.UnsupportedFeature`."""
    plain = plain_schema(schema)
    c = _Compiler(plain, provider, model)
    _object_root(plain, c)
    out: dict[str, Any] = {k: v for k, v in plain.items() if k != "$schema"}
    return out


@dataclass(frozen=True, slots=True)
class SchemaPlan:
    """A schema ready for the wire: ``schema``; ``wrap_key``: the one property the canonical value
    is wrapped in (unwrap the reply with :func:`seamkit._schema_wrap.unwrap_deltas`), else ``None``;
    ``warning``: the explicit degradation to report (the root rewrite), else ``None``."""

    schema: dict[str, Any]
    wrap_key: str | None = None
    warning: str | None = None


def native_plan(schema: Mapping[str, Any], *, provider: str | None = None, model: str | None = None) -> SchemaPlan:
    """``schema`` for ``output_config.format``: :func:`to_native` of the schema, its root wrapped
    first when it is not a plain object schema. Raises :class:`AnthropicSchemaError` (``path`` and
    ``feature`` name the canonical JSON path) for what the dialect cannot express."""
    norm = normalize_root(plain_schema(schema))
    wrap = wrap_root(norm)
    try:
        compiled = to_native(wrap.schema if wrap is not None else norm, provider=provider, model=model)
    except AnthropicSchemaError as exc:
        if wrap is None:
            raise
        raise AnthropicSchemaError(canonical_path(exc.path, wrap.key), exc.construct, exc.why,
                                   provider=provider, model=model) from None
    if wrap is None:
        return SchemaPlan(compiled)
    return SchemaPlan(compiled, wrap.key, wrap.warning("structured output", "Claude's structured outputs"))


def tool_input_plan(schema: Mapping[str, Any], *, what: str, tool: bool = True) -> SchemaPlan:
    """``schema`` as a tool ``input_schema`` (never raises): the canonical schema without
    ``$schema``, after :func:`seamkit._schema_wrap.normalize_root` (``tool``: a real tool, whose
    arguments are an object by protocol; ``False`` for the forced answer tool, whose input is the
    answer) and wrapped when its root is not a plain object. ``what`` starts the warning
    (``"tool 'search' input_schema"``)."""
    norm = normalize_root(plain_schema(schema), tool=tool)
    wrap = wrap_root(norm, tool=tool)
    out = wrap.schema if wrap is not None else norm
    out = {k: v for k, v in out.items() if k != "$schema"} if isinstance(out, dict) else out
    if wrap is None:
        return SchemaPlan(out)
    return SchemaPlan(out, wrap.key, wrap.warning(what, "the Anthropic tools API"))
