"""Typed output flavours: the :class:`SchemaAdapter` contract, :func:`adapt`, and the JSON helpers
every flavour shares.

A *schema adapter* binds one output type to its JSON Schema, a strict parser, a tolerant
mid-stream parser, a serializer and a validator. Flavours (pydantic, attrs, dataclass, raw JSON
Schema) are plugins registered under kind ``"schema_adapter"`` (hook
``seamkit_register_schema_adapters``); each component is a :class:`SchemaFlavour` that says which
types it supports and builds adapters for them. :func:`adapt` picks the flavour for a type.

Partial parsing uses pydantic-core's partial JSON parser (``pydantic_core.from_json(...,
allow_partial="trailing-strings")``); :func:`partial_json` adds the one rule it lacks: a number at
the very end of the buffer may still grow (``12`` -> ``123``), so it is left out until a delimiter
follows it.

Imports stay light: pydantic-core and the registry are imported on first use.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from seamkit.errors import OutputValidationError, UnsupportedSchemaType, describe_type

if TYPE_CHECKING:
    from seamkit._plugins.registry import Registry

__all__ = [
    "BaseSchemaAdapter",
    "PartialJSONStream",
    "SchemaAdapter",
    "SchemaFlavour",
    "UnsupportedSchemaType",
    "adapt",
    "describe_type",
    "parse_json",
    "partial_json",
    "raw_text",
]

KIND = "schema_adapter"

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?```\s*$", re.DOTALL)
_NUMBER_TAIL = re.compile(r"[0-9eE+.\-]+\Z")
_ESCAPE_PAIR = re.compile(r"\\.", re.DOTALL)


@runtime_checkable
class SchemaAdapter(Protocol):
    """One output type, adapted.

    - ``name``: the flavour (``"pydantic"``, ``"attrs"``, ``"dataclass"``, ``"jsonschema"``, ...).
    - ``python_type``: the type adapted (for the ``jsonschema`` flavour: the schema, a ``dict``).
    - ``json_schema()``: a JSON Schema (draft 2020-12) describing the JSON form, a fresh ``dict``.
    - ``parse(text)``: strict: JSON text (``str`` or UTF-8 ``bytes``, optionally inside a Markdown
      code fence) to a typed value; raises :class:`~seamkit.errors.OutputValidationError` (with the
      raw text) when it is not JSON or does not validate.
    - ``partial_parse(buffer)``: tolerant, for a buffer cut anywhere mid-stream: the JSON data
      (``dict``/``list``/``str``/numbers/...) known so far (see :func:`partial_json`), ``None``
      when nothing is known yet; never raises. Not validated: a partial object usually lacks
      required fields.
    - ``serialize(value)``: a typed value to JSON-compatible data (``dict``, ``list``, ``str``,
      ``int``, ``float``, ``bool``, ``None``).
    - ``validate(value)``: JSON data to a typed value; raises ``OutputValidationError``.
    """

    name: str
    python_type: Any

    def json_schema(self) -> dict[str, Any]: ...

    def parse(self, text: str | bytes) -> Any: ...

    def partial_parse(self, buffer: str) -> Any: ...

    def serialize(self, value: Any) -> Any: ...

    def validate(self, value: Any) -> Any: ...


@runtime_checkable
class SchemaFlavour(Protocol):
    """What a ``schema_adapter`` component is: a flavour that adapts the types it ``supports``.

    ``priority``: lower is asked first by :func:`adapt` (pydantic 10, attrs 20, dataclass 30,
    jsonschema 40), so a pydantic dataclass goes to pydantic before the dataclass flavour.
    ``adapter(tp)`` may raise ``TypeError``/``ValueError`` for a type it cannot describe after all.
    A flavour may also offer ``explain(tp) -> str | None``: why it refuses a type that looks like
    one of its own (``adapt`` adds the reasons to its error).
    """

    name: str
    priority: int

    def supports(self, tp: Any) -> bool: ...

    def adapter(self, tp: Any) -> SchemaAdapter: ...


def adapt(tp: Any, *, registry: Registry | None = None) -> SchemaAdapter:
    """The :class:`SchemaAdapter` for ``tp`` from the installed ``schema_adapter`` flavours.

    Flavours are asked in ``priority`` order (ties by name); the first whose ``supports(tp)`` is
    true builds the adapter. An adapter passed in is returned as it is. ``registry`` defaults to
    the process-wide one (:func:`seamkit._plugins.registry.get_registry`).

    Raises :class:`UnsupportedSchemaType` (a ``TypeError``) naming the type and the installed
    flavours when none supports it (a flavour that fails to build is named there too), and
    whatever the chosen flavour raises for a type it cannot describe.
    """
    if _is_adapter(tp):
        return tp  # type: ignore[no-any-return]
    from seamkit._plugins.registry import get_registry
    from seamkit.errors import PluginError

    reg = registry if registry is not None else get_registry()
    if _not_a_type(tp):  # the flavours installed are named without building them
        raise UnsupportedSchemaType(tp, tuple(reg.names(KIND)), value=True)
    flavours: list[SchemaFlavour] = []
    broken: list[str] = []
    for by_name in (reg.components.get(KIND) or {}).values():
        for spec in by_name:
            try:
                flavour = spec.build()
            except PluginError as exc:
                broken.append(f"{spec.name} ({spec.distribution}) failed to load: {exc}")
                continue
            flavours.append(flavour)
    flavours.sort(key=lambda f: (getattr(f, "priority", 100), f.name))
    for flavour in flavours:
        if flavour.supports(tp):
            return flavour.adapter(tp)
    reasons = [r for f in flavours if callable(explain := getattr(f, "explain", None)) and (r := explain(tp))]
    raise UnsupportedSchemaType(tp, tuple(sorted({f.name for f in flavours})), "; ".join([*reasons, *broken]))


def _not_a_type(obj: Any) -> bool:
    import types

    return isinstance(obj, (str, bytes, int, float, complex, list, tuple, set, frozenset, types.FunctionType,
                            types.BuiltinFunctionType, types.MethodType, types.ModuleType)) or obj is None


def _is_adapter(obj: Any) -> bool:
    return not isinstance(obj, type) and isinstance(obj, SchemaAdapter)


class BaseSchemaAdapter:
    """A base for flavours: ``parse`` and ``partial_parse`` built on :func:`parse_json`,
    :func:`partial_json` and the subclass's ``json_schema``/``validate``.

    ``parse`` removes the ``null`` members that stand for an absent optional property (strict
    structured-output dialects write them; :func:`seamkit._agent.output.drop_absent_nulls`) before
    validating. Subclasses set ``name`` and ``python_type`` and implement ``json_schema``,
    ``validate`` and ``serialize``.
    """

    name: str = ""
    python_type: Any = None
    _schema_cache: dict[str, Any] | None = None

    def json_schema(self) -> dict[str, Any]:
        raise NotImplementedError

    def validate(self, value: Any) -> Any:
        raise NotImplementedError

    def serialize(self, value: Any) -> Any:
        raise NotImplementedError

    def parse(self, text: str | bytes) -> Any:
        """Strict: see :class:`SchemaAdapter`. Raises ``OutputValidationError`` with ``raw`` set to
        the text received."""
        from seamkit._agent.output import drop_absent_nulls

        data = parse_json(text)
        if self._schema_cache is None:
            self._schema_cache = self.json_schema()
        data = drop_absent_nulls(data, self._schema_cache)
        try:
            return self.validate(data)
        except OutputValidationError as exc:
            raw = text if isinstance(text, str) else bytes(text).decode("utf-8", "replace")
            raise OutputValidationError(exc.problems, raw) from None

    def partial_parse(self, buffer: str) -> Any:
        """Tolerant: :func:`partial_json` of ``buffer`` (plain JSON data, never raises)."""
        return partial_json(buffer)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} for {describe_type(self.python_type)}>"


def raw_text(value: Any) -> str:
    """``value`` as JSON text for an error's ``raw`` (``repr`` when it is not JSON data)."""
    import json

    try:
        return json.dumps(value, ensure_ascii=False, default=str)[:100_000]
    except (TypeError, ValueError):
        return repr(value)[:100_000]


# -- JSON helpers shared by the flavours ---------------------------------------------------------


def parse_json(text: str | bytes) -> Any:
    """Strict JSON: ``text`` (``str`` or UTF-8 ``bytes``; a Markdown code fence around it is
    removed) to plain data. Refuses what is not JSON (``NaN``, ``Infinity``, numbers too large for
    a float, trailing text, invalid escapes, nesting deeper than pydantic-core allows) with
    :class:`~seamkit.errors.OutputValidationError` carrying the raw text."""
    import pydantic_core

    if isinstance(text, (bytes, bytearray)):
        try:
            raw = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise OutputValidationError([f"not UTF-8 text: {exc.reason} at byte {exc.start}"],
                                        bytes(text).decode("utf-8", "replace")) from None
    else:
        raw = text
    m = _FENCE.match(raw)
    body = m.group(1) if m else raw
    try:
        value = pydantic_core.from_json(body, allow_inf_nan=False)
    except ValueError as exc:
        raise OutputValidationError([f"not valid JSON: {exc}"], raw) from None
    if not _finite(value, 0):
        raise OutputValidationError(["not usable JSON: a number is too large for a float (or nested too deeply)"],
                                    raw)
    return value


def _finite(value: Any, depth: int) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if depth > 1000:
        return False
    if isinstance(value, dict):
        return all(_finite(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v, depth + 1) for v in value)
    return True


def partial_json(buffer: str) -> Any:
    """The JSON data known so far from ``buffer``, a JSON document cut anywhere; never raises.

    ``None`` when nothing is known yet (empty buffer, an opening code fence without its newline,
    a top-level scalar still incomplete, text that is not JSON). Otherwise pydantic-core's partial
    parse with trailing strings kept, so everything reported is consistent with the complete
    document:

    - an unfinished string value is reported as what it holds so far (a prefix of the final
      string); an escape cut in the middle (``\\``, ``\\u00``, half a surrogate pair) is left out;
    - a key without its value (``{"a":``), an unfinished key and an unfinished ``true``/``false``/
      ``null`` are left out;
    - a number at the very end of the buffer is left out (it may still grow: ``12`` -> ``123``);
    - every other member and element is final.

    A leading Markdown code fence (```` ```json ````) is skipped; text after a complete document is
    ignored.
    """
    try:
        return _partial(buffer)
    except Exception:  # the contract is "never raises"
        return None


def _partial(buffer: str) -> Any:
    from pydantic_core import from_json

    if isinstance(buffer, (bytes, bytearray)):
        buffer = bytes(buffer).decode("utf-8", "ignore")
    buf = buffer.lstrip()
    if buf.startswith("```"):
        newline = buf.find("\n")
        if newline < 0:
            return None
        buf = buf[newline + 1:].lstrip()
    if buf and buf[-1].isdigit():
        # Inside a string the digits are final text; otherwise they end a number that may still
        # grow (12 -> 123), left out until a delimiter follows. Outside strings JSON has no
        # backslashes, so removing escape pairs and counting quotes tells which (one C-speed pass,
        # not a second parse).
        quotes = (_ESCAPE_PAIR.sub("", buf) if "\\" in buf else buf).count('"')
        if quotes % 2 == 0:
            m = _NUMBER_TAIL.search(buf)
            buf = buf[: m.start()] if m else buf
    if not buf.strip():
        return None
    try:
        value = from_json(buf, allow_partial="trailing-strings", allow_inf_nan=False)
    except ValueError:
        return None
    if not _finite(value, 0):
        return None
    return value


class PartialJSONStream:
    """Partial values for a JSON document arriving in text deltas, at a bounded parse cost.

    :func:`partial_json` parses the whole buffer each time, so parsing after every delta costs
    ``deltas x average buffer size`` (a 50 KB object in 2,000 deltas: ~50 MB of JSON). This
    re-parses only once the buffer has grown by ``max(min_growth, growth_ratio x its size)``
    characters since the last parse (defaults: 256 characters, 5%), which bounds the parsed total
    to a small multiple of the final size (~1 MB for 50 KB).

    ``feed(delta)`` appends and returns the new partial value when it re-parsed and the value
    differs from the last one returned, else ``None``. ``flush()`` parses now (end of stream).
    ``value`` is the latest partial value, ``buffer`` the text so far. ``parses`` counts parses.
    Never raises for any text. Raises ``ValueError`` for a negative ``min_growth`` or
    ``growth_ratio``.
    """

    def __init__(self, *, min_growth: int = 256, growth_ratio: float = 0.05) -> None:
        if min_growth < 0 or growth_ratio < 0:
            raise ValueError("min_growth and growth_ratio must be >= 0")
        self.min_growth = min_growth
        self.growth_ratio = growth_ratio
        self.value: Any = None
        self.parses = 0
        self._chunks: list[str] = []
        self._size = 0
        self._parsed_at = 0

    @property
    def buffer(self) -> str:
        if len(self._chunks) > 1:
            self._chunks = ["".join(self._chunks)]
        return self._chunks[0] if self._chunks else ""

    def feed(self, delta: str) -> Any:
        if delta:
            self._chunks.append(delta)
            self._size += len(delta)
        if self._size - self._parsed_at < max(self.min_growth, self.growth_ratio * self._size):
            return None
        return self.flush()

    def flush(self) -> Any:
        if self._parsed_at == self._size and self.parses:
            return None
        self._parsed_at = self._size
        self.parses += 1
        value = partial_json(self.buffer)
        if value is None or value == self.value:
            return None
        self.value = value
        return value
