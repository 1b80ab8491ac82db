"""The object-root rewrite provider dialects share: a canonical JSON Schema whose root is not a plain
object schema, sent as an object with one property, and the reply unwrapped before validation.

Providers require the root of a structured-output schema and of a tool's parameters to be an object
schema: OpenAI "Structured Outputs" -> "Supported schemas" -> "Root objects must not be anyOf and
must be an object" (platform.openai.com/docs/guides/structured-outputs#supported-schemas); OpenAI
function ``parameters`` (any mode) are refused with HTTP 400 "schema must be a JSON Schema of
'type: \"object\"'"; Anthropic's tool ``input_schema`` has ``type: Required[Literal["object"]]``
(anthropic-sdk-python ``types/tool_param.py``) and the Messages API answers 400 "input_schema does
not support oneOf, allOf, or anyOf at the top level". An output type ``A | B`` (pydantic: a root
``anyOf`` / ``oneOf``), a list or a scalar has such a root.

Public API (stable):

- :func:`root_construct(schema, *, tool=False) -> str | None`: what keeps ``schema``'s root from
  being a plain object schema (``"anyOf"``, ``"type 'array'"``...), ``None`` when it is one.
- :func:`normalize_root(schema, *, tool=False) -> dict`: lossless rewrites of the root first: a root
  local ``$ref`` or one-element ``allOf`` inlined; for a tool (whose arguments are a JSON object by
  protocol) ``type: object`` added to a root that names no type.
- :func:`wrap_root(schema, *, tool=False) -> RootWrap | None`: the rewrite, or ``None`` when the
  (normalized) root is already a plain object schema.
- :func:`unwrap_json(text, key) -> str | None`: the JSON text of ``text``'s only member ``key``.
- :func:`unwrap_deltas(deltas, *, output_key=None, tool_keys=None)`: a model stream with the
  answer text and the arguments of the named tools unwrapped.
- :func:`canonical_path(path, key) -> str`: a compiler's JSON path in the wrapped schema as the
  path in the canonical one (``$.properties.value.anyOf[0]`` -> ``$.anyOf[0]``).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from seamkit.values import Delta, ToolCallDelta

__all__ = [
    "ROOT_COMBINATORS",
    "RootWrap",
    "canonical_path",
    "normalize_root",
    "plain_schema",
    "root_construct",
    "unwrap_deltas",
    "unwrap_json",
    "wrap_root",
]

ROOT_COMBINATORS = ("anyOf", "oneOf", "allOf", "$ref")
"""Keywords no provider accepts at the root of a tool's parameters or of a strict output schema."""

_KEYS = ("value", "answer", "result", "output", "data")
_ANNOTATIONS = frozenset({"title", "description", "$schema", "$id", "$comment", "examples", "default",
                          "deprecated", "readOnly", "writeOnly"})
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?```\s*$", re.DOTALL)
_NO_DELTA = Delta()  # a delta that carries nothing: not passed on


@dataclass(frozen=True, slots=True)
class RootWrap:
    """``schema``: ``{"type": "object", "properties": {key: <canonical root>}, "required": [key],
    "additionalProperties": false}`` (the canonical ``$defs`` / ``definitions`` lifted beside it, so
    local references still resolve). ``key``: the one property (a name no property of the canonical
    schema uses). ``construct``: what the root was (see :func:`root_construct`)."""

    schema: dict[str, Any]
    key: str
    construct: str

    def warning(self, what: str, dialect: str) -> str:
        """The one-line explicit degradation to report, e.g. ``"structured output: anyOf at the
        root ($) cannot be sent to OpenAI ...; sent as an object with one property 'value' ..."``."""
        return (f"{what}: {self.construct} at the root ($) cannot be sent to {dialect} (the root must be an "
                f"object schema); sent as an object with one property {self.key!r}, unwrapped from the reply "
                "before it is validated against the schema")


def plain_schema(v: Any) -> Any:
    """A JSON Schema (or any JSON value) as plain ``dict`` / ``list`` all the way down: any
    ``Mapping`` (FrozenDict included) becomes a ``dict`` with ``str`` keys, a ``list`` or ``tuple``
    a ``list``; other values as they are."""
    if isinstance(v, Mapping):
        return {str(k): plain_schema(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [plain_schema(x) for x in v]
    return v


def _local_target(root: Mapping[str, Any], ref: Any) -> Mapping[str, Any] | None:
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, Mapping) else None


def normalize_root(schema: Mapping[str, Any], *, tool: bool = False) -> dict[str, Any]:
    """``schema`` (thawed) with lossless root rewrites (see the module doc); anything else as is."""
    out: dict[str, Any] = plain_schema(schema) if isinstance(schema, Mapping) else schema
    if not isinstance(out, dict):
        return out
    for _ in range(16):  # a chain of root references; a cycle stops here
        defs: dict[str, Any] = {k: out[k] for k in ("$defs", "definitions") if k in out}
        rest = {k: v for k, v in out.items() if k not in defs}
        if "$ref" in rest and set(rest) - _ANNOTATIONS == {"$ref"}:
            target = _local_target(out, rest["$ref"])
            if target is None or not str(rest["$ref"]).startswith(("#/$defs/", "#/definitions/")):
                break
            # the referenced schema becomes the root; refs inside it are root-relative and still resolve
            inlined = {**{k: v for k, v in rest.items() if k != "$ref"}, **plain_schema(target)}
            for k, v in defs.items():
                inlined[k] = {**v, **inlined.get(k, {})} if isinstance(v, dict) else v
            out = inlined
            continue
        parts = rest.get("allOf")
        if isinstance(parts, list) and len(parts) == 1 and isinstance(parts[0], dict):
            beside = {k: v for k, v in rest.items() if k != "allOf"}
            if (set(beside) & set(parts[0])) - _ANNOTATIONS:
                break
            out = {**parts[0], **beside, **defs}
            continue
        break
    if tool and "type" not in out and not any(k in out for k in (*ROOT_COMBINATORS, "enum", "const")):
        out = {"type": "object", **out}  # a tool's arguments are a JSON object by protocol
    return out


def root_construct(schema: Any, *, tool: bool = False) -> str | None:
    """What keeps the root of ``schema`` from being a plain object schema, in words for a warning:
    ``"anyOf"``, ``"oneOf"``, ``"allOf"``, ``"$ref"``, ``"type 'array'"``, ``"a schema without a
    type"``, ``"the boolean schema true"``...; ``None`` when the root is ``type: "object"`` with none
    of :data:`ROOT_COMBINATORS`. Call it on :func:`normalize_root`'s result."""
    del tool  # the rule is the same; normalize_root(tool=True) is what differs
    if isinstance(schema, bool):
        return f"the boolean schema {str(schema).lower()}"
    if not isinstance(schema, Mapping):
        return "a non-object schema"
    for kw in ROOT_COMBINATORS:
        if kw in schema:
            return kw
    t = schema.get("type")
    if t == "object":
        return None
    if t is None:
        return "a schema without a type"
    return f"type {t!r}"


def _property_names(node: Any, found: set[str]) -> None:
    if isinstance(node, Mapping):
        props = node.get("properties")
        if isinstance(props, Mapping):
            found.update(str(k) for k in props)
        for v in node.values():
            _property_names(v, found)
    elif isinstance(node, list):
        for v in node:
            _property_names(v, found)


def wrap_root(schema: Mapping[str, Any] | bool, *, tool: bool = False) -> RootWrap | None:
    """The object-root rewrite of ``schema`` (see :class:`RootWrap`), after :func:`normalize_root`;
    ``None`` when its root already is a plain object schema."""
    norm: Any = normalize_root(schema, tool=tool) if isinstance(schema, Mapping) else schema
    construct = root_construct(norm)
    if construct is None:
        return None
    used: set[str] = set()
    _property_names(norm, used)
    key = next((k for k in _KEYS if k not in used), None)
    n = 0
    while key is None:
        n += 1
        key = f"value_{n}" if f"value_{n}" not in used else None
    inner = norm
    lifted: dict[str, Any] = {}
    if isinstance(norm, dict):
        norm = _moved_refs(norm, f"#/properties/{key}")
        lifted = {k: norm[k] for k in ("$defs", "definitions") if k in norm}
        inner = {k: v for k, v in norm.items() if k not in lifted and k != "$schema"}
    wrapper: dict[str, Any] = {"type": "object", "properties": {key: inner}, "required": [key],
                               "additionalProperties": False, **lifted}
    return RootWrap(wrapper, key, construct)


_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})


def _moved_refs(node: Any, prefix: str, *, names: bool = False) -> Any:
    """``node`` with each local ``$ref`` into the root itself (``#``, ``#/properties/...``; not
    ``#/$defs/...``, which stays at the wrapper's root) moved under ``prefix``. ``names``: ``node``
    maps property names to schemas (a key there is a name, never a keyword)."""
    if isinstance(node, list):
        return [_moved_refs(v, prefix) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for k, v in node.items():
        if names:
            out[k] = _moved_refs(v, prefix)
        elif k == "$ref" and isinstance(v, str) and (v == "#" or (
                v.startswith("#/") and not v.startswith(("#/$defs/", "#/definitions/")))):
            out[k] = prefix + v[1:]
        elif k in _DATA_KEYWORDS:
            out[k] = v
        else:
            out[k] = _moved_refs(v, prefix, names=k in ("properties", "patternProperties", "$defs", "definitions",
                                                        "dependentSchemas"))
    return out


def canonical_path(path: str, key: str) -> str:
    """``path`` (a compiler's ``$...`` JSON path inside a :class:`RootWrap` schema) as the path in the
    canonical schema: ``$.properties.<key>`` is ``$``; other paths (``$.$defs...``) are unchanged."""
    head = f"$.properties.{key}"
    if path == head:
        return "$"
    if path.startswith(head) and path[len(head)] in ".[":
        return "$" + path[len(head):]
    return path


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def unwrap_json(text: str, key: str) -> str | None:
    """The JSON text of the only member ``key`` of the object ``text`` holds (a Markdown code fence
    around it allowed); ``None`` when ``text`` is not exactly such an object (then it is passed on
    unchanged and validated as it is)."""
    m = _FENCE.match(text)
    body = m.group(1) if m else text
    try:
        value = json.loads(body, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or list(value) != [key]:
        return None
    return json.dumps(value[key], ensure_ascii=False)


class _Call:
    __slots__ = ("id", "key", "name", "parts", "seen_args")

    def __init__(self, id: str | None, name: str | None) -> None:
        self.id = id
        self.name = name
        self.key: str | None = None
        self.parts: list[str] = []
        self.seen_args = False


async def unwrap_deltas(
    deltas: AsyncIterator[Delta], *, output_key: str | None = None, tool_keys: Mapping[str, str] | None = None
) -> AsyncIterator[Delta]:
    """``deltas`` with the answer text (when ``output_key`` is set) and the arguments of each call to a
    tool named in ``tool_keys`` (tool name -> key) unwrapped with :func:`unwrap_json`.

    The wrapped parts are held back: a call's arguments until another call starts on its index or
    the stream finishes, the text until the delta carrying ``finish_reason`` (or the end), and then
    sent as one piece, so the joined result is exactly the canonical JSON. Tool-call fragments follow
    the :class:`~seamkit._accumulate.Accumulator` rule (a new ``id`` on an index starts a new call).
    Text that is not a wrapped object passes unchanged. Closes ``deltas`` when done or closed."""
    tools = dict(tool_keys or {})
    text: list[str] = []
    latest: dict[int, _Call] = {}

    def flush_call(index: int) -> Delta | None:
        call = latest.get(index)
        if call is None or call.key is None or not call.parts:
            return None
        raw = "".join(call.parts)
        call.parts = []
        unwrapped = unwrap_json(raw, call.key)
        return Delta(tool_call=ToolCallDelta(index, None, None, raw if unwrapped is None else unwrapped))

    def flush_all() -> list[Delta]:
        out = [d for i in sorted(latest) if (d := flush_call(i)) is not None]
        if text:
            raw = "".join(text)
            text.clear()
            unwrapped = unwrap_json(raw, output_key) if output_key is not None else None
            out.append(Delta(text=raw if unwrapped is None else unwrapped))
        return out

    try:
        async for d in deltas:
            before: list[Delta] = []
            changes: dict[str, Any] = {}
            if output_key is not None and d.text:
                text.append(d.text)
                changes["text"] = None
            tc = d.tool_call
            if tc is not None and tools:
                cur = latest.get(tc.index)
                if cur is None or (tc.id is not None and cur.id is not None and tc.id != cur.id):
                    if (held := flush_call(tc.index)) is not None:
                        before.append(held)
                    cur = latest[tc.index] = _Call(tc.id, tc.name)
                else:
                    cur.id = cur.id or tc.id
                    cur.name = cur.name or tc.name
                if cur.key is None and not cur.seen_args and cur.name in tools:
                    cur.key = tools[cur.name]
                if tc.arguments:
                    cur.seen_args = True
                    if cur.key is not None:
                        cur.parts.append(tc.arguments)
                        changes["tool_call"] = (
                            replace(tc, arguments="") if tc.id is not None or tc.name is not None else None
                        )
            if d.finish_reason is not None:
                before.extend(flush_all())
            for b in before:
                yield b
            out = replace(d, **changes) if changes else d
            if out != _NO_DELTA:
                yield out
        for b in flush_all():
            yield b
    finally:
        closer = getattr(deltas, "aclose", None)
        if closer is not None:
            await closer()
