"""What the model may emit, as JSON Schemas turned into llama.cpp grammars (GBNF).

Modes (:func:`plan`):

- ``text``: free text (no tools offered, ``tool_choice='none'`` or no tools, no output schema).
- ``json``: ``output_schema`` set and no tool may be called: the reply is JSON valid for it,
  streamed as text.
- ``tool``: ``tool_choice`` is ``'required'`` or a tool name: the reply is exactly one
  ``{"name": <tool>, "arguments": <that tool's parameters>}`` (``anyOf`` over the allowed tools),
  emitted as one tool call.
- ``auto_json``: ``tool_choice='auto'`` with tools and an output schema: the reply is either a
  tool-call object or the final answer (JSON for the output schema). An object whose keys are
  exactly ``name`` (an offered tool) and ``arguments`` (an object) is read as a tool call, so an
  output schema admitting that very shape reads as a tool call.
- ``auto_text``: ``tool_choice='auto'`` with tools and no output schema: the reply is either a
  tool-call object (it starts with ``{``) or free text that does not start with ``{`` or
  whitespace.

Tool parameter schemas and the output schema may use local ``$ref`` into ``$defs``: the
definitions are hoisted to the root of the combined schema (renamed ``<tool>__<Name>`` when two
differ under one name) so references keep resolving.

What the grammar does not enforce: llama-cpp-python's regex-to-GBNF translation emits escapes
llama.cpp cannot parse (``\\d``, ``\\w``, ``\\.``, ...), so every string ``pattern`` is left out of
the schema the grammar is made from (:func:`relax`); the caller reports that as a warning, and
the final answer is still validated against the full schema by the agent. Literals (property
names, ``const`` / ``enum`` strings) are escaped correctly here (the upstream converter leaves
backslashes unescaped, which breaks names containing a quote or a backslash).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from seamkit.values import ToolSchema, thaw

from seamkit_llamacpp.threads import import_llama

__all__ = [
    "Mode",
    "Plan",
    "offered_tools",
    "plan",
    "read_tool_call",
    "relax",
    "to_gbnf",
    "tool_call_schema",
]

Mode = Literal["text", "json", "tool", "auto_json", "auto_text"]

_FREE_TEXT = 'free-text ::= [^{ \\t\\r\\n] [^\\x00]*'


@dataclass(frozen=True, slots=True)
class Plan:
    """How one request is decoded: its ``mode``, the combined JSON ``schema`` (``None`` in ``text``
    mode) and the ``tools`` the model may call (names)."""

    mode: Mode
    schema: dict[str, Any] | None
    tools: tuple[str, ...] = ()


def offered_tools(tools: Sequence[ToolSchema], choice: str) -> tuple[ToolSchema, ...]:
    """The tools the model may call under ``choice``. Raises ``ValueError`` when ``choice`` names a
    tool that is not in ``tools``."""
    if choice == "none" or not tools:
        return ()
    if choice in ("auto", "required"):
        return tuple(tools)
    chosen = tuple(t for t in tools if t.name == choice)
    if not chosen:
        raise ValueError(f"tool_choice {choice!r} names no offered tool ({', '.join(t.name for t in tools)})")
    return chosen


def _rewrite_refs(node: Any, renames: Mapping[str, str]) -> Any:
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str) and v.startswith("#/$defs/") and v[8:] in renames:
                out[k] = "#/$defs/" + renames[v[8:]]
            else:
                out[k] = _rewrite_refs(v, renames)
        return out
    if isinstance(node, list):
        return [_rewrite_refs(v, renames) for v in node]
    return node


def _hoist(schema: Mapping[str, Any], owner: str, defs: dict[str, Any]) -> dict[str, Any]:
    body = dict(thaw(schema))
    local = body.pop("$defs", None) or {}
    body.pop("$schema", None)
    renames: dict[str, str] = {}
    for name, sub in local.items():
        if name in defs and defs[name] != sub:
            renames[name] = f"{owner}__{name}"
    if renames:
        body = _rewrite_refs(body, renames)
        local = {renames.get(k, k): _rewrite_refs(v, renames) for k, v in local.items()}
    defs.update(local)
    return body


def _call_schema(tool: ToolSchema, defs: dict[str, Any]) -> dict[str, Any]:
    params = _hoist(tool.parameters, tool.name, defs) or {"type": "object"}
    return {
        "type": "object",
        "properties": {"name": {"const": tool.name}, "arguments": params},
        "required": ["name", "arguments"],
    }


def tool_call_schema(
    tools: Sequence[ToolSchema], answer: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A JSON Schema for one call of any of ``tools`` (``anyOf`` of
    ``{"name": {"const": <tool>}, "arguments": <parameters>}``), plus the ``answer`` schema as
    one more alternative when given."""
    defs: dict[str, Any] = {}
    alternatives = [_call_schema(t, defs) for t in tools]
    if answer is not None:
        alternatives.append(_hoist(answer, "answer", defs))
    schema: dict[str, Any] = {"anyOf": alternatives}
    if defs:
        schema["$defs"] = defs
    return schema


def plan(tools: Sequence[ToolSchema], choice: str, output_schema: Mapping[str, Any] | None) -> Plan:
    """Decide how to decode a request (see the module doc). Raises ``ValueError`` for a
    ``choice`` naming no offered tool."""
    callable_tools = offered_tools(tools, choice)
    names = tuple(t.name for t in callable_tools)
    if not callable_tools:
        if output_schema is None:
            return Plan("text", None)
        defs: dict[str, Any] = {}
        body = _hoist(output_schema, "answer", defs)
        if defs:
            body["$defs"] = defs
        return Plan("json", body)
    if choice != "auto":
        return Plan("tool", tool_call_schema(callable_tools), names)
    if output_schema is not None:
        return Plan("auto_json", tool_call_schema(callable_tools, output_schema), names)
    return Plan("auto_text", tool_call_schema(callable_tools), names)


# Keywords whose value maps names to subschemas (the names are data, not keywords).
_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"})
# Keywords whose value is data, never a schema.
_DATA = frozenset({"const", "enum", "default", "examples", "required", "$ref", "description", "title"})


# Keywords llama-cpp-python's converter (0.3.36) ignores: the grammar does not enforce them.
_IGNORED = frozenset({
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "uniqueItems",
    "dependentRequired", "dependentSchemas", "not", "if", "contains", "minProperties", "maxProperties",
    "propertyNames",
})


def unenforced(schema: Any) -> list[str]:
    """``keyword at #/location`` for each keyword of ``schema`` the grammar does not enforce
    (the reply is still validated against the full schema afterwards)."""
    found: list[str] = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{where}/{i}")
            return
        if not isinstance(node, dict):
            return
        for key, value in node.items():
            here = f"{where}/{key}"
            if key in _IGNORED:
                found.append(f"'{key}' at #{where}")
            if key in _SCHEMA_MAPS and isinstance(value, dict):
                for name, sub in value.items():
                    walk(sub, f"{here}/{name}")
            elif key not in _DATA:
                walk(value, here)

    walk(schema, "")
    return found


def located(
    tools: Sequence[ToolSchema], choice: str, output_schema: Mapping[str, Any] | None,
    find: Callable[[Any], list[str]],
) -> list[str]:
    """``find`` run on each schema a request decodes with (the offered tools' parameters, the output
    schema when the reply may be the answer), each finding followed by where it is
    (``... in read_file's parameters``, ``... in the output schema``). The locations are those of
    the schemas as written, so they read the same on every turn of a run whatever the decoding
    mode (a warning repeated word for word is shown once per run)."""
    found: list[str] = []
    offered = offered_tools(tools, choice)
    for tool in offered:
        found += [f"{f} in {tool.name}'s parameters" for f in find(thaw(tool.parameters))]
    if output_schema is not None and (not offered or choice == "auto"):
        found += [f"{f} in the output schema" for f in find(thaw(output_schema))]
    return found


def relax(schema: Any) -> tuple[Any, list[str]]:
    """``schema`` without the string ``pattern`` keywords the grammar cannot carry, and the
    JSON-Pointer-like locations (``#/properties/code``; ``#`` is the root) of those it dropped (``[]``: unchanged)."""
    dropped: list[str] = []

    def walk(node: Any, where: str) -> Any:
        if isinstance(node, list):
            return [walk(v, f"{where}/{i}") for i, v in enumerate(node)]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            here = f"{where}/{key}"
            if key == "pattern" and isinstance(value, str):
                dropped.append("#" + where)
            elif key in _SCHEMA_MAPS and isinstance(value, dict):
                out[key] = {name: walk(sub, f"{here}/{name}") for name, sub in value.items()}
            elif key in _DATA:
                out[key] = value
            else:
                out[key] = walk(value, here)
        return out

    return walk(schema, ""), dropped


def _converter() -> Any:
    """llama-cpp-python's ``SchemaConverter`` with literals escaped for GBNF (backslash too)."""
    # Through import_llama: importing llama_cpp.llama_grammar first would load libgomp without
    # the passive wait policy (the grammar is built before the model loads), and the default
    # thread count, chosen for passive waits, then spins (issue 19: schema answers 3-6x slower).
    import_llama()
    from llama_cpp.llama_grammar import SchemaConverter

    class _Converter(SchemaConverter):
        def _format_literal(self, literal: str) -> str:
            escaped = literal.replace("\\", "\\\\").replace('"', '\\"')
            escaped = escaped.replace("\r", "\\r").replace("\n", "\\n")
            return f'"{escaped}"'

    factory: Any = _Converter  # SchemaConverter is untyped
    return factory(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)


# llama-cpp-python's string rule admits raw control characters (a newline inside a string), which
# JSON forbids (RFC 8259 section 7); llama.cpp's own json.gbnf excludes them. Same rule here.
_LAX_CHAR = 'char ::= [^"\\\\] |'
_STRICT_CHAR = 'char ::= [^"\\\\\\x7F\\x00-\\x1F] |'


def _strict_strings(gbnf: str) -> str:
    return "\n".join(
        _STRICT_CHAR + line[len(_LAX_CHAR):] if line.startswith(_LAX_CHAR) else line for line in gbnf.splitlines()
    )


def to_gbnf(p: Plan) -> str | None:
    """The llama.cpp grammar for a plan (``None`` in ``text`` mode), made from the plan's schema
    with its ``pattern`` keywords left out (:func:`relax`). Raises ``ValueError`` (or another
    exception from llama-cpp-python's converter) for a schema it cannot convert. llama.cpp may
    still reject the grammar: the provider checks it before generating."""
    if p.schema is None:
        return None
    schema, _ = relax(p.schema)
    converter = _converter()
    converter.visit(converter.resolve_refs(schema, "stdin"), "")
    gbnf: str = _strict_strings(converter.format_grammar())
    if p.mode != "auto_text":
        return gbnf
    lines = []
    for line in gbnf.splitlines():
        if line.startswith("root ::="):
            line = "tool-call ::=" + line[len("root ::=") :]
        lines.append(line)
    lines.append("root ::= tool-call | free-text")
    lines.append(_FREE_TEXT)
    return "\n".join(lines)


def read_tool_call(text: str, names: Sequence[str]) -> tuple[str, dict[str, Any]] | None:
    """``(name, arguments)`` when ``text`` is one JSON tool-call object naming one of ``names``
    (keys exactly ``name`` and ``arguments``, the latter an object); ``None`` otherwise."""
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(value, dict) or set(value) != {"name", "arguments"}:
        return None
    name, arguments = value["name"], value["arguments"]
    if not isinstance(name, str) or name not in names or not isinstance(arguments, dict):
        return None
    return name, arguments
