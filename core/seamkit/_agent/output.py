"""``OutputSpec``: the typed output of an agent, as one canonical JSON Schema plus a validator."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from seamkit.errors import OutputValidationError
from seamkit.values import FrozenDict, freeze, thaw

__all__ = ["OutputSpec", "drop_absent_nulls", "output_spec"]

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?```\s*$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """What the final answer must be. ``schema``: canonical JSON Schema (draft 2020-12).
    ``python_type``: when set, the value is validated into that type (pydantic ``TypeAdapter``);
    otherwise validated with ``jsonschema`` and returned as plain JSON data. ``name`` labels it.
    """

    schema: FrozenDict
    python_type: Any = None
    name: str = "output"
    _validate: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def from_json_schema(cls, schema: Mapping[str, Any], name: str = "output") -> OutputSpec:
        """Raises ``ValueError`` when ``schema`` is not a valid JSON Schema (draft 2020-12, with
        ``pattern`` regexes checked), naming the first problem and where it is, or when a ``$ref``
        cannot be resolved inside the schema itself (nothing is ever fetched: remote references
        are refused)."""
        import jsonschema
        import referencing

        plain = thaw(schema)
        meta = jsonschema.Draft202012Validator(
            jsonschema.Draft202012Validator.META_SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
        )
        problem = jsonschema.exceptions.best_match(meta.iter_errors(plain))
        if problem is not None:
            where = "/".join(str(p) for p in problem.absolute_path) or "(root)"
            raise ValueError(f"invalid output JSON Schema at {where}: {problem.message}")
        # An empty registry that retrieves nothing: jsonschema's default one still fetches remote
        # $refs over the network.
        validator = jsonschema.Draft202012Validator(plain, registry=referencing.Registry())
        _check_refs(plain)

        def validate(value: Any) -> Any:
            errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
            if errors:
                raise ValueError(
                    [f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}" for e in errors]
                )
            return freeze(value)

        return cls(freeze(plain), None, name, validate)

    @classmethod
    def from_type(cls, tp: Any) -> OutputSpec:
        """From a Python type pydantic can describe (a model, dataclass, ``TypedDict``, ...)."""
        import pydantic

        from seamkit.errors import UnsupportedSchemaType

        try:
            adapter = pydantic.TypeAdapter(tp)
            schema = adapter.json_schema()
        except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError) as exc:
            # pydantic's own words ("set arbitrary_types_allowed...") would mislead here
            from seamkit.errors import OUTPUT_ACCEPTED

            raise UnsupportedSchemaType(tp, ("pydantic",), f"an agent's output type is described by pydantic, "
                                        f"which cannot describe it ({type(exc).__name__}); give {OUTPUT_ACCEPTED}"
                                        ) from None

        def validate(value: Any) -> Any:
            try:
                return adapter.validate_python(value)
            except pydantic.ValidationError as exc:
                raise ValueError(
                    [f"{'/'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()]
                ) from None

        name = getattr(tp, "__name__", "output")
        return cls(freeze(schema), tp, name, validate)

    def parse(self, text: str) -> Any:
        """Parse the model's final ``text`` (JSON, optionally in a Markdown code fence) and
        validate it. Raises :class:`~seamkit.errors.OutputValidationError` with the raw text."""
        m = _FENCE.match(text)
        body = m.group(1) if m else text
        try:
            value = json.loads(body, parse_constant=_no_constant)
        except json.JSONDecodeError as exc:
            raise OutputValidationError([f"not valid JSON: {exc.msg} (position {exc.pos})"], text) from None
        except RecursionError:
            raise OutputValidationError(["not usable JSON: nested too deeply"], text) from None
        except ValueError as exc:  # NaN/Infinity, or an integer too long to convert
            raise OutputValidationError([f"not usable JSON: {exc}"], text) from None
        try:
            return self._validate(drop_absent_nulls(value, self.schema))
        except ValueError as exc:
            problems = exc.args[0] if exc.args and isinstance(exc.args[0], list) else [str(exc)]
            raise OutputValidationError(problems, text) from None


def drop_absent_nulls(value: Any, schema: Any) -> Any:
    """``value`` without the ``null`` members that stand for an absent optional property.

    Strict structured-output dialects (OpenAI strict mode, "Structured Outputs": "all fields must
    be required"; optional ones are emulated as nullable) make the model write ``"x": null`` for an
    optional property it leaves out. Under the canonical schema that property is optional and may
    not accept ``null``; such members are removed before validation. A member is removed only when
    the property is not ``required`` and its schema visibly refuses ``null`` (a ``type`` without
    ``"null"``, a ``const``/``enum`` without it, a union whose branches all do). Follows
    ``properties``, ``items``, local ``$ref`` (and a single-``allOf`` wrapper), and for any value
    (object, array, ...) under ``anyOf``/``oneOf`` the first branch its shape fits (:func:`_fits`).
    Returns ``value`` itself when nothing changed."""
    return _drop(value, schema, schema, 0)


def _resolve(node: Any, root: Any) -> Any:
    for _ in range(32):  # a chain of $refs; cycles stop here
        ref = node.get("$ref") if isinstance(node, Mapping) else None
        if not isinstance(ref, str) or not ref.startswith("#"):
            break
        target: Any = root
        for part in ref[2:].split("/") if ref != "#" else ():
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, Mapping) or part not in target:
                return node
            target = target[part]
        node = target
    if isinstance(node, Mapping) and isinstance(node.get("allOf"), (list, tuple)) and len(node["allOf"]) == 1:
        # {"allOf": [{"$ref": ...}], "description": ...}: pydantic's way of annotating a reference
        return {**_resolve(node["allOf"][0], root), **{k: v for k, v in node.items() if k != "allOf"}}
    return node


def _refuses_null(node: Any, root: Any) -> bool:
    node = _resolve(node, root)
    if not isinstance(node, Mapping):
        return False
    if "const" in node:
        return node["const"] is not None
    if "enum" in node:
        return None not in node["enum"]
    t = node.get("type")
    if isinstance(t, str):
        return t != "null"
    if isinstance(t, (list, tuple)):
        return "null" not in t
    for key in ("anyOf", "oneOf"):
        branches = node.get(key)
        if isinstance(branches, (list, tuple)) and branches:
            return all(_refuses_null(b, root) for b in branches)
    return False


def _drop(value: Any, node: Any, root: Any, depth: int) -> Any:
    if depth > 64:
        return value
    node = _resolve(node, root)
    if not isinstance(node, Mapping):
        return value
    branches = _branches(node)
    if branches and not isinstance(node.get("properties"), Mapping) and not isinstance(node.get("items"), Mapping):
        # A union: any JSON type can hide an object below it (an array of objects, say), so pick the
        # branch for every kind of value, not only for objects.
        for branch in branches:
            if _fits(value, branch, root, depth + 1):
                return _drop(value, branch, root, depth + 1)
        return value
    if isinstance(value, dict):
        props = node.get("properties")
        required = node.get("required") or ()
        if not isinstance(props, Mapping):
            return value
        out: dict[str, Any] | None = None
        for k, v in value.items():
            sub = props.get(k)
            if sub is None:
                continue
            if v is None and k not in required and _refuses_null(sub, root):
                if out is None:
                    out = dict(value)
                del out[k]
                continue
            nv = _drop(v, sub, root, depth + 1)
            if nv is not v:
                if out is None:
                    out = dict(value)
                out[k] = nv
        return value if out is None else out
    if isinstance(value, list):
        items = node.get("items")
        if not isinstance(items, Mapping):
            return value
        new = [_drop(v, items, root, depth + 1) for v in value]
        return value if all(a is b for a, b in zip(new, value, strict=True)) else new
    return value


def _branches(node: Mapping[str, Any]) -> Sequence[Any]:
    for key in ("anyOf", "oneOf"):
        branches = node.get(key)
        if isinstance(branches, (list, tuple)) and branches:
            return branches
    return ()


_JSON_TYPES: dict[type, tuple[str, ...]] = {
    bool: ("boolean",), int: ("integer", "number"), float: ("number",), str: ("string",), type(None): ("null",),
    dict: ("object",), list: ("array",),
}


def _fits(value: Any, node: Any, root: Any, depth: int) -> bool:
    """Whether ``value`` has the shape ``node`` describes, reading an optional property's ``null``
    as absent (a strict-mode reply writes one for each property it leaves out): the JSON type, an
    object's keys within its ``properties`` and its ``required`` ones present, each member and
    array item fitting its schema, a scalar within ``const``/``enum``. Not a validator (string,
    number and size constraints are ignored): it only picks the union branch a value was written
    for, which the validation that follows then judges."""
    if depth > 64:
        return True
    node = _resolve(node, root)
    if not isinstance(node, Mapping):
        return node is not False
    branches = _branches(node)
    if branches and not any(_fits(value, b, root, depth + 1) for b in branches):
        return False
    if "const" in node and (node["const"] != value or type(node["const"]) is not type(value)):
        return False
    if "enum" in node and not any(v == value and type(v) is type(value) for v in node["enum"]):
        return False
    t = node.get("type")
    types = (t,) if isinstance(t, str) else tuple(t) if isinstance(t, (list, tuple)) else None
    if types is not None and not set(_JSON_TYPES.get(type(value), ())) & set(types):
        return False
    if isinstance(value, dict):
        props = node.get("properties")
        if not isinstance(props, Mapping):
            return True
        required = node.get("required") or ()
        return all(r in value for r in required) and all(
            k in props and ((v is None and k not in required) or _fits(v, props[k], root, depth + 1))
            for k, v in value.items())
    if isinstance(value, list):
        items = node.get("items")
        return not isinstance(items, (Mapping, bool)) or all(_fits(v, items, root, depth + 1) for v in value)
    return True


def _no_constant(name: str) -> Any:
    # json accepts NaN and Infinity, which are not JSON (RFC 8259 section 6) and would make the
    # printed output invalid JSON.
    raise ValueError(f"{name} is not a JSON number")


def _refs(node: Any) -> list[str]:
    found: list[str] = []
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            found.append(ref)
        for v in node.values():
            found.extend(_refs(v))
    elif isinstance(node, list):
        for v in node:
            found.extend(_refs(v))
    return found


def _check_refs(schema: Any) -> None:
    import referencing
    import referencing.exceptions
    from referencing.jsonschema import DRAFT202012

    resolver = referencing.Registry().resolver_with_root(DRAFT202012.create_resource(schema))
    for ref in _refs(schema):
        try:
            resolver.lookup(ref)
        except referencing.exceptions.Unresolvable:
            raise ValueError(f"$ref {ref!r} cannot be resolved within the schema (remote references are "
                             "not fetched)") from None


def output_spec(output: Any) -> OutputSpec | None:
    """Normalise an agent's ``output`` argument: ``None`` or ``str`` (free text) give ``None``; a
    mapping is a JSON Schema; an ``OutputSpec`` passes; anything else is a Python type."""
    if output is None or output is str:
        return None
    if isinstance(output, OutputSpec):
        return output
    if isinstance(output, Mapping):
        return OutputSpec.from_json_schema(output)
    from seamkit._schemas import _not_a_type

    if _not_a_type(output):
        from seamkit._plugins.registry import get_registry
        from seamkit.errors import UnsupportedSchemaType

        raise UnsupportedSchemaType(output, tuple(get_registry().names("schema_adapter")), value=True)
    return OutputSpec.from_type(output)
