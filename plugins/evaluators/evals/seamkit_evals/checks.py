"""The deterministic checks: ``exact``, ``contains``, ``regex``, ``json_schema``,
``output_equals``, ``tool_called``, ``max_cost``, ``max_latency`` and ``citations``.

Each is an :class:`~seamkit._evals.Evaluator` built by a factory from its validated config model
(:mod:`seamkit_evals.config`). Shared rules:

- **A failed run passes nothing.** An attempt whose run raised (``attempt.result is None``) is a
  ``fail`` with the reason ``the run failed: <attempt.error>``, for every check, ``max_latency``
  included (a run that failed fast did not meet a latency target: it did not answer).
- **What is checked** (``field``): by default the typed output when the run has one (not text),
  else the final text. ``field: address.city`` walks the typed output (keys of mappings, attributes
  of objects, ``0``, ``1``... for list items); when the output is text, the text parsed as JSON
  (a Markdown code fence around it is allowed). A path that is not there is a ``fail`` naming the
  part missing, never an exception.
- **Text comparisons** are on NFC-normalised text (so ``é`` written as one or two code points is
  the same); ignoring case uses Unicode case folding (``Straße`` contains ``STRASSE``). A
  non-text value compared with text is its JSON text (``42``, ``true``, ``{"a": 1}``).
- **Plain data.** A typed output (pydantic model, dataclass, attrs class) is turned into JSON-like
  data by its schema flavour's ``serialize`` (:func:`seamkit._schemas.adapt`), as seamkit writes
  typed outputs. Equality of plain data: ``1 == 1.0`` but ``true`` is not ``1``; keys and list
  items compared at every depth.
- **Errors** (status ``error``) are for a suite that cannot be judged: no expected value given
  anywhere, an expected value of the wrong shape, an unknown cost.
- Scores carry ``value`` 1.0 (pass) / 0.0 (fail) and ``None`` for an error; ``contains`` with
  ``all`` gives the fraction of the texts found.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from seamkit.plugin import Attempt, EvalContext, Score, find_citations

from seamkit_evals.config import (
    CitationsConfig,
    ContainsConfig,
    ExactConfig,
    JsonSchemaConfig,
    MaxCostConfig,
    MaxLatencyConfig,
    OutputEqualsConfig,
    RegexConfig,
    ToolCalledConfig,
    compile_flags,
)

__all__ = [
    "Citations",
    "Contains",
    "Exact",
    "JsonSchemaValid",
    "MaxCost",
    "MaxLatency",
    "OutputEquals",
    "Regex",
    "ToolCalled",
    "build_citations",
    "build_contains",
    "build_exact",
    "build_json_schema",
    "build_max_cost",
    "build_max_latency",
    "build_output_equals",
    "build_regex",
    "build_tool_called",
    "diff",
    "lookup",
    "run_failed",
    "same",
    "shown",
    "to_plain",
]

#: Longest value quoted in a reason (characters); longer ones are cut with an ellipsis.
SHOWN = 120
#: Most differences / errors a reason lists.
MAX_LISTED = 8

_MISSING = object()


# -- shared helpers ------------------------------------------------------------------------------


def shown(value: Any, limit: int = SHOWN) -> str:
    """``value`` quoted for a reason: ``repr`` of text, JSON of other data, cut to ``limit``."""
    if isinstance(value, str):
        text = repr(value)
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def run_failed(name: str, attempt: Attempt) -> Score | None:
    """The ``fail`` score of an attempt whose run raised, else ``None``."""
    if attempt.result is not None:
        return None
    return Score(name, "fail", 0.0, f"the run failed: {attempt.error or 'no result'}")


def to_plain(value: Any) -> Any:
    """``value`` as JSON-like data (``dict``, ``list``, ``str``, ``int``, ``float``, ``bool``,
    ``None``; a ``Decimal`` is kept, exact). Typed values go through their schema flavour's
    ``serialize``; what no flavour supports through pydantic's ``to_jsonable_python``; what that
    cannot convert either is its ``repr``."""
    if value is None or isinstance(value, str | bool | int | float | Decimal):
        return value
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_plain(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    from seamkit.plugin import adapt

    try:
        data = adapt(type(value)).serialize(value)
    except Exception:  # no flavour for it (UnsupportedSchemaType), or one that cannot describe it
        import pydantic_core

        try:
            data = pydantic_core.to_jsonable_python(value)
        except Exception:
            return repr(value)
    return to_plain(data)


def same(a: Any, b: Any) -> bool:
    """Equality of plain data: numbers by value (``1 == 1.0``, a ``Decimal`` too), but a bool
    only equals a bool; mappings by keys and values, sequences item by item."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float | Decimal) and isinstance(b, int | float | Decimal):
        try:
            return Decimal(str(a)) == Decimal(str(b))
        except ArithmeticError:
            return bool(a == b)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def diff(expected: Any, got: Any, path: str = "") -> list[str]:
    """Where plain ``got`` differs from ``expected``: one line per difference, ``PATH: expected
    X, got Y`` (``PATH: missing`` / ``PATH: not expected``), ``(the value)`` for the root."""
    here = path or "(the value)"
    if isinstance(expected, Mapping) and isinstance(got, Mapping):
        out: list[str] = []
        for k in expected:
            sub = f"{path}.{k}" if path else str(k)
            if k not in got:
                out.append(f"{sub}: missing (expected {shown(expected[k])})")
            else:
                out.extend(diff(expected[k], got[k], sub))
        out.extend(f"{f'{path}.{k}' if path else k}: not expected (got {shown(got[k])})"
                   for k in got if k not in expected)
        return out
    if isinstance(expected, list | tuple) and isinstance(got, list | tuple):
        if len(expected) != len(got):
            return [f"{here}: expected {len(expected)} items, got {len(got)}: expected {shown(expected)}, "
                    f"got {shown(got)}"]
        return [d for i, (e, g) in enumerate(zip(expected, got, strict=True)) for d in diff(e, g, f"{path}.{i}"
                                                                                          if path else str(i))]
    return [] if same(expected, got) else [f"{here}: expected {shown(expected)}, got {shown(got)}"]


def lookup(value: Any, path: str) -> tuple[Any, str | None]:
    """The value at dotted ``path`` in ``value``: ``(found, None)``, or ``(None, why)`` naming
    the part that is not there. Steps: a mapping's key, an object's attribute (not a method or a
    ``_private`` one), a list's index."""
    cur = value
    walked: list[str] = []
    for part in path.split("."):
        nxt: Any = _MISSING
        if isinstance(cur, Mapping):
            nxt = cur.get(part, _MISSING)
        elif isinstance(cur, Sequence) and not isinstance(cur, str | bytes):
            if part.lstrip("-").isdigit() and -len(cur) <= int(part) < len(cur):
                nxt = cur[int(part)]
        elif cur is not None and not isinstance(cur, str | int | float | bool | Decimal) and not part.startswith("_"):
            nxt = getattr(cur, part, _MISSING)
            if callable(nxt) and not isinstance(nxt, type):
                nxt = _MISSING  # a method (`copy`, `json`) is not a field of the output
        where = ".".join(walked) or "the value"
        if nxt is _MISSING:
            return None, (f"the field {path!r} is missing: {where} ({_kind(cur)}) has no {part!r}")
        walked.append(part)
        cur = nxt
    return cur, None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        keys = ", ".join(map(str, list(value)[:8]))
        return f"a mapping with keys {keys}" if keys else "an empty mapping"
    if isinstance(value, list | tuple):
        return f"a list of {len(value)}"
    return type(value).__name__


def target(attempt: Attempt, field: str | None) -> tuple[Any, str | None]:
    """What a check with ``field`` looks at (see the module doc): ``(value, None)`` or ``(None,
    why)`` when the field is not there."""
    out = attempt.output
    if field is None:
        return (attempt.text if out is None or isinstance(out, str) else out), None
    if out is None or isinstance(out, str):
        from seamkit.plugin import parse_json

        try:
            out = parse_json(attempt.text)
        except Exception:
            return None, f"the field {field!r} is missing: the answer is text, not JSON ({shown(attempt.text)})"
    return lookup(out, field)


def as_text(value: Any) -> str:
    """``value`` as text: itself when a ``str``, else its JSON text (plain data first)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(to_plain(value), ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _norm(text: str, *, fold: bool, strip: bool = False) -> str:
    text = unicodedata.normalize("NFC", text)
    if strip:
        text = text.strip()
    return text.casefold() if fold else text


def _expected(config_expected: Any, given: bool, attempt: Attempt) -> tuple[Any, bool]:
    if given:
        return config_expected, True
    exp = attempt.case.expected
    return exp, exp is not None


def _verdict(name: str, ok: bool, yes: str, no: str) -> Score:
    return Score(name, "pass" if ok else "fail", 1.0 if ok else 0.0, yes if ok else no)


# -- exact, contains, regex ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Exact:
    """``exact``: see :class:`~seamkit_evals.config.ExactConfig`."""

    name: str
    expected: Any
    expected_given: bool
    field: str | None = None
    case_sensitive: bool = True
    strip: bool = True

    async def evaluate(self, attempt: Attempt, ctx: EvalContext) -> Score:
        if (failed := run_failed(self.name, attempt)) is not None:
            return failed
        expected, known = _expected(self.expected, self.expected_given, attempt)
        if not known:
            return Score(self.name, "error", reason="nothing to compare with: give `expected:` or the case's expected")
        value, why = target(attempt, self.field)
        if why is not None:
            return Score(self.name, "fail", 0.0, why)
        if isinstance(value, str) or isinstance(expected, str):
            fold = not self.case_sensitive
            ok = _norm(as_text(value), fold=fold, strip=self.strip) == _norm(as_text(expected), fold=fold,
                                                                             strip=self.strip)
        else:
            ok = same(to_plain(expected), to_plain(value))
        return _verdict(self.name, ok, f"equals {shown(expected)}", f"expected {shown(expected)}, got {shown(value)}")


def build_exact(config: ExactConfig) -> Exact:
    return Exact(config.name or "exact", config.expected, "expected" in config.model_fields_set, config.field,
                 config.case_sensitive, config.strip)


@dataclass(frozen=True, slots=True)
class Contains:
    """``contains``: see :class:`~seamkit_evals.config.ContainsConfig`."""

    name: str
    text: tuple[str, ...] | None
    require_all: bool = True
    case_sensitive: bool = False
    field: str | None = None

    async def evaluate(self, attempt: Attempt, ctx: EvalContext) -> Score:
        if (failed := run_failed(self.name, attempt)) is not None:
            return failed
        needles = self.text
        if needles is None:
            exp = attempt.case.expected
            if isinstance(exp, str) and exp:
                needles = (exp,)
            elif isinstance(exp, list | tuple) and exp and all(isinstance(e, str) and e for e in exp):
                needles = tuple(exp)
            else:
                return Score(self.name, "error", reason="nothing to look for: give `text:`, or a case expected "
                                                        f"that is a text or a list of texts (got {shown(exp)})")
        value, why = target(attempt, self.field)
        if why is not None:
            return Score(self.name, "fail", 0.0, why)
        fold = not self.case_sensitive
        hay = _norm(as_text(value), fold=fold)
        found = [n for n in needles if _norm(n, fold=fold) in hay]
        missing = [n for n in needles if n not in found]
        if self.require_all:
            ok = not missing
            value_ = len(found) / len(needles)
            reason = (f"contains {', '.join(map(shown, needles))}" if ok else
                      f"missing {', '.join(map(shown, missing))} in {shown(as_text(value))}")
            return Score(self.name, "pass" if ok else "fail", value_, reason)
        return _verdict(self.name, bool(found), f"contains {', '.join(map(shown, found))}",
                        f"none of {', '.join(map(shown, needles))} in {shown(as_text(value))}")


def build_contains(config: ContainsConfig) -> Contains:
    text = (config.text,) if isinstance(config.text, str) else (tuple(config.text) if config.text else None)
    return Contains(config.name or "contains", text, config.all_, config.case_sensitive, config.field)


@dataclass(frozen=True, slots=True)
class Regex:
    """``regex``: see :class:`~seamkit_evals.config.RegexConfig`."""

    name: str
    pattern: re.Pattern[str]
    field: str | None = None

    async def evaluate(self, attempt: Attempt, ctx: EvalContext) -> Score:
        if (failed := run_failed(self.name, attempt)) is not None:
            return failed
        value, why = target(attempt, self.field)
        if why is not None:
            return Score(self.name, "fail", 0.0, why)
        text = as_text(value)
        m = self.pattern.search(text)
        return _verdict(self.name, m is not None, f"/{self.pattern.pattern}/ matches {shown(m.group(0) if m else '')}",
                        f"/{self.pattern.pattern}/ does not match {shown(text)}")


def build_regex(config: RegexConfig) -> Regex:
    return Regex(config.name or "regex", re.compile(config.pattern, compile_flags(list(config.flags))), config.field)


# -- json_schema, output_equals ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JsonSchemaValid:
    """``json_schema``: see :class:`~seamkit_evals.config.JsonSchemaConfig`."""

    name: str
    schema: Mapping[str, Any]
    field: str | None = None

    async def evaluate(self, attempt: Attempt, ctx: EvalContext) -> Score:
        if (failed := run_failed(self.name, attempt)) is not None:
            return failed
        import jsonschema

        if self.field is None and (attempt.output is None or isinstance(attempt.output, str)):
            from seamkit.plugin import parse_json

            try:
                value = parse_json(attempt.text)
            except Exception as exc:
                detail = getattr(exc, "errors", None) or [str(exc)]
                return Score(self.name, "fail", 0.0, f"the answer is not JSON: {detail[0]}"[:400])
        else:
            found, why = target(attempt, self.field)
            if why is not None:
                return Score(self.name, "fail", 0.0, why)
            value = to_plain(found)
        value = _jsonable(value)
        cls = jsonschema.validators.validator_for(self.schema)
        validator = cls(self.schema, format_checker=cls.FORMAT_CHECKER)
        errors = sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
        if not errors:
            return Score(self.name, "pass", 1.0, "valid for the schema")
        listed = "; ".join(f"{_json_path(e.absolute_path)}: {e.message[:200]}" for e in errors[:MAX_LISTED])
        more = f" (and {len(errors) - MAX_LISTED} more)" if len(errors) > MAX_LISTED else ""
        return Score(self.name, "fail", 0.0, f"{len(errors)} schema error{'s' if len(errors) > 1 else ''}: "
                                             f"{listed}{more}")


def _jsonable(value: Any) -> Any:
    # jsonschema treats a Decimal as a number only as a float; JSON data has no Decimal
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, Mapping):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _json_path(path: Iterable[Any]) -> str:
    parts = list(path)
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def build_json_schema(config: JsonSchemaConfig) -> JsonSchemaValid:
    return JsonSchemaValid(config.name or "json_schema", config.schema_, config.field)


@dataclass(frozen=True, slots=True)
class OutputEquals:
    """``output_equals``: see :class:`~seamkit_evals.config.OutputEqualsConfig`."""

    name: str
    expected: Any
    expected_given: bool
    fields: tuple[str, ...] | None = None

    async def evaluate(self, attempt: Attempt, ctx: EvalContext) -> Score:
        if (failed := run_failed(self.name, attempt)) is not None:
            return failed
        expected, known = _expected(self.expected, self.expected_given, attempt)
        if not known:
            return Score(self.name, "error", reason="nothing to compare with: give `expected:` or the case's expected")
        got = attempt.output
        if self.fields is None:
            lines = diff(to_plain(expected), to_plain(got))
        else:
            lines = []
            for f in self.fields:
                want, why = lookup(expected, f)
                if why is not None:
                    return Score(self.name, "error", reason=f"the expected value has no field {f!r} ({why})")
                have, why = lookup(got, f)
                lines.extend([f"{f}: missing ({why})"] if why is not None else diff(to_plain(want), to_plain(have), f))
        if not lines:
            return Score(self.name, "pass", 1.0, "the output equals the expected value" if self.fields is None
                         else f"{', '.join(self.fields)} equal the expected values")
        more = f" (and {len(lines) - MAX_LISTED} more)" if len(lines) > MAX_LISTED else ""
        return Score(self.name, "fail", 0.0, "; ".join(lines[:MAX_LISTED]) + more)


def build_output_equals(config: OutputEqualsConfig) -> OutputEquals:
    return OutputEquals(config.name or "output_equals", config.expected, "expected" in config.model_fields_set,
                        tuple(config.fields) if config.fields is not None else None)


# -- tool_called ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolCalled:
    """``tool_called``: see :class:`~seamkit_evals.config.ToolCalledConfig`."""

    name: str
    tool: str
    arguments: Mapping[str, Any] | None = None
    min_times: int = 1
    max_times: int | None = None

    def _mismatch(self, args: Any) -> str | None:
        """Why a call's arguments do not match (``None``: they do)."""
        if not self.arguments:
            return None
        if not isinstance(args, Mapping):
            return f"its arguments are not a mapping ({shown(args)})"
        for key, want in self.arguments.items():
            if key not in args:
                return f"{key}: missing"
            have = to_plain(args[key])
            if isinstance(want, Mapping) and set(want) == {"regex"}:
                if re.search(str(want["regex"]), as_text(have)) is None:
                    return f"{key}: {shown(have)} does not match /{want['regex']}/"
            elif not same(to_plain(want), have):
                return f"{key}: expected {shown(want)}, got {shown(have)}"
        return None

    async def evaluate(self, attempt: Attempt, ctx: EvalContext) -> Score:
        if (failed := run_failed(self.name, attempt)) is not None:
            return failed
        calls = [c for c in attempt.tool_calls if c.name == self.tool]
        why_not = [w for c in calls if (w := self._mismatch(c.arguments)) is not None]
        n = len(calls) - len(why_not)
        lo, hi = self.min_times, self.max_times
        ok = n >= lo and (hi is None or n <= hi)
        wanted = (f"exactly {lo}" if hi == lo else f"{lo} to {hi}" if hi is not None else f"at least {lo}")
        matching = " with matching arguments" if self.arguments else ""
        said = f"{self.tool} was called {n} time{'' if n == 1 else 's'}{matching} (wanted {wanted})"
        if not ok:
            if not calls:
                others = sorted({c.name for c in attempt.tool_calls})
                said += f"; tools called: {', '.join(others)}" if others else "; no tool was called"
            elif why_not:
                said += f"; {len(why_not)} other call{'s' if len(why_not) > 1 else ''} did not match: {why_not[0]}"
        return _verdict(self.name, ok, said, said)


def build_tool_called(config: ToolCalledConfig) -> ToolCalled:
    return ToolCalled(config.name or "tool_called", config.tool, config.arguments, config.min_times, config.max_times)


# -- max_cost, max_latency --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MaxCost:
    """``max_cost``: the run's cost (``attempt.cost``, USD) is at most ``usd``. An unpriced run
    (cost unknown) is an ``error``, never a pass. A local model (``cost_source`` ``local``) and a
    cached answer (``cache``) cost 0: they pass any ceiling, and the reason says why it is 0."""

    name: str
    usd: Decimal

    async def evaluate(self, attempt: Attempt, ctx: EvalContext) -> Score:
        if (failed := run_failed(self.name, attempt)) is not None:
            return failed
        usage = attempt.usage
        cost = usage.cost
        if cost is None:
            return Score(self.name, "error", reason=f"the cost is unknown (the run's model is unpriced), so the "
                                                    f"ceiling of ${self.usd} cannot be checked")
        source = {"local": " (a local model)", "cache": " (answered from a cache)"}.get(usage.cost_source, "")
        ok = cost <= self.usd
        return _verdict(self.name, ok, f"cost ${cost}{source}, within ${self.usd}",
                        f"cost ${cost}{source}, over the ceiling of ${self.usd}")


def build_max_cost(config: MaxCostConfig) -> MaxCost:
    return MaxCost(config.name or "max_cost", config.usd)


@dataclass(frozen=True, slots=True)
class MaxLatency:
    """``max_latency``: the run's wall-clock ``attempt.latency_s`` is at most ``seconds``."""

    name: str
    seconds: float

    async def evaluate(self, attempt: Attempt, ctx: EvalContext) -> Score:
        if (failed := run_failed(self.name, attempt)) is not None:
            return Score(self.name, "fail", 0.0, f"{failed.reason} (after {attempt.latency_s:.3f}s)")
        t = attempt.latency_s
        if not math.isfinite(t):
            return Score(self.name, "error", reason=f"the run's latency is not a number ({t!r})")
        return _verdict(self.name, t <= self.seconds, f"took {t:.3f}s, within {self.seconds:g}s",
                        f"took {t:.3f}s, over the ceiling of {self.seconds:g}s")


def build_max_latency(config: MaxLatencyConfig) -> MaxLatency:
    return MaxLatency(config.name or "max_latency", config.seconds)


# -- citations --------------------------------------------------------------------------------------


def shown_citations(attempt: Attempt) -> set[str]:
    """The citation ids shown to the model in ``attempt``'s run: the grounding the request
    builder handed it (``AgentResult.citation_ids``) and the ids written in any message the model
    read (system, user, and tool results, e.g. a retrieval tool's ``[s1a2b3c] source: ...`` lines)."""
    result = attempt.result
    ids: set[str] = set(getattr(result, "citation_ids", ()) or ())
    for m in attempt.transcript:
        if m.role == "assistant":
            continue
        ids.update(find_citations(m.text))
        for r in m.tool_results:
            ids.update(find_citations(r.content))
    return ids


@dataclass(frozen=True, slots=True)
class Citations:
    """``citations``: every id the final answer cites (:func:`seamkit._grounding.find_citations`)
    was shown to the model in that run (:func:`shown_citations`; for an agent with capabilities,
    an id its turn's evidence has also counts). ``require``: at least one citation."""

    name: str
    require: bool = False

    async def evaluate(self, attempt: Attempt, ctx: EvalContext) -> Score:
        if (failed := run_failed(self.name, attempt)) is not None:
            return failed
        cited = find_citations(attempt.text)
        if not cited:
            return _verdict(self.name, not self.require, "the answer cites no source",
                            "the answer cites no source (a citation is required)")
        known = shown_citations(attempt)
        turn = attempt.result.turn if attempt.result is not None else None
        if turn is not None:  # a capability turn: the kernel checked the reply against its evidence
            flagged = set(turn.unknown_citations)
            known.update(c for c in cited if c not in flagged)
        unknown = [c for c in cited if c not in known]
        return _verdict(self.name, not unknown, f"every cited source was shown to the model: {', '.join(cited)}",
                        f"cites {len(unknown)} source{'s' if len(unknown) > 1 else ''} never shown to the model: "
                        f"{', '.join(unknown)}")


def build_citations(config: CitationsConfig) -> Citations:
    return Citations(config.name or "citations", config.require)
