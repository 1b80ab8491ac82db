"""Config models of the built-in evaluators (light: pydantic, ``re`` and seamkit._slots; jsonschema
is imported only to check a ``json_schema`` check's schema).

Everything a suite can get wrong is refused here, when the suite loads, so a YAML loader locates
it (file, line, column, key path ``evaluators[2].pattern``): a pattern that does not compile, a
schema that is not a valid JSON Schema, a negative cost ceiling, ``min_times`` above
``max_times``, an unknown key. Every evaluator takes ``name``: the name shown in reports (default
the registered name).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from seamkit.plugin import ComponentSlot, NestedSlot

__all__ = [
    "CitationsConfig",
    "ContainsConfig",
    "ExactConfig",
    "JsonSchemaConfig",
    "LLMJudgeConfig",
    "MaxCostConfig",
    "MaxLatencyConfig",
    "ModelSlot",
    "OutputEqualsConfig",
    "RegexConfig",
    "ToolCalledConfig",
    "compile_flags",
]

_FIELD_DOC = ("Dotted path into the typed output or mapping (`address.city`, `items.0.name`); when the "
              "output is text, into the text parsed as JSON. Default: the output when it is not text, "
              "else the final text")


def _regex_error(pattern: str) -> str | None:
    try:
        re.compile(pattern)
    except re.error as exc:
        where = f" at position {exc.pos}" if exc.pos is not None else ""
        return f"not a valid regular expression: {exc.msg}{where}"
    return None


def _dotted(path: str | None) -> str | None:
    if path is not None and (not path or any(not part for part in path.split("."))):
        raise ValueError(f"a field path is names joined by dots (`address.city`), got {path!r}")
    return path


class _Check(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str | None = Field(default=None, min_length=1, max_length=200,
                             description="Name shown in reports (default: the registered name)")


class _FieldCheck(_Check):
    field: str | None = Field(default=None, description=_FIELD_DOC)

    @field_validator("field")
    @classmethod
    def _path(cls, v: str | None) -> str | None:
        return _dotted(v)


class ExactConfig(_FieldCheck):
    """``exact``: the value (see ``field``) equals ``expected`` (default: the case's expected)."""

    expected: Any = Field(default=None, description="The value expected (default: the case's expected)")
    case_sensitive: bool = Field(default=True, description="Compare text case-sensitively")
    strip: bool = Field(default=True, description="Strip surrounding whitespace of text before comparing")


class ContainsConfig(_FieldCheck):
    """``contains``: the text holds ``text`` (all of a list, or any with ``all: false``)."""

    text: str | list[Annotated[str, Field(min_length=1)]] | None = Field(
        default=None, description="Text (or a list of texts) that must appear (default: the case's expected)")
    all_: bool = Field(default=True, alias="all", description="All texts of the list must appear (else any one)")
    case_sensitive: bool = Field(default=False, description="Match case-sensitively (default: case folded)")

    @field_validator("text")
    @classmethod
    def _not_empty(cls, v: str | list[str] | None) -> str | list[str] | None:
        if v == "" or v == []:
            raise ValueError("give at least one non-empty text (empty text is in every answer)")
        return v


def compile_flags(flags: list[str]) -> int:
    """``re`` flags for the letters ``i`` (IGNORECASE), ``m`` (MULTILINE), ``s`` (DOTALL)."""
    bits = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL}
    out = 0
    for f in flags:
        out |= bits[f]
    return out


class RegexConfig(_FieldCheck):
    """``regex``: ``pattern`` is found in the value (``re.search``)."""

    pattern: str = Field(..., min_length=1, description="Python regular expression searched in the value")
    flags: list[Literal["i", "m", "s"]] = Field(default_factory=list,
                                               description="i: ignore case, m: multi-line, s: dot matches newline")

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, v: str) -> str:
        if (why := _regex_error(v)) is not None:
            raise ValueError(why)
        return v


class JsonSchemaConfig(_FieldCheck):
    """``json_schema``: the value (the output, or the text parsed as JSON) validates."""

    schema_: dict[str, Any] = Field(..., alias="schema", description="A JSON Schema (checked when the suite loads)")

    @field_validator("schema_")
    @classmethod
    def _valid_schema(cls, v: dict[str, Any]) -> dict[str, Any]:
        import jsonschema

        try:
            jsonschema.validators.validator_for(v).check_schema(v)
        except jsonschema.SchemaError as exc:
            where = "/".join(str(p) for p in exc.absolute_path)
            raise ValueError(f"not a valid JSON Schema{f' at {where}' if where else ''}: {exc.message}") from None
        return v


class OutputEqualsConfig(_Check):
    """``output_equals``: the typed output, as plain JSON-like data, equals ``expected``."""

    expected: Any = Field(default=None, description="The expected value or mapping (default: the case's expected)")
    fields: list[Annotated[str, Field(min_length=1)]] | None = Field(
        default=None, min_length=1, description="Compare only these keys/attributes (dotted paths)")

    @field_validator("fields")
    @classmethod
    def _paths(cls, v: list[str] | None) -> list[str] | None:
        for p in v or ():
            _dotted(p)
        return v


class ToolCalledConfig(_Check):
    """``tool_called``: ``tool`` was called (with ``arguments`` matching) between ``min_times`` and
    ``max_times`` times."""

    tool: str = Field(..., min_length=1, description="The tool's name")
    arguments: dict[str, Any] | None = Field(
        default=None, description="Arguments each counted call must have: a literal value, or {regex: PATTERN} "
                                  "searched in the argument (its JSON text when it is not a string)")
    min_times: int = Field(default=1, ge=0, description="Fewest matching calls")
    max_times: int | None = Field(default=None, ge=0, description="Most matching calls (0: must not be called)")

    @field_validator("arguments")
    @classmethod
    def _patterns(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        for key, want in (v or {}).items():
            if isinstance(want, dict) and set(want) == {"regex"}:
                pattern = want["regex"]
                if not isinstance(pattern, str) or not pattern:
                    raise ValueError(f"{key}.regex: give a pattern (text)")
                if (why := _regex_error(pattern)) is not None:
                    raise ValueError(f"{key}.regex: {why}")
        return v

    @model_validator(mode="after")
    def _range(self) -> ToolCalledConfig:
        if self.max_times is not None and self.min_times > self.max_times:
            if self.max_times == 0 and "min_times" not in self.model_fields_set:
                self.min_times = 0  # `max_times: 0` alone means "never called"
            else:
                raise ValueError(f"min_times ({self.min_times}) is above max_times ({self.max_times})")
        return self


class MaxCostConfig(_Check):
    """``max_cost``: the run's cost (USD) is at most ``usd``."""

    usd: Decimal = Field(..., description="Ceiling in USD (a decimal string such as \"0.05\", or a number)")

    @field_validator("usd", mode="before")
    @classmethod
    def _exact(cls, v: Any) -> Decimal:
        if isinstance(v, bool) or not isinstance(v, str | int | float | Decimal):
            raise ValueError("give the ceiling in USD as a decimal string (\"0.05\") or a number")
        try:
            d = Decimal(str(v).strip()) if not isinstance(v, Decimal) else v  # a float as written: 0.1, not 0.1000...
        except InvalidOperation:
            raise ValueError(f"not a decimal number: {v!r}") from None
        if not d.is_finite():
            raise ValueError(f"the ceiling must be a finite amount, got {v!r}")
        if d < 0:
            raise ValueError(f"the ceiling cannot be negative, got {v!r}")
        return d


class MaxLatencyConfig(_Check):
    """``max_latency``: the run took at most ``seconds`` (wall clock)."""

    seconds: float = Field(..., gt=0, allow_inf_nan=False, description="Ceiling in seconds (positive)")

    @field_validator("seconds")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError("give a finite number of seconds")
        return v


class CitationsConfig(_Check):
    """``citations``: every id the answer cites was shown to the model in that run."""

    require: bool = Field(default=False, description="The answer must cite at least one source")


ModelSlot = NestedSlot
"""The judge's model: ``use`` (a provider component name), optional ``from`` and its parameters."""


class LLMJudgeConfig(_Check):
    """``llm_judge``: ``model`` grades the answer against ``rubric`` with a score in [0, 1]."""

    model: Annotated[ModelSlot, ComponentSlot("provider")] = Field(
        ..., description="The judge's model: {use: <provider>, ...params} (or the provider's name)")
    rubric: str = Field(..., min_length=1, description="What a good answer is: the judge scores the answer by it")
    threshold: float = Field(default=0.5, ge=0.0, le=1.0, allow_inf_nan=False,
                             description="A score at or above it passes")
    include_transcript: bool = Field(default=False,
                                     description="Show the judge the whole transcript (default: the task, the "
                                                 "expected value and the answer only)")
    max_tokens: int | None = Field(default=None, ge=1, le=100_000,
                                   description="Output-token limit of the judge's call (default: the provider's)")

    @field_validator("rubric")
    @classmethod
    def _said(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("the rubric is empty: say what a good answer is")
        return v
