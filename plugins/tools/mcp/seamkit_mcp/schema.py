"""An MCP tool's input schema, made usable by every provider, and arguments checked against it.

Servers send all sorts: no schema, ``{}``, ``None``, a schema without ``"type"`` or without
``"properties"``, a ``"$schema"`` key that some providers reject, keywords with invalid values.
:func:`normalise_schema` always returns a JSON Schema (draft 2020-12) object schema with a
``"properties"`` object, which OpenAI, Anthropic and llama.cpp's grammar generator all accept,
including for a tool that takes no arguments (``{"type": "object", "properties": {}}``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from seamkit.errors import ToolArgumentError

__all__ = ["ArgumentValidator", "normalise_schema"]

_EMPTY: dict[str, Any] = {"type": "object", "properties": {}}
_DROP = ("$schema", "$id")  # a dialect or base URI some providers reject; the dialect is 2020-12 here


def _plain(value: Any) -> Any:
    """``value`` as plain JSON data (dicts with string keys, lists, scalars); what is not JSON
    (a set, NaN...) is dropped by the caller's checks."""
    try:
        return json.loads(json.dumps(value, allow_nan=False, default=str))
    except (TypeError, ValueError):
        return None


def _valid(schema: Mapping[str, Any]) -> bool:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        return False
    except Exception:  # a $ref the checker cannot follow, a recursion limit...: not usable
        return False
    return True


def normalise_schema(raw: Any) -> dict[str, Any]:
    """``raw`` (an MCP tool's ``inputSchema``, anything) as a valid object schema.

    - not a mapping (missing, ``None``, a list...) → ``{"type": "object", "properties": {}}``;
    - ``"$schema"`` and ``"$id"`` dropped;
    - no ``"type"`` → ``"object"``; a list of types containing ``"object"`` → ``"object"``; any
      other type (a tool's arguments are always an object) → the empty object schema;
    - ``"properties"`` missing or not an object → ``{}``; a property whose schema is invalid
      accepts anything (``{}``: the name stays known to the model);
    - ``"required"`` keeps only the names of listed properties;
    - any other top-level keyword whose value is invalid is dropped.

    The result always passes ``Draft202012Validator.check_schema``."""
    schema = _plain(raw) if isinstance(raw, Mapping) else None
    if not isinstance(schema, dict):
        return copy.deepcopy(_EMPTY)
    for key in _DROP:
        schema.pop(key, None)
    kind = schema.get("type", "object")
    if isinstance(kind, list) and "object" in kind:
        kind = "object"
    if kind != "object":
        return copy.deepcopy(_EMPTY)
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    props = {str(k): (v if (isinstance(v, dict | bool) and _valid({"properties": {"p": v}})) else {})
             for k, v in props.items()}
    out: dict[str, Any] = {"type": "object", "properties": props}
    required = schema.get("required")
    if isinstance(required, list):
        names = list(dict.fromkeys(n for n in required if isinstance(n, str) and n in props))
        if names:
            out["required"] = names
    for key, value in schema.items():
        if key in ("type", "properties", "required"):
            continue
        if _valid({"type": "object", key: value}):
            out[key] = value
    out = _local_refs(out)
    if not _valid(out):  # keywords valid one by one but not together (a $ref into a dropped $defs...)
        out = {k: v for k, v in out.items() if k in ("type", "properties", "required")}
        if not _valid(out):
            out = {"type": "object", "properties": {k: {} for k in props}}
    return out


def _resolves(root: Any, ref: str) -> bool:
    """Whether ``ref`` points inside ``root``: ``#``, a JSON pointer (``#/$defs/x``) or a plain-name
    fragment matching an ``$anchor``."""
    if ref == "#":
        return True
    if ref.startswith("#/"):
        cur = root
        for raw in ref[2:].split("/"):
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(cur, dict) and part in cur:
                cur = cur[part]
            elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
                cur = cur[int(part)]
            else:
                return False
        return isinstance(cur, dict | bool)
    if ref.startswith("#"):
        return ref[1:] in _anchors(root)
    return False  # another document: seamkit never fetches one


def _anchors(value: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        if isinstance(value.get("$anchor"), str):
            found.add(value["$anchor"])
        for v in value.values():
            found |= _anchors(v)
    elif isinstance(value, list):
        for v in value:
            found |= _anchors(v)
    return found


def _local_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without the ``$ref`` s (and ``$dynamicRef`` s) it cannot resolve by itself (a
    url, a file, a pointer to nothing): that part then accepts anything, and no validator tries to
    fetch it."""

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()
                    if not (k in ("$ref", "$dynamicRef") and not (isinstance(v, str) and _resolves(schema, v)))}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    out: dict[str, Any] = walk(schema)
    return out


class ArgumentValidator:
    """Checks a call's arguments against a normalised schema (draft 2020-12).

    ``validate(arguments)`` returns them as a plain ``dict`` or raises
    :class:`~seamkit.errors.ToolArgumentError` listing each problem as ``"path: message"``
    (``(arguments)`` for the top level)."""

    __slots__ = ("_tool", "_validator")

    def __init__(self, tool: str, schema: Mapping[str, Any]) -> None:
        from jsonschema import Draft202012Validator

        self._tool = tool
        self._validator = Draft202012Validator(dict(schema))

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        plain = _plain(dict(arguments))
        if not isinstance(plain, dict):
            raise ToolArgumentError(self._tool, ["(arguments): not JSON"])
        try:
            errors = sorted(self._validator.iter_errors(plain), key=lambda e: [str(p) for p in e.absolute_path])
        except Exception as exc:  # a reference normalise_schema did not catch: never fetched, never a private class
            ref = getattr(exc, "ref", None) or getattr(getattr(exc, "__cause__", None), "ref", None)
            what = f"{ref!r}" if isinstance(ref, str) else "a part it cannot resolve"
            raise ToolArgumentError(self._tool, [
                f"(arguments): the tool's input schema refers to {what}, which seamkit does not fetch"]) from None
        if errors:
            raise ToolArgumentError(self._tool, [
                f"{'.'.join(str(p) for p in e.absolute_path) or '(arguments)'}: {e.message}" for e in errors])
        return plain
